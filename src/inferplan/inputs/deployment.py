"""The deployment a memory question is asked about: one immutable, validated object.

Field names follow vLLM's flags (``tensor_parallel_size``, ``gpu_memory_utilization`` …) so the
CLI, an API request and a scenario file all describe the same thing the same way.
"""

from typing import Literal

from pydantic import AliasChoices, Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from inferplan.inputs import Input, not_blank

MAX_CONTEXT_TOKENS = 100_000_000  # far above any model's limit; guards against absurd input
MAX_GPUS = 100_000
# the smallest KV bytes per token a stated figure may have: a model with a handful of attention
# layers at a 2-bit cache still needs several KiB, so less is a typo (1 byte made 55 billion tokens)
MIN_KV_BYTES_PER_TOKEN = 1024
SPECULATIVE_METHODS = ("ngram", "draft_model", "eagle3", "mtp")  # how drafts are made: deploy, fit, perf and a scenario
# the draft field each method fills (ngram drafts from the tokens already seen and holds none)
METHOD_DRAFT_FIELDS = {"mtp": "mtp_draft", "eagle3": "eagle3_draft", "draft_model": "draft_checkpoint"}


class Deployment(Input):
    model: str = Field(min_length=1, description="catalogue id/alias, config.json path, model folder or cached repo id")
    gpu: str | None = Field(None, validation_alias=AliasChoices("gpu", "accelerator"),  # accelerator: as fit answers
                            description="accelerator id or alias (e.g. H100, RTX 4090); accelerator is taken too")
    system: str | None = Field(None, description="system id (e.g. hgx-b200); sets the GPU and count")
    gpus: int | None = Field(None, ge=1, le=MAX_GPUS, description="GPUs in the whole deployment")
    tensor_parallel_size: int = Field(1, ge=1, le=1024, description="GPUs each layer is split over")
    pipeline_parallel_size: int = Field(1, ge=1, le=1024, description="pipeline stages the layers are split into")
    data_parallel_size: int | None = Field(None, ge=1, le=MAX_GPUS, description="ranks the engine runs side by side "
                                           "(default: gpus ÷ (tensor × pipeline) parallel size)")
    enable_expert_parallel: bool = Field(False, description="spread a mixture of experts' experts over the GPUs")
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1, description="fraction of GPU memory the engine may use")
    max_model_len: int | None = Field(None, ge=1, le=MAX_CONTEXT_TOKENS, description="context tokens (prompt + "
                                      "output) one request may hold (default: the model's context)")
    max_num_batched_tokens: int | None = Field(None, ge=1, le=MAX_CONTEXT_TOKENS, description="tokens one engine "
                                               "step schedules (default: the engine's)")
    ubatch_size: int | None = Field(None, ge=1, le=MAX_CONTEXT_TOKENS,
                                    description="llama.cpp n_ubatch: the micro-batch a prompt chunk runs in (default 512)")
    flash_attention: bool | None = Field(None, description="llama.cpp -fa on/off (default: the release's rule: auto, i.e. on, "
                                         "from b6325; off before)")
    max_num_seqs: int | None = Field(None, ge=1, le=1_000_000, description="sequences running at once, per "
                                     "data-parallel rank (default: the engine's)")
    kv_cache_dtype: str = Field("auto", description="KV-cache type id (auto: the model's own)")
    quantization: str | None = Field(None, description="weight format id (default: the model's own build)")
    engine: str = Field("vllm", description="engine id: vllm, sglang, trtllm, llamacpp, mlx, ktransformers")
    moe_runner_backend: str | None = Field(
        None, max_length=40, pattern=r"^[a-z0-9][a-z0-9_.-]*$",
        description="SGLang --moe-runner-backend: the routed experts' kernel path, e.g. marlin (default: the engine's own choice)")
    engine_version: str | None = Field(None, max_length=40, description="the engine release whose memory-budgeting rule "
                                       "applies, e.g. 0.6.4 or '0.8.5 V0' (default: the engine's current release, "
                                       "engine_memory_rules.yaml current_release)")
    moe_kernel: str | None = Field(None, max_length=40, description="the kernel the install runs quantized experts with where "
                                   "the engine has a choice (vLLM MXFP4 on GPUs without native MXFP4: marlin, triton or humming; default: "
                                   "what the release's pip install picks, engine_moe_kernels.yaml)")
    topk_topp_sampler: Literal["flashinfer", "pytorch"] | None = Field(
        None, description="vLLM V1: the top-k/top-p sampler the install runs, as its log names it ('Using FlashInfer for "
                          "top-p & top-k sampling.' or the PyTorch-native fallback); FlashInfer's does not sort the "
                          "vocabulary in the start-up profile (default: the release's own, engine_memory_rules.yaml)")
    model_runner: Literal["V1", "V2"] | None = Field(
        None, description="vLLM from 0.20: the GPU model runner, set with VLLM_USE_V2_MODEL_RUNNER (1: V2, 0: V1) in the "
                          "launch command's environment; V2 counts no CUDA-graph estimate before 0.29.0, and "
                          "0.34.0 has no V1 (default: the release's own choice for the model, engine_memory_rules.yaml model_runners)")
    enforce_eager: bool = Field(False, description="vLLM --enforce-eager: no CUDA graphs are captured, so none are estimated "
                                "at start-up or reserved after the KV cache is sized")
    enable_extensible_kv_cache: bool | None = Field(
        None, description="vLLM from 0.34.0 --enable-extensible-kv-cache / --no-enable-extensible-kv-cache: the KV cache "
                          "sized from the memory measured after warm-up (on) or from the start-up profile at "
                          "gpu_memory_utilization 0.92 where none is stated (off) (default: the release's own choice, "
                          "on for CUDA and ROCm, off in a NixlConnector pool on ROCm and on CUDA with no IMEX "
                          "channel, as the driver comes)")
    kv_connector: str | None = Field(
        None, max_length=80, description="the KV connector the instance launches with as one instance of a disaggregated "
                                         "pool (vLLM --kv-transfer-config kv_connector: NixlConnector); it can turn the "
                                         "extensible KV cache off (engine_memory_rules.yaml connector_refusals, "
                                         "runtime_fallbacks) "
                                         "(default: none, a whole instance)")
    mtp_draft: bool = Field(False, description="speculative decoding with the model's own multi-token-prediction layers "
                            "(vLLM --speculative-config method=mtp, SGLang NEXTN, TensorRT-LLM MTP): the memory the engine "
                            "allocates for them is counted (engine_mtp_rules.yaml)")
    eagle3_draft: str | None = Field(None, min_length=3, max_length=300, description="speculative decoding with this "
                                     "EAGLE-3 draft checkpoint (a Hugging Face repo): the memory the engine holds for "
                                     "it is counted where the catalogue lists it (eagle3_drafts.yaml)")
    draft_checkpoint: str | None = Field(None, min_length=3, max_length=300, description="speculative decoding by the "
                                         "draft_model method with this smaller model (a catalogue id or alias, a repo, or "
                                         "a config.json path): vLLM's draft weights and its layers' KV entries in the "
                                         "target's pool are counted (memory.draft_model)")
    speculative_tokens: int = Field(0, ge=0, le=32, description="draft tokens the engine verifies per decode step "
                                    "(--speculative-tokens, any draft method; 0: none): vLLM captures its CUDA graphs "
                                    "for 1 + this many tokens per sequence")
    speculative_method: Literal[SPECULATIVE_METHODS] | None = Field(
        None, description="how the speculative_tokens are drafted: ngram (from the tokens already seen: no draft "
                          "weights or KV), draft_model, eagle3 or mtp; left out: mtp where the model ships MTP layers "
                          "and the engine drafts with them (as perf plans it), else ngram")
    concurrency: int | None = Field(None, ge=1, le=10_000_000, description="sequences served at once, for the largest-context answer")
    kv_bytes_per_token: float | None = Field(
        None, ge=MIN_KV_BYTES_PER_TOKEN, le=1e9,
        description="stated KV bytes per token (whole instance, at least 1 KiB) for models whose architecture is not "
                    "published, or a KV compression no engine ships",
    )

    # weight offload to host memory, named as the engines name their flags (engines.yaml offload_settings)
    n_gpu_layers: int | None = Field(None, ge=0, le=100_000,
                                     description="llama.cpp -ngl: layers on the GPU, the output layer among them from PR #18148 (the rest in host RAM, run by the CPU)")
    n_cpu_moe: int | None = Field(None, ge=0, le=100_000,
                                  description="llama.cpp --n-cpu-moe: the routed experts of the first N layers in host RAM")
    cpu_offload_gb: float | None = Field(None, ge=0, le=1e6,
                                         description="vLLM --cpu-offload-gb: GiB of weights per GPU kept in host RAM")
    kt_num_gpu_experts: int | None = Field(
        None, ge=0, le=100_000,
        description="KTransformers --kt-num-gpu-experts: routed experts per MoE layer on the GPU (the rest in host RAM, run by the CPU)")
    kt_method: str | None = Field(
        None, min_length=1, max_length=40,
        description="KTransformers --kt-method: the CPU expert kernels (AMXINT4, AMXINT8, LLAMAFILE, ...; default: the release's)")
    kt_release: str | None = Field(
        None, min_length=1, max_length=40,
        description="KTransformers release whose CPU path is priced: kt-kernel (SGLang, the default), v0.3-preview or v0.2")
    host_sockets: int | None = Field(None, ge=1, le=16,
                                     description="CPU sockets (NUMA nodes) of the host running the experts (default 1)")
    host_memory_gb: float | None = Field(None, gt=0, le=1e6, description="host RAM of the machine, GiB (default: the system card's; refused on unified memory, where it is the accelerator's memory)")
    other_gpu_memory_gb: float | None = Field(
        None, ge=0, le=1e6, description="GiB of each GPU's memory other processes hold when the engine starts (a desktop's "
                                        "display and compositor, another server); each release's rule counts it as its "
                                        "budgeting does (default 0)")
    wired_limit_mb: int | None = Field(
        None, ge=1, le=2**24, description="macOS sysctl iogpu.wired_limit_mb the Mac runs with, MiB: what the Apple GPU "
                                          "may wire of unified memory (default: macOS's own recommended working set)")
    sched_spread: bool = Field(False, description="Ollama OLLAMA_SCHED_SPREAD: spread an Ollama tag's model over all the GPUs "
                               "even where one would hold it (default: on one GPU where its predicted VRAM is at most 80 % of it)")
    # KV cache in a host-RAM tier (engines.yaml offload_settings): vLLM native/LMCache, SGLang HiCache
    kv_offloading_size: float | None = Field(None, gt=0, le=1e6,
                                             description="vLLM --kv-offloading-size: GiB of host RAM for the KV cache, whole instance")
    kv_offloading_backend: Literal["native", "lmcache"] | None = Field(
        None, description="vLLM --kv-offloading-backend: what keeps the host KV tier, native (vLLM's own, the default) or "
                          "lmcache; with kv_offloading_size")
    hicache_ratio: float | None = Field(None, gt=0, le=1e3,
                                        description="SGLang --hicache-ratio: host KV pool as a multiple of the GPU KV pool")
    hicache_size: float | None = Field(None, gt=0, le=1e6, description="SGLang --hicache-size: host KV pool per GPU, GB (overrides the ratio)")
    # a hybrid (Mamba / linear-attention) model's recurrent-state pool (memory/state_pool.py)
    max_mamba_cache_size: int | None = Field(None, ge=1, le=10_000_000, description="SGLang --max-mamba-cache-size: "
                                             "recurrent-state slots of a hybrid model (default: solved from the ratio)")
    mamba_full_memory_ratio: float | None = Field(None, gt=0, le=1e3, description="SGLang --mamba-full-memory-ratio: "
                                                  "a hybrid model's state pool : attention KV pool memory (default 0.9)")
    host_memory_bandwidth_gb_per_s: float | None = Field(
        None, gt=0, le=1e5, description="the host's DRAM bandwidth, GB/s (default: offload.yaml's assumed desktop figure)")

    @field_validator("model", "gpu", "system", "quantization", "engine", "kv_cache_dtype", "engine_version", "moe_kernel",
                     "kv_connector", mode="before")
    @classmethod
    def _not_blank(cls, value: object, info: ValidationInfo) -> object:
        return not_blank(value, required=cls.model_fields[info.field_name].is_required())

    @field_validator("model_runner", mode="before")
    @classmethod
    def _runner_upper(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_draft_method(self) -> "Deployment":
        method = self.speculative_method
        other = [(m, f) for m, f in METHOD_DRAFT_FIELDS.items() if m != method and getattr(self, f)]
        if method is not None and other:  # located at speculative_method, the field that names the method
            own, field = other[0]
            raise ValidationError.from_exception_data(type(self).__name__, [InitErrorDetails(
                type=PydanticCustomError("draft_method", "{field} drafts by {own}, not {method}",
                                         {"field": field, "own": own, "method": method,
                                          "allowed": f"{own} with {field}, or leave {field} out"}),
                loc=("speculative_method",),
                input=method)])
        return self

    @model_validator(mode="after")
    def _hardware_named(self) -> "Deployment":
        if not (self.gpu or self.system):  # located at gpu, so each shell names its own flag or JSON key
            raise ValidationError.from_exception_data(type(self).__name__, [InitErrorDetails(
                type=PydanticCustomError("hardware_missing", "name a GPU, or a system in its place",
                                         {"allowed": "an accelerator id or alias, or a system id"}),
                loc=("gpu",),
                input=None)])
        return self

    # the engine setting that chose n_gpu_layers / n_cpu_moe where none was stated (llama-server --fit, for an Ollama
    # tag's build: memory/fit_placement.py); None: the placement is the one stated, or the engine's own. Not an input:
    # a plan sets it on its copy, and two deployments differing in it are planned apart
    _placement_chosen_by: str | None = PrivateAttr(None)

    @property
    def placement_chosen_by(self) -> str | None:
        """The engine setting that chose this deployment's weight placement (None: stated, or the engine's own)."""
        return self._placement_chosen_by

    # why the runner chose the -b / -ub it is planned at where none was stated (Ollama's automatic generation
    # batch: memory/ollama_batch.py); None: the batch is the one stated, or the engine's default. Not an input either
    _batch_chosen_by: str | None = PrivateAttr(None)

    @property
    def batch_chosen_by(self) -> str | None:
        """Why the runner chose this deployment's -b / -ub (None: stated, or the engine's default)."""
        return self._batch_chosen_by

    # why the runner chose the GPUs the model runs on where the layout would span others (Ollama loads a tag that
    # fits one GPU on that GPU alone, and one server spreads a tag over all of a system named alone, or over all the
    # GPUs with OLLAMA_SCHED_SPREAD: memory/ollama_batch.py); None: as the layout plans. Not an input either
    _gpus_chosen_by: str | None = PrivateAttr(None)
    _gpus_given: int | None = PrivateAttr(None)  # the GPU count given where the runner chose its GPUs (all it sees)

    @property
    def gpus_chosen_by(self) -> str | None:
        """Why the runner runs this deployment on its ``gpus`` rather than as the layout plans the GPUs given
        (None: as given)."""
        return self._gpus_chosen_by

    @property
    def gpus_given(self) -> int | None:
        """The GPUs given, where the runner chose the ones the deployment runs on (None: it runs on ``gpus``)."""
        return self._gpus_given

    def on_gpus(self, chosen_by: str, gpus: int, given: int | None = None) -> "Deployment":
        """A copy on ``gpus`` of the GPUs given (``given``; default: its ``gpus``), marked as the runner's choice
        (``chosen_by`` says why)."""
        copy = self.model_copy(update={"gpus": gpus})
        copy._gpus_chosen_by, copy._gpus_given = chosen_by, given or self.gpus
        return copy

    def batched(self, chosen_by: str, tokens: int) -> "Deployment":
        """A copy run at a -b and -ub of ``tokens``, marked as chosen (``chosen_by`` says why) rather than stated."""
        copy = self.model_copy(update={"ubatch_size": tokens, "max_num_batched_tokens": tokens})
        copy._batch_chosen_by = chosen_by
        return copy

    def placed(self, chosen_by: str, changes: dict[str, int | None] | None = None) -> "Deployment":
        """A copy with the weight placement ``changes`` (n_gpu_layers, n_cpu_moe; none: every layer on the GPUs)
        marked as chosen by ``chosen_by`` rather than stated."""
        copy = self.model_copy(update=changes or {})
        copy._placement_chosen_by = chosen_by
        return copy
