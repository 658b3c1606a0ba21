"""Each pick as a launch command and as a Users + ROI scenario."""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.deploy.command import Speculative, launch_command
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.search.evaluate import ACCEPTANCE_RATE
from inferplan.search.load import ResolvedLoad
from inferplan.search.space import Cell


def launch_text(catalog: Catalog, d: Deployment, cell: Cell, *,
                prefill: tuple[Deployment, Cell] | None = None) -> str:
    """The command that starts one instance (``deploy.launch_command``); with separate pools
    (``prefill``: the prefill instances' own deployment and cell), the prefill and the decode
    instance's, one per line, each in its own layout. A setting the engine's flags cannot express
    is said in words instead of a command."""
    def drafts(c: Cell) -> Speculative | None:
        return Speculative(method="mtp", tokens=c.speculative_tokens) if c.speculative_tokens else None

    roles = [("prefill", *prefill), ("decode", d, cell)] if prefill is not None else [("both", d, cell)]
    try:
        return "\n".join(launch_command(dep, catalog, role=role, speculative=drafts(c)).script for role, dep, c in roles)
    except InferplanError as exc:
        return f"no launch command: {exc.describe()}"


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
