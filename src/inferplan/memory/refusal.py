"""A deployment that does not fit, refused with the fit's reason: what perf and the launch command
both say before they plan anything on a memory plan that cannot start."""

from __future__ import annotations

import math

from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit_result import MemoryFit
from inferplan.memory.layout import describe_split
from inferplan.units import GiB

OTHER_CHANGES = "a shorter context, smaller weights, a larger memory fraction or weights in host RAM, where the memory fit finds one that holds it"


def refuse_unfit(fit: MemoryFit, d: Deployment) -> None:
    """Raise when ``fit`` (``d``'s memory fit) does not fit, naming what is short: the host RAM the
    offloaded weights and KV cache need, else the GPU memory, with the smallest instance that holds the
    model and the field to change (the GPU count; the system where it gave the GPUs; the accelerator
    where no GPU count was given and none of it holds the model)."""
    if fit.fits:
        return
    budget = fit.host_memory_budget_bytes
    if budget is not None and fit.host_memory_bytes_used > budget and fit.shortfall_bytes <= 0:
        if fit.host_memory_origin == "unified":  # one pool: moving weights to the CPU side frees nothing
            raise InvalidScenarioError(
                f"{fit.model} does not fit: {fit.accelerator}'s unified memory: {fit.host_memory_bytes_used / GiB:.2f} GiB "
                f"used of {budget / GiB:.2f} GiB (the GPU side and what is offloaded share it)", field="gpu",
                allowed="an accelerator with more memory, smaller weights or a shorter context")
        raise InvalidScenarioError(
            f"{fit.model} does not fit: host RAM: {fit.host_memory_bytes_used / GiB:.2f} GiB used of "
            f"{budget / GiB:.2f} GiB{' (from the system card)' if fit.host_memory_origin == 'system' else ''} after what the OS "
            "and the engine process keep (the weights and KV cache offloaded to host RAM)", field="host_memory_gb",
            allowed=f"at least {math.ceil(fit.host_memory_bytes_used / GiB)} GiB of host RAM, or fewer weights offloaded")
    smallest = fit.fewest_gpus_fit
    needs = "" if smallest is None else (
        f"; one instance that holds it needs {smallest.gpus} GPUs, "
        f"{describe_split(smallest.tensor_parallel_size, smallest.pipeline_parallel_size)}")
    system_alone = d.system is not None and d.gpus is None  # the GPUs are the system's: name what was given
    field = "system" if system_alone else "gpus" if d.gpus is not None or smallest is not None else "gpu"
    more = "" if smallest is None else f"{'a system of ' if system_alone else ''}at least {smallest.gpus} GPUs; else "
    raise InvalidScenarioError(
        f"{fit.model} does not fit on {fit.parallel.gpus}× {fit.accelerator}"
        f"{'' if d.gpus is not None or d.system is not None else ' (no GPU count given: one)'} at max_model_len "
        f"{fit.max_model_len:,} (short by {fit.shortfall_bytes / GiB:.1f} GiB per GPU{needs})",
        field=field, allowed=more + OTHER_CHANGES)
