"""The most slots an engine that allocates its context per slot (llama-server's ``--parallel``, each
slot ``max_model_len`` of the ``--ctx-size`` cells) can be started with: the largest ``max_num_seqs``
whose whole cache still fits. A search or a benchmark pack that wants many requests in flight on such
an engine states that many slots, so the launch command opens them and the plan allocates for them.
``fit`` and the what-fits matrix give such an engine's concurrency in whole slots (``with_slots``). Where a release
sets a lower running cap itself because a speculative draft runs (SGLang's 48: ``memory/release_running.py``), a
search or a plan states the requests the release runs without the draft (``with_draft_running_stated``), as the
launches of published rack benchmarks state ``--max-running-requests``."""

from __future__ import annotations

from inferplan.catalog.engine_tiers import slot_limit
from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import memory_rule
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.context_cache import context_sized_slots, context_slots
from inferplan.memory.fit import plan_memory, verdict_plan
from inferplan.memory.fit_placement import as_placed
from inferplan.memory.fit_result import MemoryFit
from inferplan.memory.hardware import with_default_engine
from inferplan.memory.ollama_batch import on_ollama_gpu
from inferplan.memory.running_cap import launched_value, setting_flag
from inferplan.memory.state_pool import draft_named, without_drafts

SLOT_LIMIT = 1024  # the most slots fit tries where the release sets no maximum of its own


def release_slot_limit(catalog: Catalog, d: Deployment) -> int | None:
    """The most slots ``d``'s engine release opens (llama.cpp's LLAMA_MAX_SEQ: ``engines.yaml`` max_slots; None:
    no maximum stated for it)."""
    return slot_limit(catalog.engine(d.engine).max_slots, d.engine_version)


