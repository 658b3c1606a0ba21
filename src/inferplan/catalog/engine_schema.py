"""An engine's record: the settings that shape its memory budget, the formats, KV-cache types and parallel
layouts it runs, and the hardware its speed is calibrated apart on.

As ``schema.py``: real annotations (no postponed ones), so pydantic builds validators without re-reading them.
"""

from typing import Literal

from pydantic import Field

from inferplan.catalog.accelerator_schema import Accelerator
from inferplan.catalog.engine_tiers import AttentionDpChunk, GpuMemoryTiers, MemoryFractionReserve, SlotLimit
from inferplan.catalog.provenance import Bytes, Count, Ratio
from inferplan.catalog.quantization_schema import Quantization
from inferplan.catalog.schema_base import SLUG, Frozen, Software


class CalibrationFamilyRule(Frozen):
    """Hardware on which an engine's speed is calibrated as a family of its own (first match wins),
    split off because its measured points run apart from the engine's other hardware."""

    family: str
    backends: tuple[str, ...] = ()  # llama.cpp back ends it covers (empty: any)
    software: tuple[Software, ...] = ()  # software stacks it covers (empty: any)
    architectures: tuple[str, ...] = ()  # accelerator architectures it covers (empty: any)
    memory_type_prefixes: tuple[str, ...] = ()  # memory types it covers, by prefix: HBM (empty: any)
    except_form_factors: tuple[str, ...] = ()  # form factors it leaves to the engine's family
    sources: tuple[str, ...] = Field(min_length=1)  # the measurements that set it apart
    note: str


class EngineBackend(Frozen):
    """One of an engine's selectable back ends (a llama.cpp build) and the software stacks it runs on."""

    id: str = Field(pattern=SLUG)
    runs_on: tuple[Software, ...] = Field(min_length=1)


