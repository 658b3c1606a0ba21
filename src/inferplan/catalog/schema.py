"""Catalogue entities: accelerators, systems, models, quantization formats and engines.

Each YAML file under ``catalog/data`` holds a ``sources`` registry and a list of one entity kind;
``loader.py`` validates them with these models. Field names carry their SI unit.

The pydantic modules of ``catalog`` and ``inputs`` keep real annotations (no postponed ones): pydantic
would otherwise evaluate each field's annotation from a string at every start-up.
"""

from typing import Literal

from pydantic import Field

from inferplan.catalog.checkpoint_schema import GgufFile, KeptCheckpointExperts
from inferplan.catalog.ollama_schema import OllamaTag
from inferplan.catalog.engine_tiers import AttentionDpChunk, GpuMemoryTiers, MemoryFractionReserve
from inferplan.catalog.keep_schema import KeepsUnquantized
from inferplan.catalog.provenance import (
    EUR,
    USD,
    Bits,
    Bytes,
    BytesPerS,
    Count,
    Ratio,
    Watts,
    release_key,
)
from inferplan.catalog.accelerator_schema import Accelerator, ScaleOut, ScaleUp
from inferplan.catalog.schema_base import SLUG, ComputeDtype, Frozen, Software, Status, check_engine_and_sources

# the catalogue's record types, importable from here whichever module defines them
__all__ = ["SLUG", "Accelerator", "CalibrationConstant", "Checkpoint", "ComputeDtype", "EngineDefaults", "Frozen",
           "KvDtype", "ModelCard", "PriceBand", "Quantization", "ScaleOut", "ScaleUp", "Software", "Status", "System",
           "check_engine_and_sources"]


class PriceBand(Frozen):
    """A planning price band, ex VAT. EUR and USD as the source states them."""

    usd_low: USD | None = None
    usd_high: USD | None = None
    eur_low: EUR | None = None
    eur_high: EUR | None = None
    # a band for the card(s) alone: the cost_defaults id of the rest of the machine, added per system
    host: str | None = Field(default=None, pattern=SLUG)
    basis: str  # quote band, BOM estimate, roadmap ASP, list price, ...


class System(Frozen):
    id: str = Field(pattern=SLUG)
    name: str
    aliases: tuple[str, ...] = ()
    tier: Literal["node", "rack", "server", "workstation", "desktop", "lab-box", "single-gpu"]
    status: Status
    accelerator: str  # accelerator id
    accelerator_count: int = Field(ge=1)
    scale_up_domain_gpus: int = Field(ge=1)  # GPUs joined by the fast link
    os_host_gpus: Count | None = None  # GPUs one operating-system host sees (a rack's compute tray); None: all
    scale_out: ScaleOut | None = None  # this system's network to other systems
    memory_bytes: Bytes | None = None  # aggregate accelerator memory as the source states it
    power_w: Watts | None = None
    cooling: str | None = None
    price: PriceBand | None = None
    host: str | None = None
    host_memory_bytes: Bytes | None = None  # the host's RAM (CPU memory), as the source states it
    host_memory_bandwidth_bytes_per_s: BytesPerS | None = None  # the host's DRAM peak, all sockets' channels
    notes: tuple[str, ...] = ()


class Checkpoint(Frozen):
    """A published build of a model: its quantization and its size on disk."""

    name: str
    repo: str | None = None
    quantization: str  # a quantization id from quantizations.yaml
    size_bytes: Bytes | None = None
    # bits of the weights outside the routed experts when this build keeps them apart from the
    # format (gpt-oss: experts MXFP4, attention/embeddings/lm_head BF16); shares out size_bytes
    non_expert_bits_per_weight: Bits | None = None
    keeps_unquantized: KeepsUnquantized | None = None
    gguf_file: GgufFile | None = None  # GGUF builds: the file llama.cpp's --hf-repo picks and its tag
    # False: the build leaves out the model's multi-token-prediction layers, so size_bytes holds none of them
    # (llama.cpp's DeepSeek-V3 GGUFs: the main model's 671.03 B parameters)
    mtp_layers: bool = True
    # parameters the build's file holds with its MTP layers beyond the config's count of them (GLM's GGUF
    # MTP layer keeps its own copies of the embeddings and output head): left out with them, pro rata
    mtp_extra_parameters: Count | None = None
    # False: the build's file holds the text model alone; llama.cpp writes a vision model's encoder to a projector
    # file of its own (mmproj), which size_bytes leaves out
    vision_encoder: bool = True
    # the engines this build is meant for: they choose it before a build naming no engine, and other engines
    # never choose it (empty: any engine)
    engines: tuple[str, ...] = ()
    source: str | None = None  # where the repo and its format are stated, for a build stating no size


class Licence(Frozen):
    name: str
    gate: str | None = None  # what must be reviewed or triggers a separate deal


