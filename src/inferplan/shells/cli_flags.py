"""The deployment flags several commands share, declared once.

A command decorated with ``deployment_flags(*names)`` declares only its own parameters and a first
parameter ``flags``; the decorator puts the named deployment flags in the signature typer reads
(before the command's own) and passes their values to the command as ``flags``, a dict keyed like
``Deployment``'s fields (``cli_common.deployment_from`` turns it into the deployment). A new
deployment flag is added here, and to the groups of the commands that take it.

A command given ``model`` also takes the model as its one argument (``inferplan fit qwen3-32b``,
as ``vllm serve MODEL`` does), or as ``--model``; one of the two is required.
"""

import functools
import inspect
from collections.abc import Callable
from typing import Any, Optional

import typer

from inferplan.shells.cli_common import (
    current_context,
    fail,
    BatchedOpt,
    CpuOffloadOpt,
    DpOpt,
    DeploymentEngineOpt,
    EngineVersionOpt,
    EpOpt,
    GpuOpt,
    GpusOpt,
    HiCacheRatioOpt,
    HiCacheSizeOpt,
    HostBwOpt,
    HostMemOpt,
    HostSocketsOpt,
    KtGpuExpertsOpt,
    KtMethodOpt,
    KtReleaseOpt,
    KvOffloadOpt,
    KvOpt,
    MaxLenOpt,
    ModelOpt,
    NCpuMoeOpt,
    NglOpt,
    PpOpt,
    QuantOpt,
    SeqsOpt,
    SystemOpt,
    TpOpt,
    UbatchOpt,
    UtilOpt,
)

# Deployment field -> (type, typer option)
FLAGS: dict[str, tuple[Any, Any]] = {
    "model": (Optional[str], ModelOpt),
    "gpu": (Optional[str], GpuOpt),
    "system": (Optional[str], SystemOpt),
    "gpus": (Optional[int], GpusOpt),
    "tensor_parallel_size": (Optional[int], TpOpt),
    "pipeline_parallel_size": (Optional[int], PpOpt),
    "data_parallel_size": (Optional[int], DpOpt),
    "enable_expert_parallel": (bool, EpOpt),
    "gpu_memory_utilization": (Optional[float], UtilOpt),
    "max_model_len": (Optional[int], MaxLenOpt),
    "max_num_batched_tokens": (Optional[int], BatchedOpt),
    "ubatch_size": (Optional[int], UbatchOpt),
    "max_num_seqs": (Optional[int], SeqsOpt),
    "kv_cache_dtype": (str, KvOpt),
    "quantization": (Optional[str], QuantOpt),
    "engine": (Optional[str], DeploymentEngineOpt),
    "engine_version": (Optional[str], EngineVersionOpt),
    "moe_kernel": (Optional[str], typer.Option(
        None, "--moe-kernel", help="vLLM MXFP4 experts without native MXFP4: marlin | triton | humming, the kernel the install runs "
                                   "(default: what the release's pip install picks).")),
    "topk_topp_sampler": (Optional[str], typer.Option(
        None, "--topk-topp-sampler", help="vLLM V1: flashinfer | pytorch, the top-k/top-p sampler the install runs "
                                          "(default: the release's own).")),
    "model_runner": (Optional[str], typer.Option(
        None, "--model-runner", help="vLLM from 0.20: V1 | V2, the GPU model runner (VLLM_USE_V2_MODEL_RUNNER); V2 counts "
                                     "no CUDA-graph estimate before 0.29; V2 only from 0.34 (default: the release's choice for the model).")),
    "moe_runner_backend": (Optional[str], typer.Option(
        None, "--moe-runner-backend", help="SGLang: the routed experts' kernel path, one of its parser's choices, e.g. marlin (default: auto, the engine's).")),
    "enforce_eager": (bool, typer.Option(
        False, "--enforce-eager", help="vLLM: capture no CUDA graphs, so none are estimated or reserved (speed "
                                      "figures still assume CUDA graphs, and say so).")),
    "sched_spread": (bool, typer.Option(
        False, "--sched-spread", help="Ollama: OLLAMA_SCHED_SPREAD set, an Ollama tag spread over all the GPUs even where "
                                      "one holds it (default: on one GPU where its predicted VRAM is at most 80 % of it).")),
    "enable_extensible_kv_cache": (Optional[bool], typer.Option(
        None, "--enable-extensible-kv-cache/--no-enable-extensible-kv-cache",
        help="vLLM from 0.34: size the KV cache from the memory measured after warm-up (on) or from the start-up "
             "profile at gpu_memory_utilization 0.92 unless stated (off) (default: vLLM's choice, on for CUDA and "
             "ROCm, off for a NixlConnector pool on ROCm and on CUDA with no IMEX channel, as the driver comes).")),
    "mtp_draft": (bool, typer.Option(
        False, "--mtp-draft", help="Speculative decoding with the model's own MTP layers (vLLM method=mtp, SGLang NEXTN, "
                                   "TensorRT-LLM MTP): count the memory the engine allocates for them.")),
    "concurrency": (Optional[int], typer.Option(
        None, "--concurrency", help="Report the largest context at this many concurrent "
                                       "sequences (past the engine's running cap the rest queue).")),
    "kv_bytes_per_token": (Optional[float], typer.Option(
        None, "--kv-bytes-per-token", help="State the KV size per token for a model whose architecture is unpublished.")),
    "n_gpu_layers": (Optional[int], NglOpt),
    "n_cpu_moe": (Optional[int], NCpuMoeOpt),
    "cpu_offload_gb": (Optional[float], CpuOffloadOpt),
    "kt_num_gpu_experts": (Optional[int], KtGpuExpertsOpt),
    "kt_method": (Optional[str], KtMethodOpt),
    "kt_release": (Optional[str], KtReleaseOpt),
    "host_sockets": (Optional[int], HostSocketsOpt),
    "host_memory_gb": (Optional[float], HostMemOpt),
    "host_memory_bandwidth_gb_per_s": (Optional[float], HostBwOpt),
    "kv_offloading_size": (Optional[float], KvOffloadOpt),
    "kv_offloading_backend": (Optional[str], typer.Option(
        None, "--kv-offloading-backend", help="vLLM: native | lmcache, what keeps the host KV tier (default native).")),
    "hicache_ratio": (Optional[float], HiCacheRatioOpt),
    "hicache_size": (Optional[float], HiCacheSizeOpt),
    "max_mamba_cache_size": (Optional[int], typer.Option(
        None, "--max-mamba-cache-size", help="SGLang: a hybrid model's recurrent-state slots (default: solved from the "
                                             "memory ratio).")),
    "mamba_full_memory_ratio": (Optional[float], typer.Option(
        None, "--mamba-full-memory-ratio", help="SGLang: a hybrid model's state pool memory : attention KV pool memory "
                                                "(default 0.9).")),
    "wired_limit_mb": (Optional[int], typer.Option(
        None, "--wired-limit-mb", help="macOS sysctl iogpu.wired_limit_mb the Mac runs with, MiB (default: macOS's "
                                       "own GPU limit: two thirds of memory up to 32 GiB, three quarters "
                                       "above).")),
    "other_gpu_memory_gb": (Optional[float], typer.Option(
        None, "--other-gpu-memory-gb", help="GiB of each GPU other processes hold when the engine starts (a desktop's "
                                            "display, another server); counted as the release's rule counts it (default 0).")),
}

