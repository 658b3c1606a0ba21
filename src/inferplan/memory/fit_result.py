"""The typed answer of ``memory.fit``: a deployment's memory fit and the changes that would make it fit."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from inferplan.memory.layout import ParallelPlan


class FitSuggestion(BaseModel):
    """A change to a deployment that does not fit which makes it fit: the Deployment fields to set
    (None: leave the field unstated) and what the change is."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: Literal["context", "gpus", "quantization", "offload", "startup", "fraction", "host_tier", "kt_method", "wired_limit"]
    changes: dict[str, int | float | str | None]
    summary: str


class MemoryFit(BaseModel):
    """The answer to "does it fit, and what is left for the KV cache"."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    fits: bool
    model: str
    accelerator: str
    engine: str
    quantization: str
    kv_cache_dtype: str
    parallel: ParallelPlan
    max_model_len: int
    gpu_memory_bytes: float  # total per GPU as the driver reports it
    usable_bytes_per_gpu: float  # what the engine lets itself use, never below 0
    # where nothing is usable: how far below nothing the budget falls (other processes, a start-up margin)
    usable_short_bytes_per_gpu: float = 0.0
    weights_bytes: float  # one full copy of the model
    weights_bytes_per_gpu: float  # the model's weights (a vision projector apart)
    # an Ollama tag's vision projector, held on the GPU beside the weights (memory/vision_projector.py; 0: none counted)
    vision_projector_bytes_per_gpu: float = 0.0
    activation_bytes_per_gpu: float
    overhead_bytes_per_gpu: float
    kv_cache_bytes_per_gpu: float  # memory each GPU has for the KV cache (0 when none)
    # llama.cpp, MLX: the cache the engine allocates for max_model_len, padded (None: the cache is the room above)
    kv_cache_allocated_bytes_per_gpu: float | None = None
    kv_cache_bytes_per_token: float  # one token of context across one instance, all layers
    # copies of each token's KV the instance holds: more than 1 where a layer is held whole on several TP ranks
    # (MLA's latent on every rank, KV heads fewer than the ranks); one copy is kv_cache_bytes_per_token_one_copy
    kv_cache_copies: float = 1.0
    kv_cache_bytes_per_token_one_copy: float | None = None  # one token as the model holds it (GPU part of the cache)
    # sliding-window layers keep only their last ``kv_window_tokens``: past the window a token takes
    # ``kv_cache_bytes_per_token_beyond_window`` (None: no window layers)
    kv_window_tokens: int | None = None
    kv_cache_bytes_per_token_beyond_window: float | None = None
    state_bytes_per_sequence: float  # linear-attention / Mamba state per sequence, per instance
    kv_cache_tokens: int  # tokens of context one instance holds in sequences of max_model_len (windows and states included)
    max_concurrency: float  # max_model_len sequences one instance holds at once
    # an engine started with a context per slot (llama-server --parallel): the slots it is started
    # with, and the most whose whole cache fits (None: not such an engine, or not worked out)
    started_slots: int | None = None
    most_slots: int | None = None
    # where those slots share one unified cache (llama-server b6925-b7432's 4 for --parallel 1): its cells, which
    # every running sequence's tokens fill together (None: a cache per slot, or not such an engine)
    unified_cache_cells: int | None = None
    total_max_concurrency: float  # across all data-parallel replicas
    sequence_bytes_per_gpu: float  # one max_model_len sequence, per GPU
    # what the engine's start-up check needs for one max_model_len request, per GPU: the sequence, or the
    # blocks the release charges it (memory/admission.py)
    kv_cache_needed_bytes_per_gpu: float = 0.0
    largest_context_tokens: int | None  # at `concurrency`, per sequence
    # a hybrid model on an engine that keeps its recurrent state in slots apart from the KV pool (SGLang,
    # memory/state_pool.py): the slots per instance and the running sequences they allow (None: one shared pool)
    state_slots: int | None = None
    state_running_cap: int | None = None
    # the sequences one instance runs at once (memory/running_cap.py): the engine's own cap (max_num_seqs, or
    # llama-server's --parallel slots), or the state pool's where lower; the setting behind it (max_num_seqs or
    # max_mamba_cache_size) and the launch flag that sets it
    running_cap: int = 0
    running_cap_setting: str = "max_num_seqs"
    running_cap_flag: str = ""
    # at `concurrency`: the sequences above the running cap, which wait in the engine's queue holding no KV cache,
    # and what the concurrency answer rests on (None: no concurrency stated)
    queued_sequences: int = 0
    concurrency_note: str | None = None
    concurrency: int | None
    shortfall_bytes: float  # per GPU, 0 when it fits
    # the smallest instance of a power-of-two GPU count that holds the model (tiles a system's 8 or 72 GPUs:
    # a system's copies, a replica cell)
    smallest_fit: ParallelPlan | None
    # the fewest GPUs that hold it, at any count the engine launches (a layer split starts on 3 GPUs)
    fewest_gpus_fit: ParallelPlan | None = None
    assumptions: tuple[str, ...]
    # how the layout was chosen when the deployment states GPUs but no parallel sizes (memory/layout.py), and the
    # memory configuration planned for a part sold in several named without its size (memory/hardware.py)
    layout_note: str | None = None
    # an instance wider than one host holds: the hosts it spans, as deploy writes them (memory/host_span.py)
    hosts_note: str | None = None
    # when it does not fit: the changes that would make it fit (memory/suggest.py ``fit_or_suggest``)
    suggestions: tuple[FitSuggestion, ...] = ()
    # when it does not fit and no weight offload would either, or the host RAM is short and nothing is suggested:
    # why (memory/offload_suggest.py, memory/host_suggest.py)
    offload_note: str | None = None
    # weight offload (-ngl, --n-cpu-moe, --cpu-offload-gb): host RAM the instance uses and has (None: no offload)
    host_memory_bytes_used: float = 0.0
    host_memory_budget_bytes: float | None = None  # what may be used: the RAM less what the OS and engine keep
    host_shortfall_bytes: float = 0.0  # host RAM the instance lacks beyond that budget (0: it holds it)
    # where the RAM figure came from: stated (host_memory_gb), system (the system card), unified (the
    # accelerator's own memory, GPU side counted in host_memory_bytes_used), unstated (weights the engine placed in
    # host RAM of a machine whose RAM is not known: host_memory_bytes_used is what it needs); None: nothing in host RAM
    host_memory_origin: Literal["stated", "system", "unified", "unstated"] | None = None
    host_memory_total_bytes: float | None = None  # the RAM stated, on the system card, or the unified pool
    host_memory_reserved_bytes: float = 0.0  # of that RAM, kept for the OS and the engine process (not in the budget)
    # the weight placement the engine chose where none is stated (an Ollama tag's build: llama-server --fit,
    # memory/fit_placement.py): llama.cpp's -ngl and --n-cpu-moe (None: every layer, every expert on the GPUs) and
    # the setting that chose them (None: nothing chosen, the placement is the one stated or every layer on the GPUs)
    n_gpu_layers: int | None = None
    n_cpu_moe: int | None = None
    placement_chosen_by: str | None = None
    placement_note: str | None = None  # where the setting that chose the placement put the weights
    host_kv_cache_tokens: int = 0  # tokens of context the host-RAM KV tier holds per instance (vLLM / LMCache, HiCache)
    # the engine release's memory-budgeting rule applied (engine_memory_rules.yaml): id and label
    memory_rule_id: str = ""
    memory_rule: str = ""
    # the build an Ollama tag naming the model selected and whether the plan runs it (catalog/ollama.py)
    build_note: str | None = None
    engine_release: str | None = None  # the engine release the memory rule is planned at (stated or current)
    cuda_graph_bytes_per_gpu: float = 0.0  # reserved before the KV cache is sized, where the rule counts it
    # vLLM's model runner the plan assumes, V1 or V2 (VLLM_USE_V2_MODEL_RUNNER; the release's default for the
    # model unless stated); None: the rule names no choice
    model_runner: Literal["V1", "V2"] | None = None
    # what start-up allocates after the KV cache is sized lacks this much outside the fraction (memory/startup.py)
    startup_shortfall_bytes_per_gpu: float = 0.0
    startup_headroom_bytes_per_gpu: float = 0.0  # what that check has outside the fraction (0: no check)
    startup_note: str | None = None  # why, with the figures, when it does
    # an integrated GPU whose engine release sizes the KV cache from the device's free memory (memory/page_cache.py):
    # the KV cache per GPU with the checkpoint still in the page cache (low) and with none (high, the plan's
    # kv_cache_bytes_per_gpu), the page cache taken at the low end, and what to do about it (None: no such range)
    kv_cache_range_low_bytes_per_gpu: float | None = None
    kv_cache_range_high_bytes_per_gpu: float | None = None
    page_cache_bytes_per_gpu: float | None = None
    page_cache_note: str | None = None
    # a runtime on which the engine release cannot size the KV cache from measured memory and sizes it from its
    # profile (vLLM 0.34 on a HIP runtime before TheRock 7.12): the KV cache per GPU there, and the runtime named
    kv_cache_fallback_bytes_per_gpu: float | None = None
    kv_cache_fallback_note: str | None = None

    @property
    def total_running_cap(self) -> int | None:
        """The sequences the engine runs at once across its data-parallel instances (``running_cap`` per
        instance); None where no cap was worked out."""
        return self.running_cap * self.parallel.data_parallel_size if self.running_cap else None

    @property
    def sequences_at_once(self) -> float:
        """The ``max_model_len`` sequences that run together across the instances: those the KV cache holds
        (``total_max_concurrency``), at most the engine's running cap."""
        cap = self.total_running_cap
        return self.total_max_concurrency if cap is None else min(self.total_max_concurrency, float(cap))
