"""Each pick as a launch command and as a Users + ROI scenario."""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.deploy.command import Speculative, launch_command
from inferplan.deploy.pools import pools_launch
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.search.evaluate import ACCEPTANCE_RATE
from inferplan.search.load import ResolvedLoad
from inferplan.search.space import Cell


@dataclass(frozen=True)
class LaunchText:
    """A pick's launch script and the notes that go with it (the router, the copies, a placeholder file)."""

    text: str
    notes: tuple[str, ...] = ()


def launch_text(catalog: Catalog, d: Deployment, cell: Cell, *, replicas: int = 1,
                prefill: tuple[Deployment, Cell, int] | None = None, decode_instances: int = 1) -> LaunchText:
    """The command that starts one of the ``replicas`` instances (``deploy.launch_command``); with separate
    pools (``prefill``: the prefill instances' own deployment, cell and count), every prefill and decode
    worker pinned to its own GPUs and port, and the router (``deploy.pools_launch``). A setting the
    engine's flags cannot express is said in words instead of a command."""
    def drafts(c: Cell) -> Speculative | None:
        return Speculative(method="mtp", tokens=c.speculative_tokens) if c.speculative_tokens else None

    try:
        if prefill is not None:
            pre, pre_cell, pre_instances = prefill
            system = cell.platform.system
            pools = pools_launch(catalog, pre, d, prefill_instances=pre_instances, decode_instances=decode_instances,
                                 prefill_speculative=drafts(pre_cell), decode_speculative=drafts(cell),
                                 host_gpus=system.accelerator_count if system is not None else None)
            return LaunchText(pools.script, pools.notes)
        copies = d.model_copy(update={"gpus": cell.gpus * replicas}) if replicas > 1 and d.system is None else d
        command = launch_command(copies, catalog, speculative=drafts(cell))
        return LaunchText(command.script, command.notes)
    except InferplanError as exc:
        return LaunchText(f"no launch command: {exc.describe()}")


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
