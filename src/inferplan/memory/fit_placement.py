"""Where an Ollama tag's build keeps its weights when the deployment states no placement: the split llama-server's
``--fit`` chooses (ollama.yaml ``placement``).

Ollama starts llama-server with no ``--n-gpu-layers``, so ``--fit`` (on by default) keeps everything on the GPUs
where that leaves its margin free on each, else moves weights to host RAM in its order (the rule's ``steps``): for
a mixture of experts the routed experts of the fewest layers, where its other weights fit with every expert in
host RAM; else the fewest whole layers, every expert of a mixture of experts with them. Each step is probed as the
stated ``--n-cpu-moe`` / ``--n-gpu-layers`` it amounts to is planned, marked as chosen
(``Deployment.placement_chosen_by``), and the first that fits is planned. The plan of a deployment so marked keeps
the margin free of everything it counts (``kept_free_bytes``), the KV room too: ``--fit`` runs again at whatever
``-np`` / ``-c`` Ollama starts it with and keeps the margin then as well, so slots or context counted into the
margin would move weights to host RAM rather than fit beside the planned split. Where
none fits (host RAM short, or the GPU short with every layer in host RAM) every layer stays on the GPU and the
answer offers what fits instead. A stated ``--n-gpu-layers`` or ``--n-cpu-moe`` wins.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

from inferplan.catalog.loader import Catalog
from inferplan.catalog.ollama import OLLAMA
from inferplan.catalog.ollama_schema import FitPlacement
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit_result import MemoryFit
from inferplan.memory.hardware import resolve_hardware, runs_named_build
from inferplan.memory.host_budget import unstated_host_note
from inferplan.memory.monotone import monotone_search
from inferplan.memory.offload import OffloadSplit
from inferplan.memory.resolve import resolve_model
from inferplan.units import GiB

# placements already found, by (catalogue, deployment): a plan is asked for many times over
_PLACED: OrderedDict[tuple[int, Deployment, frozenset[str]], tuple[Catalog, Deployment]] = OrderedDict()
PLACED_KEPT = 1024


def placement_rule(catalog: Catalog, d: Deployment) -> FitPlacement | None:
    """The rule that places ``d``'s weights (``d`` after ``with_default_engine``): Ollama's runner's, where ``d``
    runs an Ollama tag's build on GPUs with their own memory and states no placement; else None."""
    if d.n_gpu_layers is not None or d.n_cpu_moe is not None or d.cpu_offload_gb or d.placement_chosen_by:
        return None
    if runs_named_build(catalog, d) is None or resolve_hardware(catalog, d).accel.unified_memory:
        return None
    return catalog.ollama_runners.records[OLLAMA].placement


def fit_placement(d: Deployment, catalog: Catalog, fits: Callable[[Deployment], bool]) -> Deployment:
    """``d`` placed as its rule places it (``placement_rule``; ``fits``: whether a deployment fits), or ``d`` as it
    is where no rule applies or nothing the rule tries fits."""
    rule = placement_rule(catalog, d)
    if rule is None:
        return d
    key = (id(catalog), d, frozenset(d.model_fields_set))
    if (kept := _PLACED.get(key)) is not None and kept[0] is catalog:
        return kept[1]
    placed = _placed(d, catalog, rule, fits)
    _PLACED[key] = (catalog, placed)
    if len(_PLACED) > PLACED_KEPT:
        _PLACED.popitem(last=False)
    return placed


def _placed(d: Deployment, catalog: Catalog, rule: FitPlacement, fits: Callable[[Deployment], bool]) -> Deployment:
    spec = resolve_model(catalog, d.model)
    arch = None if spec.architecture_is_proxy else spec.architecture
    takes = catalog.engine(d.engine).offload_settings
    if arch is None or "n_gpu_layers" not in takes:
        return d
    layers = arch.num_layers

    def probe(changes: dict[str, int | None]) -> bool | None:
        try:  # planned as chosen: with the margin kept free (kept_free_bytes)
            return fits(d.placed(rule.chosen_by, changes)) or None
        except InferplanError:
            return None

    if probe({"n_gpu_layers": layers + 1}):  # every layer and the output layer: -ngl above the layer count
        return d.placed(rule.chosen_by)
    moe = arch.moe is not None
    for step in rule.steps:
        if step == "expert_layers" and moe and "n_cpu_moe" in takes:
            hit = monotone_search(1, layers, lambda n: probe({"n_cpu_moe": n}), smallest=True)
            if hit is not None:
                return d.placed(rule.chosen_by, {"n_cpu_moe": hit[0]})
        elif step == "gpu_layers":
            experts = {"n_cpu_moe": layers} if moe and "n_cpu_moe" in takes else {}
            hit = monotone_search(0, layers, lambda n: probe({**experts, "n_gpu_layers": n}), smallest=False)
            if hit is not None:
                return d.placed(rule.chosen_by, {**experts, "n_gpu_layers": hit[0]})
    return d


def kept_free_bytes(catalog: Catalog, d: Deployment) -> float:
    """The memory each GPU keeps free for the setting that chose ``d``'s placement: Ollama's runner's ``--fit``
    margin (ollama.yaml ``placement.margin_bytes``) where it chose it, else 0."""
    rule = catalog.ollama_runners.records[OLLAMA].placement
    return rule.margin_bytes.value if rule is not None and d.placement_chosen_by == rule.chosen_by else 0.0


def with_placement(result: MemoryFit, d: Deployment, offload: OffloadSplit | None, catalog: Catalog) -> MemoryFit:
    """``result`` (the fit of ``d``, ``offload`` its weights in host RAM) with the placement it runs where the engine
    chose it rather than a person stating it: the -ngl / --n-cpu-moe, what chose them and a line saying where it put
    the weights (a stated placement: ``result`` as it is; the deployment states it)."""
    if d.placement_chosen_by is None:
        return result
    runner = catalog.ollama_runners.records[OLLAMA]
    margin = runner.placement.margin_bytes.value / GiB if runner.placement else 0.0
    note = f"{runner.name} ({d.placement_chosen_by}) " + (
        f"places the weights as {offload.note}" if offload is not None else
        f"keeps every layer on the GPU, {margin:g} GiB of each GPU left free")
    if d.n_cpu_moe:  # fit.cpp moves the experts of the last layers, --n-cpu-moe those of the first: the same bytes
        note += f" (--fit keeps the experts of the last {d.n_cpu_moe} layers there instead, as many bytes)"
    if result.host_memory_origin == "unstated":
        note += f"; {unstated_host_note(result.host_memory_bytes_used, result.host_memory_reserved_bytes)}"
    return result.model_copy(update={"n_gpu_layers": d.n_gpu_layers, "n_cpu_moe": d.n_cpu_moe,
                                     "placement_chosen_by": d.placement_chosen_by, "placement_note": note})


def as_placed(d: Deployment, result: MemoryFit) -> Deployment:
    """``d`` with the placement its fit ``result`` chose written in and marked chosen, so a plan of a variant of it
    (more slots) keeps that placement rather than choosing its own; ``d`` as it is where nothing was chosen."""
    if result.placement_chosen_by is None or d.placement_chosen_by is not None:
        return d
    return d.placed(result.placement_chosen_by, {"n_gpu_layers": result.n_gpu_layers, "n_cpu_moe": result.n_cpu_moe})
