"""KTransformers' CPU-expert methods as a smaller host copy: where a KTransformers deployment's host RAM
is short, the ``--kt-method`` paths of its release (catalog/data/kt_cpu_paths.yaml ``expert_formats``)
whose CPU experts take less host RAM — AMXINT4 / AMXINT8 beside the deployment's weight format, LLAMAFILE
with the model's GGUF formats for the engine (``memory.precision.model_formats``), the most bits first —
each at the deployment's context when it fits there, else at the longest context it holds
(``memory.suggest.longest_context``); each checked by a fit of the changed deployment."""

from __future__ import annotations

from typing import Callable

from inferplan.catalog.loader import Catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import MemoryPlan, fits_changed, plan_memory
from inferplan.memory.fit_result import FitSuggestion
from inferplan.memory.kt_host import DEFAULT_RELEASE, kt_method
from inferplan.memory.precision import model_formats
from inferplan.units import GiB


def smaller_kt_methods(d: Deployment, mp: MemoryPlan, catalog: Catalog,
                       longest: Callable[[Deployment, Catalog, int], int]) -> tuple[FitSuggestion, ...]:
    """For each other ``--kt-method`` of the release whose host copy is smaller than the plan's, the change
    that fits (none: the host RAM is not short, or the engine runs no CPU experts)."""
    r = mp.result
    if not r.host_shortfall_bytes or mp.offload is None or mp.offload.kt_host is None:
        return ()
    release = d.kt_release or DEFAULT_RELEASE
    now = kt_method(catalog, d.kt_release, d.kt_method, mp.quantization.id)
    formats = model_formats(catalog, mp.spec, d.engine)
    found = []
    for fmt in (f for p in catalog.kt_cpu_paths if p.release == release for f in p.expert_formats):
        if fmt.kt_method == now:
            continue
        quants = [mp.quantization.id] if mp.quantization.id in fmt.gpu_formats else sorted(
            (q for q in fmt.gpu_formats if q in formats and q in catalog.quantizations),
            key=lambda q: -catalog.quantization(q).bits_per_weight.value)
        s = _first_fitting(d, fmt.kt_method, mp.quantization.id, quants, r.host_memory_bytes_used, r.max_model_len, catalog, longest)
        if s is not None:
            found.append(s)
    return tuple(found)


def _first_fitting(d: Deployment, method: str, quant: str, quants: list[str], host_bytes: float, context: int, catalog: Catalog,
                   longest: Callable[[Deployment, Catalog, int], int]) -> FitSuggestion | None:
    """The first of ``quants`` (most bits first) at which ``method`` holds a smaller host copy and fits, at
    ``context`` or the longest shorter context it holds."""
    for q in quants:
        changes = {"kt_method": method, **({"quantization": q} if q != quant else {})}
        try:
            there = plan_memory(d.model_copy(update=changes), catalog).result
        except InferplanError:  # a method this weight format or model does not run
            continue
        if there.host_memory_bytes_used >= host_bytes:
            continue
        what = f"CPU experts in {method}" + (f" beside {q} weights" if "quantization" in changes else "")
        if fits_changed(d, changes, catalog) is not None:
            return FitSuggestion(kind="kt_method", changes=changes,
                                 summary=f"a smaller host copy: {what}, {there.host_memory_bytes_used / GiB:.1f} GiB of host RAM")
        tokens = longest(d.model_copy(update=changes), catalog, context)
        if tokens:
            return FitSuggestion(kind="kt_method", changes={**changes, "max_model_len": tokens},
                                 summary=f"a smaller host copy and a shorter context: {what} at {tokens:,} tokens")
    return None
