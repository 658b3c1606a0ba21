"""The settings an engine instance runs with that shape its memory budget: the memory fraction, batch limits,
KV block size, context and CUDA-graph capture, as ``memory/settings.py`` derives them for a deployment."""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.running_defaults import RunningDefault


@dataclass(frozen=True)
class EngineSettings:
    memory_fraction: float  # gpu_memory_utilization / mem_fraction_static / free fraction
    max_num_batched_tokens: int
    max_num_seqs: int
    block_tokens: int
    prefill_micro_batch_tokens: int  # the physical batch of a prompt's matrix products (llama.cpp n_ubatch)
    # max_num_seqs and max_num_batched_tokens bound each pipeline micro-batch, not the instance
    # (engines.yaml pp_batch_limits: TensorRT-LLM)
    limits_per_micro_batch: bool = False
    # max_num_seqs is the instance's, each pipeline micro-batch admitting max_num_seqs // pp of it, at least one
    # (engines.yaml pp_batch_limits: divided; SGLang)
    seqs_divided_over_micro_batches: bool = False
    # an engine that sizes its KV cache by the context (llama.cpp, MLX): the context after its padding
    context_tokens: int | None = None
    flash_attention: bool = True  # llama.cpp -fa: whether its compute graph builds a K·Q score matrix
    topk_topp_sampler: str | None = None  # vLLM V1: the install's top-k/top-p sampler (None: the release's own)
    cuda_graphs: bool = True  # False: --enforce-eager, no graphs captured
    graph_batch: int | None = None  # the largest decode batch captured as a CUDA graph, where its rule states it
    decode_query_len: int = 1  # tokens per sequence in a decode step: 1 + speculative draft tokens
    other_gpu_memory_bytes: float = 0.0  # held on each GPU by other processes when the engine starts (a display)
    # kept free on each GPU by the setting that placed the weights (llama-server --fit's margin), and that setting
    kept_free_bytes: float = 0.0
    kept_free_by: str | None = None
    release: str | None = None  # the engine release planned at (None: the rule's own releases, not one of them)
    model_runner: str | None = None  # vLLM: "V1" or "V2" as stated (VLLM_USE_V2_MODEL_RUNNER); None: the release's default
    # the stated input that switches a rule's measured KV sizing off (MeasuredSizing.off_with), None: none does
    measured_sizing_off: str | None = None
    fraction_stated: bool = False  # the memory fraction is the deployment's own, not the release's default
    kv_connector: str | None = None  # the KV connector a disaggregated pool's instance launches with (None: none)
    running_note: str | None = None  # where the release sets the running requests itself (SGLang with a draft), why
    running_cause: str | None = None  # the same, only what sets them and its sources (a headline's words)
    # the release's running requests as it derives them from the KV pool, applied once the pool is sized (SGLang)
    running_from_pool: RunningDefault | None = None
    # a release that runs a prompt whole (no chunked prefill, none stated: SGLang before 0.2.13): the prompt tokens
    # a step of several prompts stops at; max_num_batched_tokens is then the step of the longest prompt, the memory peak
    whole_prompt_step_tokens: int | None = None

    def step_budget_tokens(self, longest_prompt_tokens: float) -> int:
        """The tokens a step takes for a workload whose longest prompt is ``longest_prompt_tokens``: the chunk; where
        prompts run whole, the step of several prompts, or the longest prompt alone where it is longer."""
        if self.whole_prompt_step_tokens is None:
            return self.max_num_batched_tokens
        return max(self.whole_prompt_step_tokens, int(-(-longest_prompt_tokens // 1)))
