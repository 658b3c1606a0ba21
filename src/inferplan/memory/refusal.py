"""A deployment that does not fit, refused with the fit's reason: what perf and the launch command
both say before they plan anything on a memory plan that cannot start."""

from __future__ import annotations

from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit_result import MemoryFit
from inferplan.memory.layout import describe_split
from inferplan.units import GiB


def refuse_unfit(fit: MemoryFit, d: Deployment) -> None:
    """Raise when ``fit`` (``d``'s memory fit) does not fit: the shortfall per GPU and the smallest
    instance that holds the model, naming the GPU count (or the system, where it gave the GPUs)."""
    if fit.fits:
        return
    smallest = fit.smallest_fit
    needs = "" if smallest is None else (
        f"; one instance that holds it needs {smallest.gpus} GPUs, "
        f"{describe_split(smallest.tensor_parallel_size, smallest.pipeline_parallel_size)}")
    system_alone = d.system is not None and d.gpus is None  # the GPUs are the system's: name what was given
    raise InvalidScenarioError(
        f"{fit.model} does not fit on {fit.parallel.gpus}× {fit.accelerator} at max_model_len "
        f"{fit.max_model_len} (short by {fit.shortfall_bytes / GiB:.1f} GiB per GPU{needs})",
        field="system" if system_alone else "gpus",
        allowed=("" if smallest is None else f"{'a system of ' if system_alone else ''}at least "
                 f"{smallest.gpus} GPUs, or ") + "a change a memory fit of the deployment suggests",
    )
