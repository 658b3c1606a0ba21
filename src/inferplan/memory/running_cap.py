"""The sequences an engine runs at once per instance, and the setting that caps them.

An engine's scheduler admits at most so many sequences into a step; requests beyond them wait in its
queue and hold no KV cache until one finishes. The cap is ``max_num_seqs`` as the engine runs it
(``memory/settings.py``: vLLM's --max-num-seqs default by GPU and release, SGLang's
--max-running-requests, TensorRT-LLM's --max_batch_size for each pipeline micro-batch, MLX's
--decode-concurrency); llama-server's --parallel slots where the engine allocates a context per slot
(Ollama's OLLAMA_NUM_PARALLEL for a tag's build); and, lower, the sequences a hybrid model's state
pool holds (``memory/state_pool.py``). ``fit`` answers the largest context at the running sequences,
``performance`` batches no more than them. Flag names are data (``engine_flags.yaml``, ``ollama.yaml``).
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.flag_scope import flag_at, per_rank_value, ranks_in_value, stated_release
from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import Catalog
from inferplan.catalog.ollama import OLLAMA
from inferplan.inputs.deployment import Deployment
from inferplan.memory.budget_settings import EngineSettings
from inferplan.memory.hardware import runs_named_build


@dataclass(frozen=True)
class RunningCap:
    """At most ``sequences`` run at once per instance; ``setting`` (a Deployment field) sets the cap,
    ``flag`` is how the engine's launch takes it, ``value`` the setting's value as the engine runs it (the
    state slots of a hybrid model's pool)."""

    sequences: int
    setting: str
    flag: str
    value: int
    micro_batches: int = 1  # the pipeline micro-batches the engine divides ``value`` over (SGLang), each its share

    @property
    def per_micro_batch(self) -> int:
        return max(self.value // self.micro_batches, 1)


def running_sequences(settings: EngineSettings, pipeline_parallel_size: int, slots: int | None) -> int:
    """The sequences the engine itself runs at once per instance: its context slots where it is started with a
    context per slot (``slots``), else its ``max_num_seqs``, for each pipeline micro-batch where the engine holds
    each to its limits, or its ``pipeline_parallel_size`` micro-batches' even shares of it where the engine divides
    it over them (SGLang: max(max_num_seqs // pp, 1) each, all of them admitted against the free rows of one request
    table of at least max_num_seqs rows, so never more than max_num_seqs at once)."""
    if slots:
        return slots
    if settings.seqs_divided_over_micro_batches:
        cap = settings.max_num_seqs
        return min(pipeline_parallel_size * max(cap // pipeline_parallel_size, 1), cap)
    return settings.max_num_seqs * (pipeline_parallel_size if settings.limits_per_micro_batch else 1)


def running_cap(catalog: Catalog, d: Deployment, engine: str, sequences: int, value: int,
                state_cap: int | None, state_slots: int | None, micro_batches: int = 1) -> RunningCap:
    """The cap per instance: the engine's own ``sequences`` (``running_sequences``, from ``value``: max_num_seqs or
    the slots as it runs them, divided over ``micro_batches`` pipeline micro-batches where the engine divides it),
    or a hybrid model's state pool of ``state_slots`` where it runs fewer (``state_cap``; where they are equal and
    no max_num_seqs is stated, the release took its default from the slots: SGLang's), with the setting behind it."""
    if state_cap is not None and (state_cap < sequences or (state_cap == sequences and not d.max_num_seqs)):
        return RunningCap(state_cap, "max_mamba_cache_size", setting_flag(catalog, d, engine, "max_mamba_cache_size"),
                          state_slots or 0)
    return RunningCap(sequences, "max_num_seqs", setting_flag(catalog, d, engine, "max_num_seqs"), value, micro_batches)


def setting_flag(catalog: Catalog, d: Deployment, engine: str, setting: str) -> str:
    """How the launch of ``d`` takes ``setting``: the Ollama server's variable for a tag's build, else the engine's
    flag (engine_flags.yaml) where its stated release has it, else the setting's own name."""
    if runs_named_build(catalog, d) is not None:
        runner = catalog.ollama_runners.records.get(OLLAMA)
        if runner is not None and runner.launch is not None and setting in runner.launch.env:
            return runner.launch.env[setting]
    flags = flags_for(catalog, engine)
    rule = flags.settings.get(setting) if flags is not None else None
    return rule.flags[0] if rule is not None and flag_at(rule, stated_release(d)) else setting


@dataclass(frozen=True)
class LaunchedCap:
    """The cap's setting as the launch of a deployment writes it: ``value`` for its flag, the total over ``ranks``
    data-parallel ranks where the flag is the instance's (SGLang's --max-running-requests under DP attention),
    else the per-rank value with ``ranks`` 1."""

    value: int
    ranks: int


def launched_cap(catalog: Catalog, d: Deployment, engine: str, cap: RunningCap) -> LaunchedCap:
    """``cap``'s value as ``deploy`` writes its flag for ``d`` (``catalog.flag_scope.per_rank_value``); an Ollama
    tag's server variable, or a setting with no flag record, as it is."""
    return launched_value(catalog, d, engine, cap.setting, cap.value)


def launched_value(catalog: Catalog, d: Deployment, engine: str, setting: str, value: int) -> LaunchedCap:
    """A per-rank ``value`` of ``setting`` as ``deploy`` writes its flag for ``d`` (``launched_cap``)."""
    flags = None if runs_named_build(catalog, d) is not None else flags_for(catalog, engine)
    rule = flags.settings.get(setting) if flags is not None else None
    if rule is None:
        return LaunchedCap(value, 1)
    return LaunchedCap(per_rank_value(d, flags, rule, value), ranks_in_value(d, flags, rule))


def max_num_seqs_at_most(catalog: Catalog, d: Deployment, engine: str, per_instance: int) -> str:
    """"--max-num-seqs at most N": the engine's flag for the running cap and ``per_instance`` as its launch writes it."""
    launched = launched_value(catalog, d, engine, "max_num_seqs", per_instance)
    return f"{setting_flag(catalog, d, engine, 'max_num_seqs')} at most {launched.value:,}"


@dataclass(frozen=True)
class ConcurrencyAnswer:
    """The largest context at a stated concurrency, the sequences above the running cap that queue, and a note."""

    largest_tokens: int | None
    queued: int
    note: str | None


def concurrency_answer(cap: RunningCap, launched: LaunchedCap, concurrency: int | None, instances: int,
                       largest: int | None, block_tokens: int, slot_cells: int | None,
                       max_len: int, opens: int | None = None) -> ConcurrencyAnswer:
    """The answer to "how long can contexts be at ``concurrency`` sequences" over ``instances`` instances: each
    running sequence's share (``largest``, in whole ``block_tokens`` blocks of the cache), at most ``max_len``
    (the engine refuses a longer sequence), or on an engine started with a context per slot the ``slot_cells``
    each slot holds whatever the concurrency; above the cap the rest queue. The cap's flag is said with its value
    as ``launched``; ``opens``: the slots the server opens over one unified cache for that value (llama-server
    b6925-b7432's 4 for --parallel 1). None without a concurrency."""
    if not concurrency:
        return ConcurrencyAnswer(largest, 0, None)
    total = cap.sequences * instances
    running, queued = min(concurrency, total), max(concurrency - total, 0)
    state = cap.setting == "max_mamba_cache_size"
    over = (f" over {launched.ranks} DP attention ranks" if launched.ranks > 1
            else " per instance" if instances > 1 else "")
    shared = (f", {cap.sequences:,} at once in the rows of the one request table they share"
              if cap.per_micro_batch * cap.micro_batches > cap.sequences else "")
    divided = (f" divided over {cap.micro_batches} pipeline micro-batches, {cap.per_micro_batch:,} each{shared}"
               if cap.micro_batches > 1 else " per micro-batch" if cap.sequences != cap.value else "")
    opened = f", which opens {opens} slots over one unified cache" if opens else ""
    how = (f"{cap.value:,} state slots; {cap.flag} sets them" if state else f"{cap.flag} {launched.value}{opened}"
           + divided) + over
    if slot_cells is not None:
        largest = slot_cells
        share = f"each slot holds {slot_cells:,} tokens of the context, however many sequences run"
    else:
        whole = f", in whole {block_tokens}-token blocks" if block_tokens > 1 and not state else ""
        share = f"the largest context is each running sequence's share of the {'attention pool' if state else 'KV cache'}{whole}"
        if largest is not None and largest > max_len:
            largest, share = max_len, f"{share}, at most the {max_len:,}-token max_model_len (the engine refuses a longer sequence)"
    if not queued:
        return ConcurrencyAnswer(largest, 0, f"{running:,} running of at most {total:,} at once ({how}): {share}")
    return ConcurrencyAnswer(largest, queued, (
        f"concurrency {concurrency:,} is above the {total:,} sequence{'s' if total != 1 else ''} "
        f"{'the state pool' if state else 'the engine'} runs at once ({how}): {share}; the other {queued:,} wait in "
        f"the queue, holding no KV cache, a cost in latency that a closed loop of {concurrency:,} clients prices "
        f"(simulate)"))