class ModelCard(Frozen):
    id: str = Field(pattern=SLUG)
    name: str
    aliases: tuple[str, ...] = ()
    family: str
    status: str  # the seed's label (current-launch ...) or "reference"
    licence: Licence | None = None
    total_params: Count | None = None
    active_params: Count | None = None
    context_tokens: Count | None = None
    checkpoints: tuple[Checkpoint, ...] = ()
    # the model's Ollama library tags: each names the card and selects one of its builds, run as Ollama runs it
    # (ollama.yaml; catalog/ollama.py)
    ollama_tags: tuple[OllamaTag, ...] = ()
    first_node: str | None = None
    serving_engines: tuple[str, ...] = ()
    config: str | None = None  # hf_configs/<file>.json, kept verbatim
    config_source: str | None = None  # source id of that config file
    kv_proxy: str | None = None  # model id whose attention layout stands in (stated as assumption)
    # listed by the what-fits grid when no model is named (False: left out of it, and named as left out;
    # all_models adds it)
    in_default_grid: bool = True
    notes: tuple[str, ...] = ()


class FallbackRule(Frozen):
    """An engine that runs a format on an accelerator without its native format: weight-only, the
    weights dequantized inside the kernel and the math in ``Quantization.fallback_compute``."""

    engine: str  # an engine id from engines.yaml
    since: str | None = None  # the first release that has it (None: every release on record)
    source: str
    note: str | None = None


class EmulatedFallback(Frozen):
    """Where an engine's fallback for a format is an emulation, not a fused weight-only kernel: each forward
    dequantizes the packed weights into a full copy in ``materialized_format`` (writes it, then the
    matrix maths reads it) and runs in ``Quantization.fallback_compute``. It covers accelerators without
    native kernels for the format on ``software`` (and ``architectures``, empty: any) in the engine's
    releases from ``since`` (None: the first on record) before ``before`` (None: every later one), for the
    ``weights`` it names: every quantized weight, or the routed experts alone (the linear layers run a kernel)."""

    engine: str  # an engine id from engines.yaml
    software: tuple[Software, ...] = Field(min_length=1)
    architectures: tuple[str, ...] = ()
    weights: Literal["all", "routed_experts"] = "all"
    since: str | None = None  # the first release it covers
    before: str | None = None  # the first release that runs a kernel instead
    materialized_format: str  # a quantization id: the dtype the weights are dequantized to
    source: str
    note: str


class MixedModuleRule(Frozen):
    """The first release of an engine that builds a module a ModelOpt MIXED_PRECISION config lists in this
    format (earlier releases leave it unquantized)."""

    engine: str  # an engine id from engines.yaml
    since: str
    source: str


