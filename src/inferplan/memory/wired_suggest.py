"""A Mac's raised GPU memory limit as an answer to a fit that does not hold.

macOS lets the Apple GPU wire only its recommended working set of unified memory (two thirds up to
32 GiB, three quarters above: ``metal_working_set.yaml``, the default the fit's usable memory already
holds); ``sudo sysctl iogpu.wired_limit_mb=N`` raises it
(MLX's ``set_wired_limit`` docs). The limit offered leaves macOS the reserve ``calibration.yaml``
assumes (``macos-wired-os-reserve-bytes``, ``macos-wired-os-reserve-small-bytes`` below ``macos-wired-small-mac-bytes``:
oMLX's reserves) and is offered, checked by a fit, only where it gives the GPU more than the default does.
"""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.catalog.schema import Accelerator
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fits_changed
from inferplan.memory.fit_plan import MemoryPlan
from inferplan.memory.fit_result import FitSuggestion
from inferplan.memory.context_steps import longest_steps
from inferplan.memory.offload_suggest import context_floor
from inferplan.units import GiB, MiB

def raised_wired_limit_mb(catalog: Catalog, accel: Accelerator) -> int | None:
    """The ``iogpu.wired_limit_mb`` that leaves macOS its assumed reserve on ``accel`` (None: not an Apple GPU)."""
    if accel.software.value != "metal":
        return None
    memory = accel.memory_bytes.capacity_gib * GiB  # a Mac's "24 GB" is 24 GiB of unified memory
    small = memory < catalog.constant("macos-wired-small-mac-bytes")
    reserve = catalog.constant("macos-wired-os-reserve-small-bytes" if small else "macos-wired-os-reserve-bytes")
    return int((memory - reserve) // MiB) if memory > reserve else None


def raised_wired_limit(d: Deployment, mp: MemoryPlan, catalog: Catalog) -> FitSuggestion | None:
    """Where ``d`` on a Mac does not fit under macOS's default GPU limit: the raised limit that holds it at its
    context, else with the longest context it holds under that limit (None: no gain, or none fits)."""
    limit = None if d.wired_limit_mb is not None else raised_wired_limit_mb(catalog, mp.accelerator)
    if limit is None or limit * MiB <= mp.result.gpu_memory_bytes:  # the default working set, before any fraction
        return None
    raised = {"wired_limit_mb": limit}
    reserve_gib = mp.accelerator.memory_bytes.capacity_gib - limit * MiB / GiB
    why = (f"sudo sysctl iogpu.wired_limit_mb={limit} lets the GPU use {limit * MiB / GiB:.1f} GiB "
           f"and leaves macOS {reserve_gib:.1f} GiB")
    if fits_changed(d, raised, catalog):
        return FitSuggestion(kind="wired_limit", changes=raised, summary=f"a raised macOS GPU limit: {why}")
    found = longest_steps(lambda tokens: fits_changed(d, {**raised, "max_model_len": tokens}, catalog),
                          mp.result.max_model_len, context_floor(catalog))
    if not found:
        return None
    return FitSuggestion(kind="wired_limit", changes={**raised, "max_model_len": found[0]},
                         summary=f"a raised macOS GPU limit and a shorter context: {why}; holds {found[0]:,} tokens")
