"""The parts of an engine's launch record beside its flags (``flags_schema.EngineFlags``): the settings
a flag may carry, the YAML options file some engines read settings from (TensorRT-LLM's
``--extra_llm_api_options``), the launcher's prompt budget, flags newer releases add, and the
environment a runner variant or a software stack needs (``data/engine_flags.yaml``)."""

from typing import Literal

from pydantic import Field, model_validator

from inferplan.catalog.schema import Frozen, Software

# the Deployment fields (and launch-only settings) a flag rule may carry
Setting = Literal[
    "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "enable_expert_parallel",
    "quantization", "kv_cache_dtype", "max_model_len", "gpu_memory_utilization", "max_num_seqs",
    "max_num_batched_tokens", "ubatch_size", "host", "port",
    # weights and KV cache in host RAM (memory/offload.py)
    "n_gpu_layers", "n_cpu_moe", "cpu_offload_gb", "kv_offloading_size", "kv_offloading_backend", "hicache_ratio",
    "hicache_size",
    "kt_num_gpu_experts", "kt_method", "kt_weight_path", "kt_max_deferred_experts_per_token",  # KTransformers' CPU experts
    "moe_runner_backend",  # the routed experts' kernel path (memory/expert_scales.py)
    "enforce_eager",  # no CUDA graphs (memory/cuda_graphs.py)
    "enable_extensible_kv_cache",  # the KV cache sized from measured memory, or from the profile (memory/extensible.py)
    "redundant_experts",  # expert copies that make the expert slots divide by the ranks (memory/expert_split.py)
    "max_mamba_cache_size", "mamba_full_memory_ratio",  # a hybrid model's recurrent-state pool (memory/state_pool.py)
]

class PlanBound(Frozen):
    """A setting the launcher takes no flag for that only bounds what the plan counts (mlx_lm.server's context:
    its KV cache grows with each request, so the plan's max_model_len is the longest request it sized for)."""

    note: str  # what the engine does instead, said beside a command planned with the setting
    source: str


class OptionRule(Frozen):
    """One setting an engine takes from its options file: the key it is written at and its value."""

    key: str = Field(pattern=r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$")  # dotted path (kv_cache_config.dtype)
    value: str | bool | None = None  # the key always takes this value (enable_attention_dp: true)
    values: dict[str, str] = {}  # inferplan id -> the engine's value; empty: the value as given
    no_flag: tuple[str, ...] = ()  # inferplan ids that need no entry (the engine's default)
    # data_parallel_size on TensorRT-LLM: the data-parallel ranks are also the ranks of this size
    # (attention data parallel runs across the tensor-parallel ranks), so this size is multiplied by it
    folds_into: Setting | None = None
    source: str
    note: str | None = None


class MoeBackendRule(Frozen):
    """The MoE backend an options file names for experts in one weight format, by GPU architecture: where the
    engine's default is not the path the plan counts (TensorRT-LLM's gpt-oss MXFP4 experts on Hopper run
    OpenAI's Triton kernels, its recommended backend there, while its MoeConfig default was CUTLASS). A GPU
    architecture not in ``backends`` gets no entry: the engine's default holds."""

    quantization: str  # a quantizations.yaml id
    model_architectures: tuple[str, ...] = ()  # config.json ``architectures`` it holds for (empty: every model)
    key: str = Field(pattern=r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$")  # dotted path (moe_config.backend)
    backends: dict[str, str] = Field(min_length=1)  # accelerators.yaml architecture -> the engine's backend name
    sources: tuple[str, ...] = Field(min_length=1)
    note: str


class OptionsFile(Frozen):
    """A YAML file of engine options, named on the command line by ``flag``."""

    flag: str
    file_name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    settings: dict[Setting, OptionRule] = Field(min_length=1)
    moe_backends: tuple[MoeBackendRule, ...] = ()
    accepted_keys: tuple[str, ...] = Field(min_length=1)  # the option model's top-level keys
    accepted_source: str
    source: str

    @model_validator(mode="after")
    def _keys_accepted(self) -> "OptionsFile":
        keys = [*(rule.key for rule in self.settings.values()), *(rule.key for rule in self.moe_backends)]
        unknown = sorted({key.split(".")[0] for key in keys} - set(self.accepted_keys))
        if unknown:
            raise ValueError(f"option keys not in accepted_keys: {', '.join(unknown)}")
        return self


# a model or launch feature chunked prefill may not combine with: sliding-window attention layers, MTP drafts
ChunkingFeature = Literal["sliding_window", "mtp"]


class PromptBudget(Frozen):
    """An engine that refuses a prompt longer than its per-step token budget (the launch's
    ``max_num_batched_tokens``, else ``default_tokens``) unless chunked prefill is on, which ``option``
    turns on in its options file (TensorRT-LLM's PyTorch backend: max_num_tokens 8192,
    enable_chunked_prefill off by default)."""

    default_tokens: int = Field(ge=1)  # the budget the launcher starts with when none is given
    option: OptionRule  # the options-file entry that lets a prompt run over several steps
    source: str  # where the default is read
    refusal_source: str  # where the refusal is read
    note: str
    # what the engine's own feature matrix says chunked prefill does not run with (a longer prompt is refused
    # unless the launch's budget holds it) or was not tested with (the command says so); combination_source: that matrix
    unsupported_with: tuple[ChunkingFeature, ...] = ()
    untested_with: tuple[ChunkingFeature, ...] = ()
    combination_source: str | None = None
    # model architectures (config.json `architectures`) whose own row of the engine's model-feature matrix
    # says chunked prefill runs, with its features: the generic combinations above do not rule on them
    chunked_architectures: tuple[str, ...] = ()
    chunked_source: str | None = None

    @model_validator(mode="after")
    def _combinations_sourced(self) -> "PromptBudget":
        if (self.unsupported_with or self.untested_with) and not self.combination_source:
            raise ValueError("unsupported_with / untested_with need combination_source")
        if self.chunked_architectures and not self.chunked_source:
            raise ValueError("chunked_architectures need chunked_source")
        if both := set(self.unsupported_with) & set(self.untested_with):
            raise ValueError(f"{', '.join(sorted(both))}: both unsupported_with and untested_with")
        return self


class LaterFlags(Frozen):
    """Flags a later release of the engine accepts than the one ``accepted`` was read at: a command
    that emits one says which release it needs and runs in ``images`` instead of the record's."""

    version: str
    flags: tuple[str, ...] = Field(min_length=1)
    images: dict[str, str] = {}  # accelerator vendor -> an image of that release
    source: str
    note: str | None = None


class VariantEnv(Frozen):
    """The environment that makes the engine run ``variant`` (a memory rule's, engine_memory_rules.yaml) at a
    release whose default is another variant: vLLM runs V1 from 0.8.0 unless ``VLLM_USE_V1=0``."""

    variant: str = Field(pattern=r"^V\d+$")
    env: dict[str, str] = Field(min_length=1)
    source: str


class RunnerEnv(Frozen):
    """The environment that makes the engine run one of its model runners (Deployment.model_runner): vLLM's
    VLLM_USE_V2_MODEL_RUNNER."""

    runner: Literal["V1", "V2"]
    env: dict[str, str] = Field(min_length=1)
    source: str


class SoftwareLaunch(Frozen):
    """What the engine's launch adds on one software stack: SGLang on Apple GPUs runs MLX only with
    ``SGLANG_USE_MLX=1`` and is started without CUDA graphs."""

    software: Software
    env: dict[str, str] = {}
    args: tuple[str, ...] = ()
    source: str