LAYOUT = ("model", "gpu", "system", "gpus", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
          "enable_expert_parallel")
FORMAT = ("kv_cache_dtype", "quantization", "engine", "engine_version", "moe_kernel", "moe_runner_backend", "topk_topp_sampler",
          "model_runner")
LIMITS = ("gpu_memory_utilization", "max_model_len", "max_num_batched_tokens", "ubatch_size", "max_num_seqs",
          "other_gpu_memory_gb", "enforce_eager", "enable_extensible_kv_cache", "sched_spread", "max_mamba_cache_size",
          "mamba_full_memory_ratio", "wired_limit_mb")
# the offload and host-memory flags a launch command takes (deploy; acceptance and measurements import take
# these, the KTransformers release and the host perf prices: performance/run_record.py RUN_OFFLOAD)
LAUNCHED_HOST = ("n_gpu_layers", "n_cpu_moe", "cpu_offload_gb", "kv_offloading_size", "kv_offloading_backend", "hicache_ratio",
                 "hicache_size", "kt_num_gpu_experts", "kt_method", "host_memory_gb")
HOST = ("n_gpu_layers", "n_cpu_moe", "cpu_offload_gb", "kt_num_gpu_experts", "kt_method", "kt_release", "host_sockets",
        "host_memory_gb", "host_memory_bandwidth_gb_per_s", "kv_offloading_size", "hicache_ratio", "hicache_size")


def deployment_flags(*names: str, options: dict[str, Any] | None = None) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command the named deployment flags (see the module docstring); ``options`` replaces the
    option (its help) of a named flag whose default differs in this command."""
    unknown = [n for n in (*names, *(options or {})) if n not in FLAGS]
    if unknown:
        raise ValueError(f"no deployment flag {unknown}")
    declared = {n: (options or {}).get(n, FLAGS[n][1]) for n in names}

    subject = {MODEL_ARGUMENT: (Optional[str], ModelArgument)} if "model" in names else {}

    def decorate(fn: Callable[..., None]) -> Callable[..., None]:
        own = [p for p in inspect.signature(fn).parameters.values() if p.name != "flags"]
        shared = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=kind)
                  for n, (kind, default) in {**subject, **{n: (FLAGS[n][0], declared[n]) for n in names}}.items()]

        @functools.wraps(fn)
        def command(**kwargs: Any) -> None:
            given = {n: kwargs.pop(n) for n in names}
            if subject:
                given["model"] = model_given(kwargs.pop(MODEL_ARGUMENT), given["model"])
            return fn(flags=given, **kwargs)

        command.__signature__ = inspect.Signature([*shared, *own])  # type: ignore[attr-defined]
        command.__annotations__ = {**{n: kind for n, (kind, _) in subject.items()}, **{n: FLAGS[n][0] for n in names},
                                   **{k: v for k, v in fn.__annotations__.items() if k != "flags"}}
        return command

    return decorate


MODEL_ARGUMENT = "model_argument"  # the parameter holding the model given as the command's argument
ModelArgument = typer.Argument(None, metavar="MODEL", show_default=False,
                               help="The model, as --model takes it (give one of the two).")


def model_given(argument: str | None, option: str | None, *, required: bool = True) -> str | None:
    """The model a command is given as its argument or ``--model``; two different ones, or neither
    where it is ``required``, is refused naming ``--model``."""
    if argument is not None and option is not None and argument.strip() != option.strip():
        fail(f"--model: {option!r}, and {argument!r} as the argument: give the model once",
             field="--model", allowed="one model, as the argument or --model")
    model = option if option is not None else argument
    if model is None and required:
        ctx = current_context()
        fail(f"--model: required by '{ctx.command_path if ctx is not None else 'inferplan'}'", field="--model",
             allowed="a model id, as the argument or --model")
    return model
