"""The most slots an engine that allocates its context per slot (llama-server's ``--parallel``, each
slot ``max_model_len`` of the ``--ctx-size`` cells) can be started with: the largest ``max_num_seqs``
whose whole cache still fits. A search or a benchmark pack that wants many requests in flight on such
an engine states that many slots, so the launch command opens them and the plan allocates for them."""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.context_cache import context_slots
from inferplan.memory.fit import plan_memory


def most_slots(d: Deployment, catalog: Catalog, limit: int) -> int | None:
    """The largest slot count up to ``limit`` at which ``d`` fits (0: not even one); None: the engine
    does not allocate its context per slot, or ``d`` states its slots."""
    if d.max_num_seqs is not None or context_slots(catalog, d, catalog.engine(d.engine).id) is None:
        return None
    low, high = 0, limit  # slot counts known to fit / to try
    while low < high:
        mid = (low + high + 1) // 2
        if _fits(d, mid, catalog):
            low = mid
        else:
            high = mid - 1
    return low


def _fits(d: Deployment, slots: int, catalog: Catalog) -> bool:
    try:
        return plan_memory(d.model_copy(update={"max_num_seqs": slots}), catalog).result.fits
    except InferplanError:
        return False


def with_most_slots(d: Deployment, catalog: Catalog, limit: int) -> Deployment:
    """``d`` started with the most slots that fit (up to ``limit``) where the engine allocates its
    context per slot and ``d`` states none; else ``d`` as it is."""
    slots = most_slots(d, catalog, limit)
    return d.model_copy(update={"max_num_seqs": slots}) if slots else d