class EngineDefaults(Frozen):
    """The settings that shape an engine's memory budget, as the engine documents them."""

    id: str = Field(pattern=SLUG)
    name: str
    memory_fraction: Ratio | None = None  # vLLM gpu_memory_utilization, SGLang mem_fraction_static ...
    # the default fraction on an accelerator whose record carries the memory the engine's cap is read from
    # (memory_reported_bytes: MLX's measured Metal working set, the cap memory_fraction approximates)
    memory_fraction_of_reported: Ratio | None = None
    memory_fraction_meaning: Literal["of_total", "of_free_after_weights", "none"]
    memory_fraction_max: Ratio | None = None  # the largest fraction a deployment guide runs it at (fit suggests up to it)
    # the share of Metal's recommended working set the engine takes as an Apple GPU's memory (llama.cpp's
    # ggml-metal reports all of it as the total); the working set is a measured one on the accelerator, else
    # metal_working_set.yaml's for the Mac's size
    metal_working_set: Ratio | None = None
    # the weight formats the engine loads on an Apple GPU, where its Metal back end runs MLX (vllm-metal,
    # SGLang's MLX runtime) rather than its CUDA kernels: there they replace the formats' own engine lists
    metal_formats: tuple[str, ...] | None = None
    metal_formats_source: str | None = None
    metal_formats_note: str | None = None
    # on an Apple GPU: the most GPUs (tensor x pipeline parallel) one instance spans where the Metal back
    # end runs one device, and the KV-cache element types it stores (None: as elsewhere)
    metal_max_instance_gpus: int | None = Field(None, ge=1)
    metal_max_instance_gpus_source: str | None = None
    metal_max_instance_gpus_note: str | None = None
    metal_kv_cache_dtypes: tuple[str, ...] | None = None
    metal_kv_cache_dtypes_source: str | None = None
    metal_kv_cache_dtypes_note: str | None = None
    block_tokens: Count  # KV block / page size in tokens
    max_num_batched_tokens: Count | None = None
    # the physical batch a prompt's matrix products run in, when the engine splits a chunk further
    # (llama.cpp's n_ubatch inside n_batch); unset: the chunk itself
    prefill_micro_batch_tokens: Count | None = None
    max_num_seqs: Count | None = None
    # vLLM picks smaller batch defaults below a memory threshold (70 GiB):
    large_gpu_bytes: Bytes | None = None
    small_gpu_max_num_batched_tokens: Count | None = None
    small_gpu_max_num_seqs: Count | None = None
    small_default_accelerators: tuple[str, ...] = ()  # take the small defaults whatever their memory
    # SGLang picks its chunk and CUDA-graph batch by the GPU's memory, and its fraction from them
    # (catalog/engine_tiers.py); these win over max_num_batched_tokens and memory_fraction
    defaults_by_gpu_memory: GpuMemoryTiers = ()
    defaults_by_gpu_memory_source: str | None = None
    # the chunk each attention data-parallel rank takes, by release (SGLang: // 2, then // the ranks)
    attention_dp_chunk: tuple[AttentionDpChunk, ...] = ()
    attention_dp_chunk_source: str | None = None
    # the most slots (sequences) a release opens, by release (llama.cpp's LLAMA_MAX_SEQ; empty: no limit stated)
    max_slots: tuple[SlotLimit, ...] = ()
    max_slots_source: str | None = None
    memory_fraction_reserve: MemoryFractionReserve | None = None
    memory_fraction_reserve_source: str | None = None
    runs_on: tuple[Software, ...] = ()  # software stacks the engine runs on (empty: not stated, any)
    runs_on_source: str | None = None  # source id stating them
    runs_on_note: str | None = None
    # stacks it runs on whose speed no measured point checks (its constants come from another stack): a
    # search tries it there only when the engine is asked for by name
    runs_on_unmeasured: tuple[Software, ...] = ()
    # KV-cache element types the engine can be asked for (ids of kv_cache_dtypes; empty: not stated, any)
    kv_cache_dtypes: tuple[str, ...] = ()
    kv_cache_dtypes_source: str | None = None
    kv_cache_dtypes_note: str | None = None
    kv_cache_dtypes_instead: dict[str, str] = Field(default_factory=dict)  # an id it lacks -> its nearest one
    # the only KV-cache element types it runs a compressed-attention (DeepSeek-V4) cache in, the first its
    # default; the note says why (empty: those of any model, the checkpoint's FP8 by default where stored)
    compressed_attention_kv_cache_dtypes: tuple[str, ...] = ()
    compressed_attention_kv_cache_dtypes_source: str | None = None
    compressed_attention_kv_cache_dtypes_note: str | None = None
    # the cache's element type when none is asked for and the engine does not follow the model's dtype
    kv_cache_dtype_default: str | None = None
    kv_cache_dtype_default_source: str | None = None
    # a max model length past the model's context: refused at start-up, capped to the model's, or run
    context_beyond_model: Literal["refuse", "cap", "run"] | None = None
    context_beyond_model_source: str | None = None
    context_beyond_model_note: str | None = None
    # the token-embedding table stays in host memory (a lookup: little gain on the GPU); a tied table
    # still goes to the GPU as the output layer
    embeddings_on_host: bool = False
    embeddings_on_host_source: str | None = None
    # the Deployment fields of weight offload to host memory the engine's launcher takes
    # (n_gpu_layers, n_cpu_moe, cpu_offload_gb); one it does not take is refused naming it
    offload_settings: tuple[str, ...] = ()
    offload_settings_source: str | None = None
    offload_settings_note: str | None = None
    # under pipeline parallelism: every stage's KV cache sized by the smallest room any stage has
    # ("smallest", also when not stated), or each stage's by its own room with the same block count
    # for all ("per_stage": the instance holds the smallest of room / sequence bytes over stages)
    pp_kv_room: Literal["per_stage", "smallest"] | None = None
    pp_kv_room_source: str | None = None
    # under pipeline parallelism: max_num_seqs and max_num_batched_tokens bound each micro-batch (the
    # instance holds pp × max_num_seqs sequences; a round fuses up to pp × max_num_batched_tokens), or the
    # whole instance ("instance", also when not stated), or max_num_seqs is the instance's, divided over the
    # micro-batches ("divided": each admits max_num_seqs // pp, at least one, so the instance holds pp × that,
    # at most max_num_seqs, the rows of the one request table they share; max_num_batched_tokens as "instance")
    pp_batch_limits: Literal["per_micro_batch", "instance", "divided"] | None = None
    pp_batch_limits_source: str | None = None
    # runs attention data-parallel with a mixture-of-experts model's experts spread over all ranks
    # (vLLM --enable-expert-parallel, SGLang --enable-dp-attention --ep-size, TensorRT-LLM
    # enable_attention_dp + moe_expert_parallel_size); None: not stated
    expert_parallel: bool | None = None
    expert_parallel_source: str | None = None
    # under expert parallelism every rank holds the same whole number of routed experts, asserted at
    # start-up as (experts + redundant experts) % ranks == 0: the plan adds the fewest redundant expert
    # copies that divide (SGLang --ep-num-redundant-experts); None: the remainder goes to some ranks
    expert_parallel_redundant: bool | None = None
    expert_parallel_redundant_source: str | None = None
    # the expert-parallel flag takes effect only where the MoE layers span more than one GPU (TP x DP > 1): on one
    # such GPU the engine runs the same MoE layers with or without it, so a run launched with it there is the launch
    # of one without (``performance/launch_match.py``); None: not stated, the flag compared as given
    expert_parallel_needs_ranks: bool | None = None
    expert_parallel_needs_ranks_source: str | None = None
    # without expert parallelism the MoE layers shard the routed experts over one tensor-parallel group of
    # TP x DP GPUs (vLLM: FusedMoEParallelConfig flattens TP across DP), so each GPU holds 1/(TP x DP) of
    # them (their widths split that far), for the tokens of every rank, all-gathered to it and reduce-scattered
    # back per MoE layer; None: each data-parallel rank holds its own TP-split copy
    # (the search offers such ranks as a layout of their own: search/experts_over_dp.py)
    moe_tp_spans_data_parallel: bool | None = None
    moe_tp_spans_data_parallel_source: str | None = None
    moe_tp_spans_data_parallel_note: str | None = None
    # how it spreads one model over several GPUs when no parallel sizes are given: tensor parallel
    # over the GPUs that reach each other, pipeline stages beyond ("tensor", also when not stated), or
    # each GPU a slice of the layers ("layer": llama.cpp's default split mode)
    multi_gpu_split: Literal["tensor", "layer"] | None = None
    multi_gpu_split_source: str | None = None
    # the widths tensor parallelism splits evenly over its ranks (a start-up assertion each):
    # attention_heads (query heads), kv_heads (key/value heads: divided, or each held whole by
    # TP / heads ranks when TP is a multiple of them), mlp_intermediate (dense and shared-expert
    # MLP width), expert_intermediate (routed experts' width, unless expert parallelism spreads
    # whole experts), weight_block (each rank's share of those widths whole blocks of a
    # block-quantized format's weight_block), expert_weight_block (the same for the routed experts'
    # width only); empty: the engine splits no tensors, so any size stands
    tensor_parallel_splits: tuple[Literal["attention_heads", "kv_heads", "mlp_intermediate",
                                          "expert_intermediate", "weight_block", "expert_weight_block"], ...] = ()
    tensor_parallel_splits_source: str | None = None
    tensor_parallel_splits_note: str | None = None
    # it captures decode steps as CUDA (HIP) graphs unless told not to (vLLM --enforce-eager, SGLang
    # --disable-cuda-graph): a speed figure's note says what it assumes of them
    captures_decode_graphs: bool = False
    captures_decode_graphs_source: str | None = None
    # where it holds a separate draft model's weights and KV (speculative draft_model method) is read from its
    # source and counted (memory/draft_model.py); otherwise the plan says they are not counted
    draft_model_memory_counted: bool = False
    draft_model_memory_counted_source: str | None = None
    # its small-batch weight GEMMs run on tensor-core tiles that compute at least the calibrated
    # ``gemm-min-rows`` rows of every weight matrix (vLLM's and SGLang's fused-MoE kernels pad each
    # expert's tokens to the tile), or on vector kernels that compute only the rows there are
    # (TensorRT-LLM's CUDA-core GEMV, llama.cpp's MMVQ, MLX's qmv); None: not stated, not padded
    pads_gemm_rows: bool | None = None
    pads_gemm_rows_source: str | None = None
    pads_gemm_rows_note: str | None = None
    # the row blocks the weight-only kernels (Marlin: weights of the storage dtypes ``_weights``
    # dequantized to 16-bit maths) pick from on CUDA, smallest first, read from their source in place
    # of the calibrated tile: fewer rows than the largest block compute the smallest block that holds
    # them; ``_by_architecture`` where another kernel runs them (vLLM's Machete on Hopper); empty:
    # the calibrated tile
    weight_only_gemm_row_blocks: tuple[float, ...] = ()
    weight_only_gemm_row_blocks_weights: tuple[str, ...] = ()
    weight_only_gemm_row_blocks_by_architecture: dict[str, tuple[float, ...]] = Field(default_factory=dict)
    weight_only_gemm_row_blocks_source: str | None = None
    weight_only_gemm_row_blocks_note: str | None = None
    # hardware calibrated apart (else the family is the engine's id, with llama.cpp's back end or a
    # software stack other than CUDA and Metal appended: llamacpp-vulkan, vllm-rocm)
    calibration_families: tuple[CalibrationFamilyRule, ...] = ()
    # on a CUDA device whose memory the CPU shares (``Accelerator.unified_memory``) the free memory the
    # engine reads at start-up counts the Linux page cache as used, so the checkpoint it has just read
    # (or any file read before) shrinks the KV cache it sizes; the plan is the one after a cache drop
    # weight formats the engine's own tools make from a 16-bit checkpoint (llama.cpp's
    # convert_hf_to_gguf.py then llama-quantize): a search tries them, labelled converted, for a
    # model with a build in one of ``converts_from`` and none in that format
    converts_to: tuple[str, ...] = ()
    converts_to_source: str | None = None
    converts_to_note: str | None = None
    converts_from: tuple[str, ...] = ()
    converts_with: str | None = None  # the tools' names, for a launch command's note
    # the speed model prices its matrix maths, and attention, at the accelerator's 16-bit rate whatever the
    # weight format and KV cache: a modelling choice for engines with no FP8 or FP4 tensor-core path
    # (llama.cpp's own quantized kernels, int8 dot products where the GPU has them; MLX's
    # quantized_matmul), the calibrated efficiency absorbing the difference; the note says what it runs
    priced_at_16_bit: bool = False
    priced_at_16_bit_source: str | None = None
    priced_at_16_bit_note: str | None = None
    # its selectable back ends (llama.cpp's builds), in order of preference: the first that runs on an
    # accelerator's software stack is planned where none is named (empty: it runs on the stack's own)
    backends: tuple[EngineBackend, ...] = ()
    backends_source: str | None = None
    backends_note: str | None = None
    # the software stacks on which it is the engine planned when a deployment names none (each stack
    # has exactly one such engine, among those that run on it)
    default_on: tuple[Software, ...] = ()
    default_on_source: str | None = None
    default_on_note: str | None = None
    reads_page_cache_as_used: bool = False
    reads_page_cache_as_used_source: str | None = None
    reads_page_cache_as_used_note: str | None = None
    notes: tuple[str, ...] = ()

    def loads(self, quant: Quantization, software: Software | None = None, *, accel: Accelerator | None = None,
              release: str | None = None) -> bool:
        """Whether the engine loads ``quant`` weights (on ``software``: an Apple GPU has its own list); on
        ``accel`` (at ``release``), only natively or through a fallback the engine has there
        (``Quantization.fallback_engines``)."""
        software = accel.software if accel is not None else software
        if software == Software.METAL and self.metal_formats is not None:
            return quant.id in self.metal_formats
        if quant.engines and self.id not in quant.engines:
            return False
        return accel is None or quant.native_on(accel) or quant.falls_back(self.id, release)

    def runs_measured_on(self, software: Software) -> bool:
        """Whether the engine runs on ``software`` with a measured point checking its speed there: the
        engines a question that names none compares (``runs_on``, less ``runs_on_unmeasured``)."""
        return (not self.runs_on or software in self.runs_on) and software not in self.runs_on_unmeasured

    def kv_dtypes_on(self, software: Software | None = None) -> tuple[str, ...]:
        """The KV-cache element types the engine stores (on ``software``: an Apple GPU has its own list;
        empty: not restricted)."""
        if software == Software.METAL and self.metal_kv_cache_dtypes is not None:
            return self.metal_kv_cache_dtypes
        return self.kv_cache_dtypes

    @property
    def short_name(self) -> str:
        """The name without its parenthesised tool: llama.cpp for "llama.cpp (llama-server)"."""
        return self.name.split(" (")[0]

    def default_backend(self, software: Software) -> str | None:
        """The back end planned on ``software`` where none is named: the first of ``backends`` that runs
        there (None: an engine without selectable back ends, or none of them runs there)."""
        return next((b.id for b in self.backends if software in b.runs_on), None)

    def backends_on(self, software: Software) -> tuple[str, ...]:
        """The back ends that run on ``software``, in order of preference."""
        return tuple(b.id for b in self.backends if software in b.runs_on)

    def max_instance_gpus(self, software: Software | None = None) -> int | None:
        """The most GPUs one instance spans on ``software`` (None: no bound of the engine's own)."""
        return self.metal_max_instance_gpus if software == Software.METAL else None
