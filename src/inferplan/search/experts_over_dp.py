"""Data-parallel ranks that share a mixture-of-experts model's routed experts without expert parallelism.

vLLM started with ``--data-parallel-size N`` and no ``--enable-expert-parallel`` runs N attention
ranks, each with its own requests and its own TP split of the attention and dense layers, while its
MoE layers form one tensor-parallel group over all TP × DP GPUs: every GPU holds 1 / (TP × DP) of
each routed expert (engines.yaml ``moe_tp_spans_data_parallel``, source ``eng-moe-tp-dp-vllm``:
vLLM's data-parallel deployment guide and ``FusedMoEParallelConfig.make``). Unlike replicas (separate
engines, each a whole copy of the model) the ranks split the experts, so a model whose experts do not
fit at a narrow TP alone can still run its attention that narrow. The memory and speed models price
it already (``memory/expert_split.py``, ``performance/phases.py`` ``gather_scatter_s``); here are the
layouts the search tries, and how a result names one.
"""

from __future__ import annotations

from inferplan.memory.layout import cell_widths

Layout = tuple[int, int, int, bool, int]  # (TP, PP, DP, expert parallel, systems per instance), as space.py's

EXPERTS_OVER_DP = "experts over TP×DP"  # how a table and a result's JSON name the layout


def experts_over_dp_layouts(engine, moe: bool, *, narrowest_tp: int, pipeline: int, budget: int, gpus: int,
                            domain_gpus: int, whole_platform: bool) -> list[Layout]:
    """(TP, 1, DP, False, 1) cells whose DP ranks share the routed experts, on an engine whose MoE
    tensor-parallel group spans the data-parallel ranks one launch states: every width expert
    parallelism tries (``cell_widths`` from 2, the fast-link domain and the platform's ``gpus``
    included, at most ``budget``), each split as TP × DP with TP a power of two up to
    ``narrowest_tp`` (the smallest TP that holds the model alone: a wider TP per rank buys per-user
    speed another rank or replica gives cheaper) and DP at least 2. ``whole_platform``: an instance
    is the platform's every GPU (N of an accelerator). No cell for a dense model, a cell that needs
    pipeline stages, or an engine whose data-parallel ranks are copies."""
    if not moe or not engine.moe_tp_spans_data_parallel or pipeline != 1:
        return []
    out = []
    for width in cell_widths(2, budget, fills=(domain_gpus, gpus)):
        if whole_platform and width != gpus:
            continue
        out += [(tp, 1, width // tp, False, 1) for tp in cell_widths(1, narrowest_tp) if width % tp == 0 and width // tp > 1]
    return out


def experts_over_dp(data_parallel_size: int, expert_parallel: bool) -> bool:
    """Whether an instance's data-parallel ranks share the experts without expert parallelism."""
    return data_parallel_size > 1 and not expert_parallel


def layout_label(tp: int, pp: int, dp: int, expert_parallel: bool, gpus: int) -> str:
    """An instance's layout as a table shows it: "TP2", "TP2 PP2", "DP8 + EP8" (expert parallel over
    all its GPUs) or "TP1 × DP2 (experts over TP×DP)" (ranks that share the experts without it)."""
    if expert_parallel:
        return f"DP{dp} + EP{gpus}"
    text = f"TP{tp}" + (f" PP{pp}" if pp > 1 else "")
    return f"{text} × DP{dp} ({EXPERTS_OVER_DP})" if dp > 1 else text