def most_slots(d: Deployment, catalog: Catalog, limit: int) -> int | None:
    """The largest slot count up to ``limit`` and the release's own maximum at which ``d`` fits (0: not even one),
    its weights placed as with one slot; None: the engine does not allocate its context per slot, or ``d`` states
    its slots."""
    if d.max_num_seqs is not None or context_slots(catalog, d, catalog.engine(d.engine).id) is None:
        return None
    if (release := release_slot_limit(catalog, d)) is not None:
        limit = min(limit, release)
    one = _plan(d, 1, catalog)
    if one is None or not one.fits or limit < 1:
        return 0
    d = as_placed(d, one)  # more slots at the placement one slot runs (an Ollama tag's: where --fit put it), not their own
    limit = min(limit, _ollama_gpu_slots(d, catalog, limit))
    low, high = 1, limit  # slot counts known to fit / to try
    # the slots whose caches the room left at one slot holds: near the answer (each slot's compute buffer is left
    # out), so it and the next one bracket it in two plans where a bisection over ``limit`` takes ten; any
    # bracket leads the bisection below to the one largest count that fits
    guess = min(int(one.kv_cache_bytes_per_gpu // one.kv_cache_needed_bytes_per_gpu), limit) \
        if one.kv_cache_needed_bytes_per_gpu > 0 else 1
    if guess > 1:
        if _fits(d, guess, catalog):
            low = guess
            if guess < high and not _fits(d, guess + 1, catalog):
                high = guess
        else:
            high = guess - 1
    while low < high:
        mid = (low + high + 1) // 2
        if _fits(d, mid, catalog):
            low = mid
        else:
            high = mid - 1
    return low


def _ollama_gpu_slots(d: Deployment, catalog: Catalog, limit: int) -> int:
    """The most slots (up to ``limit``) at which Ollama still loads ``d``'s tag on the GPUs it loads it on at one
    slot: its prediction grows with the slots it starts, so past them it spreads the tag over all the GPUs given, a
    layout other than the one-slot plan's (``on_ollama_gpu``); ``limit`` where it chooses no GPUs."""
    d = with_default_engine(d, catalog)
    one = on_ollama_gpu(d.model_copy(update={"max_num_seqs": 1}), catalog)
    if not one.gpus_chosen_by:
        return limit
    low, high = 1, limit
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if on_ollama_gpu(d.model_copy(update={"max_num_seqs": mid}), catalog).gpus == one.gpus \
            else (low, mid - 1)
    return low


def _plan(d: Deployment, slots: int, catalog: Catalog) -> MemoryFit | None:
    """The verdict's plan of ``d`` started with ``slots`` slots (None: refused)."""
    try:
        return verdict_plan(d.model_copy(update={"max_num_seqs": slots}), catalog).result
    except InferplanError:
        return None


def _fits(d: Deployment, slots: int, catalog: Catalog) -> bool:
    return (plan := _plan(d, slots, catalog)) is not None and plan.fits


def with_most_slots(d: Deployment, catalog: Catalog, limit: int) -> Deployment:
    """``d`` started with the most slots that fit (up to ``limit``) where the engine allocates its
    context per slot and ``d`` states none; else ``d`` as it is."""
    slots = most_slots(d, catalog, limit)
    return d.model_copy(update={"max_num_seqs": slots}) if slots else d


def with_slots(d: Deployment, result: MemoryFit, catalog: Catalog) -> MemoryFit:
    """``result`` of an engine started with a context per slot: the slots ``d`` starts it with are what it
    holds at once, whatever memory is left over, so they are its whole ``max_concurrency`` (× data-parallel
    copies: ``total_max_concurrency``; the slots its context is sized for where more share one unified cache);
    ``most_slots`` is the most whose cache fits (None where ``d`` fits and states its slots). Where ``d`` does not
    fit, what it holds at once is those most slots, whole. Any other engine's ``result`` as it is."""
    started = context_slots(catalog, d, result.engine)
    if started is None:
        return result
    if not result.fits:
        fitting = most_slots(d.model_copy(update={"max_num_seqs": None}), catalog, SLOT_LIMIT) or 0
        return result.model_copy(update={"started_slots": started, "most_slots": fitting,
                                         "max_concurrency": float(fitting),
                                         "total_max_concurrency": float(fitting * result.parallel.data_parallel_size),
                                         **_slot_tokens(d, result, catalog, fitting)})
    held = context_sized_slots(catalog, d, result.engine)  # fewer where the slots share one unified cache
    most = most_slots(d, catalog, SLOT_LIMIT) if d.max_num_seqs is None else None
    fitting = most if most is not None else most_slots(d.model_copy(update={"max_num_seqs": None}), catalog, SLOT_LIMIT)
    return result.model_copy(update={"started_slots": started, "most_slots": most, "max_concurrency": float(held),
                                     "total_max_concurrency": float(held * result.parallel.data_parallel_size),
                                     **_slot_tokens(d, result, catalog, fitting or 0)})


def _slot_tokens(d: Deployment, result: MemoryFit, catalog: Catalog, fitting: int) -> dict:
    """``kv_cache_tokens`` of an engine started with a context per slot: a user reads the tokens next to fit's
    "N fit: --max-num-seqs N", so they are those N slots of ``max_model_len`` tokens, the most whose cache fits,
    whether or not ``d`` states its slots. The plan's figure is the memory left over a token's bytes: it gives each
    sequence min(L, window) window cells, as a paged engine holds them, and counts a recurrent state's slot memory
    as tokens, which llama.cpp does neither of. A model with sliding-window layers gets a note of what its window
    layers hold (``ContextCache.window_cache``: llama.cpp's n_swa × the slots in a stream + n_ubatch cells, or
    n_ctx before the iSWA cache)."""
    tokens = fitting * result.max_model_len
    rule = memory_rule(catalog, result.engine, d.engine_version).context_cache
    if result.kv_window_tokens is None or rule is None or rule.window_cache is None:
        return {"kv_cache_tokens": tokens}
    held = ("the context's cells, as the other layers" if rule.window_cache.full_size else
            "the window × the slots of a stream + the micro-batch in each stream, not a window per sequence")
    note = (f"KV cache {tokens:,} tokens per instance: the {fitting:,} slot{'s' if fitting != 1 else ''} of "
            f"{result.max_model_len:,} tokens whose cache fits (its window layers hold {held})")
    return {"kv_cache_tokens": tokens, "assumptions": (*result.assumptions, note)}


def sequences_held(d: Deployment, catalog: Catalog) -> float:
    """The ``max_model_len`` sequences ``d`` holds at once as the what-fits matrix counts them: on an engine
    with a context per slot the most slots that fit (whole), else the KV cache's ``total_max_concurrency``."""
    result = plan_memory(d, catalog).result
    most = most_slots(d, catalog, SLOT_LIMIT) if result.fits else None
    return float(most) if most is not None else result.total_max_concurrency


def with_draft_running_stated(d: Deployment, catalog: Catalog) -> Deployment:
    """``d`` with ``max_num_seqs`` stated at the requests its release runs at once without a draft, where ``d`` states
    none, drafts, and its release sets a lower cap itself because of the draft (``EngineSettings.running_note``);
    else ``d``. The value is the release's own default on the pool ``d`` sizes with its draft (SGLang's from the
    pool: a stated value above it is clamped there), else the one it runs without the draft. A hybrid model's
    state pool is left as the release sizes it: its draft state is reserved for the requests it runs
    (``memory/state_pool.py``), so a larger stated cap would move the memory. The launch then states that cap
    (``running_stated_note``)."""
    if d.max_num_seqs is not None or not draft_named(d):
        return d
    try:
        drafted = verdict_plan(d, catalog)
    except InferplanError as e:  # the release's own cap is 0 a DP attention rank: it would not start, a stated one does
        if e.field != "data_parallel_size":
            return d
        drafted = None
    if drafted is not None and (drafted.settings.running_note is None or drafted.result.state_running_cap is not None):
        return d
    try:
        plain = verdict_plan(without_drafts(d), catalog)
    except InferplanError:
        return d
    pool = plain.settings.running_from_pool
    more = pool.pool_requests(drafted.result.kv_cache_tokens, drafted.result.max_model_len) \
        if pool is not None and drafted is not None else plain.settings.max_num_seqs
    return d.model_copy(update={"max_num_seqs": more}) if drafted is None or more > drafted.settings.max_num_seqs else d


def running_stated_note(catalog: Catalog, d: Deployment) -> str:
    """What a launch of ``d`` started by ``with_draft_running_stated`` states, and why."""
    engine = catalog.engine(d.engine).id
    launched = launched_value(catalog, d, engine, "max_num_seqs", d.max_num_seqs or 0)
    return (f"launched with {setting_flag(catalog, d, engine, 'max_num_seqs')} {launched.value:,}, the requests the "
            f"release runs at once without a draft: with a draft and none stated it sets a lower cap itself")