class Quantization(Frozen):
    """A weight format: how many bits one quantized weight costs, scales included."""

    id: str = Field(pattern=SLUG)
    name: str
    aliases: tuple[str, ...] = ()
    bits_per_weight: Bits
    # weights outside the routed experts when a format stores them differently (llama.cpp MXFP4_MOE:
    # experts MXFP4, every other 2-D tensor Q8_0); None: the same bits as the experts
    non_expert_bits_per_weight: Bits | None = None
    # the output projection (lm_head, or a tied embedding table) where the format writes it in a type
    # of its own (llama.cpp Q4_0 files: Q6_K), when its rows are a multiple of output_row_weights
    # weights; otherwise at output_fallback_bits_per_weight. None: as the other non-expert weights
    output_bits_per_weight: Bits | None = None
    output_row_weights: Count | None = None
    output_fallback_bits_per_weight: Bits | None = None
    weight_dtype: str  # storage: bf16, fp8, int8, int4, fp4 ...
    activation_dtype: str  # compute dtype when the hardware runs it natively
    native_format: str | None = None  # the accelerator format that runs it natively (fp8, nvfp4 ...)
    # software stacks whose engines have native kernels for it (empty: any stack with native_format);
    # elsewhere it runs the fallback even where the silicon has the format
    native_software: tuple[Software, ...] = ()
    fallback_compute: str = "bf16"  # compute dtype when the hardware lacks the native format
    quantizes_embeddings: bool = False  # GGUF quantizes token embeddings; most GPU formats do not
    # a format defined by its routed experts taking fewer bits than the rest (DeepSeek-V4's FP4 experts, FP8
    # elsewhere), its bits a whole-checkpoint average: a model without routed experts is refused in it
    needs_routed_experts: bool = False
    # weights quantized in square blocks of this many rows and columns, one scale each (FP8 128x128):
    # an engine whose tensor_parallel_splits include weight_block needs each rank's MLP width whole blocks
    weight_block: Count | None = None
    # llama.cpp K-quants: 256-weight super-blocks of sub-blocks with their own scales (6-bit packed
    # with minima in Q2-Q5_K, 8-bit in Q6_K), unpacked for every weight a matrix-vector kernel reads:
    # ALU work per weight that GPUs with few FLOP/s per byte of bandwidth feel (docs/speed.md)
    super_block_scales: bool = False
    # routed experts a checkpoint ships in another format that this format's builds keep as they are
    # (GGUF K-quants, i-quants and Q8_0 of gpt-oss: MXFP4); the other weights take this format's bits
    keeps_checkpoint_experts: tuple[KeptCheckpointExperts, ...] = ()
    engines: tuple[str, ...] = ()  # engines that load this format; empty: every engine
    # the engines of ``engines`` that run it where the accelerator does not run it natively (None: all of them)
    fallback_engines: tuple[FallbackRule, ...] | None = None
    # engines whose fallback for it on some accelerators and releases dequantizes the whole weights every forward
    emulated_fallbacks: tuple[EmulatedFallback, ...] = ()
    # engines whose ModelOpt MIXED_PRECISION config builds modules listed in this format only from a release
    mixed_modules_since: tuple[MixedModuleRule, ...] = ()
    notes: tuple[str, ...] = ()

    def native_on(self, accel: Accelerator) -> bool:
        """Whether ``accel`` runs this format's matrix maths natively (no format: always)."""
        if self.native_format is None:
            return True
        return self.native_format in accel.native_formats and (
            not self.native_software or accel.software in self.native_software)

    def emulation(self, accel: Accelerator, engine: str, release: str | None = None) -> EmulatedFallback | None:
        """The ``emulated_fallbacks`` rule by which ``engine`` (at ``release``; None: its current one) runs this
        format's every weight on ``accel`` (None: native kernels there, or a fused fallback)."""
        return next((r for r in self._emulations(accel, engine, release) if r.weights == "all"), None)

    def expert_emulation(self, accel: Accelerator, engine: str, release: str | None = None) -> EmulatedFallback | None:
        """The rule by which ``engine`` emulates this format's routed experts on ``accel``: one for every
        weight, else one for the experts alone (None: they run a kernel)."""
        return next(iter(sorted(self._emulations(accel, engine, release), key=lambda r: r.weights != "all")), None)

    def _emulations(self, accel: Accelerator, engine: str, release: str | None) -> list[EmulatedFallback]:
        if self.native_on(accel):
            return []
        return [r for r in self.emulated_fallbacks if r.engine == engine and accel.software in r.software
                and (not r.architectures or accel.architecture in r.architectures)
                and (r.since is None or release is None or release_key(release) >= release_key(r.since))
                and (r.before is None or (release is not None and release_key(release) < release_key(r.before)))]

    def fallback(self, engine: str) -> FallbackRule | None:
        """``fallback_engines``' rule for ``engine`` (None: none is recorded)."""
        return next((r for r in self.fallback_engines or () if r.engine == engine), None)

    def falls_back(self, engine: str, release: str | None = None) -> bool:
        """Whether ``engine`` (at ``release``; None: its planned release, a current one) runs this format where
        the accelerator has no native kernels for it: every engine where ``fallback_engines`` is not stated."""
        if self.fallback_engines is None:
            return True
        rule = self.fallback(engine)
        return rule is not None and (rule.since is None or release is None
                                     or release_key(release) >= release_key(rule.since))


class KvDtype(Frozen):
    id: str = Field(pattern=SLUG)
    aliases: tuple[str, ...] = ()
    bits_per_element: Bits
    residual_tokens: int = 0  # recent tokens kept at 16 bit (KIVI)
    notes: tuple[str, ...] = ()


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
    # the share of an Apple GPU's memory the engine takes as the device's, where no measured working set is
    # in the catalogue (llama.cpp's ggml-metal reports Metal's recommendedMaxWorkingSetSize as the total)
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

    def max_instance_gpus(self, software: Software | None = None) -> int | None:
        """The most GPUs one instance spans on ``software`` (None: no bound of the engine's own)."""
        return self.metal_max_instance_gpus if software == Software.METAL else None


class CalibrationConstant(Frozen):
    id: str = Field(pattern=SLUG)
    value: float
    unit: str
    fitted_on: tuple[str, ...] = ()  # measurement ids
    sources: tuple[str, ...] = ()  # source ids of published figures it was read or derived from
    method: str
    error: str  # how well it fits, in words and numbers


# the weight formats whose batch limits trtllm-bench tunes (its TUNED_QUANTS: NVFP4, FP8, FP8 block
# scales, no quantization; for others it keeps the engine's defaults), with the bytes per stored
# element it counts for each (its BYTES_PER_ELEM, keyed by the checkpoint's quant_algo)
BENCH_TUNED_FORMATS = {"nvfp4": 0.5, "fp8": 1.0, "fp8-block": 1.0, "bf16": 2.0, "fp16": 2.0}
