"""Each pick as a launch command and as a Users + ROI scenario."""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.memory.deployment import Deployment
from inferplan.search.evaluate import ACCEPTANCE_RATE
from inferplan.search.load import ResolvedLoad
from inferplan.search.space import Cell


def launch_text(catalog: Catalog, d: Deployment, cell: Cell, *, disaggregated: bool) -> str:
    """STAND-IN until the deploy package is merged."""
    parts = [f"{cell.engine} serve {cell.model} --tensor-parallel-size {cell.tensor_parallel_size}"]
    return " ".join(parts)


def scenario_dict(cell: Cell, rl: ResolvedLoad) -> dict:
    """A scenario (scenario.py) the Users + ROI simulator loads: this model, format, engine, platform
    and replica cell, at the search's users and workload preset."""
    p = cell.platform
    platform = {"system": p.system.id} if p.system else {"gpu": p.accelerator.id, "gpus": p.gpus}
    s = {
        "model": cell.model, "quantization": cell.quantization, "engine": cell.engine,
        "kv_cache_dtype": cell.kv_cache_dtype, "platform": platform,
        "cell": {"tensor_parallel_size": cell.tensor_parallel_size, "pipeline_parallel_size": cell.pipeline_parallel_size,
                 "data_parallel_size": cell.data_parallel_size, "enable_expert_parallel": cell.expert_parallel},
    }
    if cell.speculative_tokens:
        s["speculative"] = {"tokens": cell.speculative_tokens, "acceptance_rate": ACCEPTANCE_RATE}
    if rl.users is not None:
        s["target_users"] = rl.users
        s["workload"] = {"preset": rl.workload.preset}
    else:
        s["workload"] = {"input_tokens_per_request": rl.input_len, "output_tokens_per_request": rl.output_len}
    return s
