"""What every ``inferplan`` sub-command shares: consoles, flags, and turning a library error into
one line naming the flag, with exit code 2."""

import importlib
import json
import re
import sys
from typing import Optional

import typer
from rich.console import Console

from inferplan.errors import InferplanError
from inferplan.units import parse_token_count

class LazyModule:
    """A module imported on first use: ``inferplan --help`` and a command that never renders a table
    do not pay for importing the renderers and the catalogue schema behind them."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)


console = Console(emoji=False)  # ":name:" in a model or file name stays text (and the emoji table is not loaded)
err_console = Console(stderr=True, soft_wrap=True, emoji=False)

# a domain field (a Deployment, Workload or library argument's name) -> the flag a user typed:
# every flag below is the field's name with dashes, as the options further down spell them
FLAGS = {name: "--" + name.replace("_", "-") for name in (
    "model", "gpu", "system", "gpus", "engine", "quantization", "kv_cache_dtype", "kv_bytes_per_token",
    "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "enable_expert_parallel",
    "gpu_memory_utilization", "max_model_len", "max_num_batched_tokens", "ubatch_size", "max_num_seqs",
    "input_len", "output_len", "concurrency", "speculative_tokens", "acceptance_rate", "prefix_cache_hit_rate",
    "backend", "models", "systems", "quantizations", "interactivity", "baseline", "report",
    "n_gpu_layers", "n_cpu_moe", "cpu_offload_gb", "host_memory_gb", "host_memory_bandwidth_gb_per_s",
    "kv_offloading_size", "kv_offloading_backend", "hicache_ratio", "hicache_size", "prefix_cache_host_share", "engine_version",
    "kt_num_gpu_experts", "kt_method", "kt_release", "host_sockets", "moe_kernel", "topk_topp_sampler",
    "moe_runner_backend", "model_runner", "mtp_draft", "enforce_eager", "other_gpu_memory_gb", "speculative_method", "draft_model", "all_models", "db",
    "sched_spread", "max_mamba_cache_size", "mamba_full_memory_ratio", "wired_limit_mb",
    "enable_extensible_kv_cache",  # its on spelling: the CLI takes it as a pair (PAIRED)
)}
PAIRED = frozenset({"enable_extensible_kv_cache"})  # switches the CLI takes as --x / --no-x

TOKENS_HELP = "Tokens as vLLM reads them: 131072, 128k (128,000), 128K (131,072) or 25.6k."


def token_count(value):
    """typer's parser for a token-count option: ``units.parse_token_count``, its refusal a usage error."""
    if value is None or isinstance(value, int):  # the option's default
        return value
    try:
        return parse_token_count(value)
    except InferplanError as exc:
        raise typer.BadParameter(str(exc)) from exc


def TokensOpt(default, *names: str, help: str):
    """An option that takes a token count (``--max-model-len 128k``), saying the forms in its help."""
    return typer.Option(default, *names, parser=token_count, metavar="TOKENS", help=f"{help} {TOKENS_HELP}")


# options shared by several commands
ModelOpt = typer.Option(None, "--model", show_default=False, help="Catalogue id/alias, config.json path, model folder or cached repo id (or the command's argument).")
GpuOpt = typer.Option(None, "--gpu", help="Accelerator id or alias (H100, RTX 4090 ...; a Mac's size: 'M4 Max 64GB'), or local: this machine's (inferplan detect).")
SystemOpt = typer.Option(None, "--system", help="System id (hgx-b200, gb300-nvl72 ...).")
DeploymentEngineOpt = typer.Option(None, "--engine", help="vllm | sglang | trtllm | llamacpp | mlx | ktransformers "
                                                          "(default: llamacpp on Apple silicon, else vllm)")
EngineVersionOpt = typer.Option(None, "--engine-version", help="Engine release whose memory rule applies, e.g. 0.6.4 or '0.8.5 V0' (default: the engine's current release; fit names it).")
GpusOpt = typer.Option(None, "--gpus", help="GPUs in the deployment; without parallel sizes, one instance across them as the engine launches it (tensor parallel, else TP × PP) within one host; beyond one host, copies of the smallest instance that holds the model.")
TpOpt = typer.Option(None, "--tensor-parallel-size", "-tp", help="GPUs one layer is split across (tensor parallel; default 1, with --gpus alone: as the engine launches, or beyond one host the smallest instance's).")
PpOpt = typer.Option(None, "--pipeline-parallel-size", "-pp", help="Consecutive groups of layers on different GPUs (pipeline stages; default 1).")
DpOpt = typer.Option(None, "--data-parallel-size", "-dp", help="Engine instances side by side (data-parallel copies; default: the GPUs left; with --gpus alone, 1 within one host; beyond one host, or with --system alone, as many copies of the smallest instance that holds the model as fill the GPUs; vLLM's ranks of a stated size split the routed experts between them, with or without --enable-expert-parallel).")
EpOpt = typer.Option(False, "--enable-expert-parallel", help="Spread a mixture-of-experts model's experts over the GPUs.")
UtilOpt = typer.Option(None, "--gpu-memory-utilization", help="Share of each GPU's memory the engine may use (engine default when left out).")
MaxLenOpt = TokensOpt(None, "--max-model-len", help="Context length in tokens one sequence may reach (default: the model's own).")
# perf and simulate size the engine for the requests they are asked about where no context is stated
RequestMaxLenOpt = TokensOpt(None, "--max-model-len", help="Context length in tokens one sequence may reach (default: the request's, input + output; fit and deploy plan the model's own).")
SimulatedMaxLenOpt = TokensOpt(None, "--max-model-len", help="Context length in tokens one sequence may reach (default: the mean request's input + output, or a trace's longest request; fit and deploy plan the model's own).")
BatchedOpt = TokensOpt(None, "--max-num-batched-tokens", help="Tokens per engine step (TensorRT-LLM: per pipeline micro-batch, its max_num_tokens; default: the engine's, or the longest prompt where it cannot chunk the model).")
UbatchOpt = TokensOpt(None, "--ubatch-size", help="llama.cpp n_ubatch (default 512, at most --max-num-batched-tokens, its n_batch).")
SeqsOpt = typer.Option(None, "--max-num-seqs", help="Running-sequence cap per data-parallel rank (an instance of DP N runs N times it; TensorRT-LLM: per pipeline micro-batch, its max_batch_size).")
SpeculativeTokensOpt = typer.Option(0, "--speculative-tokens", min=0, max=32, help="Draft tokens proposed per step (0: no speculative decoding).")
SpeculativeMethodOpt = typer.Option(
    None, "--speculative-method", help="ngram | draft_model | eagle3 | mtp, with --speculative-tokens (default: mtp where the model "
                                       "has MTP layers and the engine drafts with them, as perf plans it; else ngram where the engine's "
                                       "launch has it, and no default on one whose launch has not).")
DraftCheckpointOpt = typer.Option(
    None, "--draft-model", help="Draft checkpoint. With --speculative-method eagle3: an EAGLE-3 draft (a repo path, "
                                "or a catalogued draft's id; default: the model's one catalogued draft, on the engines "
                                "its publisher shows; one not catalogued: its memory is not counted). With draft_model "
                                "(required): a smaller model (a catalogue id, repo or config.json path), its weights "
                                "and KV counted on vLLM.")
DraftAcceptanceOpt = typer.Option(None, "--acceptance-rate", help=(
    "Per draft token, with --speculative-tokens (default: a catalogued EAGLE-3 draft's published rate, else 0.7, assumed; "
    "none for ngram, stated or run where no method is named: state it)."))
KvOpt = typer.Option("auto", "--kv-cache-dtype", help="auto | bf16 | fp16 | fp8 | int8 | int4 | q8_0 | q4_0 | int2-kivi: each engine takes the ones it runs (engines.yaml kv_cache_dtypes).")
QuantOpt = typer.Option(None, "--quantization", "-q", help="bf16 | fp8 | int8 | awq | gptq | nvfp4 | mxfp4 | q4_k_m | q8_0 ...")
NglOpt = typer.Option(None, "--n-gpu-layers", "-ngl", help="llama.cpp: layers on the GPU; the others' weights and KV cache in host RAM, run by the CPU.")
NCpuMoeOpt = typer.Option(None, "--n-cpu-moe", help="llama.cpp: keep the experts of the first N layers in host RAM.")
KtGpuExpertsOpt = typer.Option(None, "--kt-num-gpu-experts", help="KTransformers: routed experts per MoE layer on the GPU; the others in host RAM, run by the CPU (default 0).")
KtMethodOpt = typer.Option(None, "--kt-method", help="KTransformers: CPU expert kernels, AMXINT4 | AMXINT8 | LLAMAFILE | BF16 | FP8 ... (default: what the launch command gives the weight format).")
KtReleaseOpt = typer.Option(None, "--kt-release", help="KTransformers release priced: kt-kernel (SGLang, default) | v0.3-preview | v0.2.")
HostSocketsOpt = typer.Option(None, "--host-sockets", help="CPU sockets (NUMA nodes) of the host running the experts (default 1).")
CpuOffloadOpt = typer.Option(None, "--cpu-offload-gb", help="vLLM, SGLang (whole GiB): GiB of weights per GPU kept in host RAM (copied to the GPU each step).")
HostMemOpt = typer.Option(None, "--host-memory-gb", help="Host RAM, GiB (default: the --system card's; refused on unified memory).")
HostBwOpt = typer.Option(None, "--host-memory-bandwidth-gb-per-s", help="Host DRAM bandwidth, GB/s (default: dual-channel DDR5-5600).")
KvOffloadOpt = typer.Option(None, "--kv-offloading-size", help="vLLM: GiB of host RAM for a second KV-cache tier (native or LMCache).")
HiCacheRatioOpt = typer.Option(None, "--hicache-ratio", help="SGLang HiCache: host KV pool as a multiple of the GPU KV pool.")
HiCacheSizeOpt = typer.Option(None, "--hicache-size", help="SGLang HiCache: host KV pool per GPU, GB (overrides --hicache-ratio).")
JsonOpt = typer.Option(False, "--json", help="Print JSON.")
ExplainOpt = typer.Option(False, "--explain", help="Also print the assumptions and the track record behind the answer.")


def current_context():
    """The running command's click context (typer 0.2x runs a vendored click, older ones click
    itself), None outside a command."""
    for module in ("typer._click.globals", "click"):
        try:
            ctx = importlib.import_module(module).get_current_context(silent=True)
        except (ImportError, AttributeError):
            continue
        if ctx is not None:
            return ctx
    return None


def _json_requested() -> bool:
    """Whether the running command was given ``--json``: its parsed flags, else the command line."""
    ctx = current_context()
    return bool(ctx.params.get("as_json")) if ctx is not None else "--json" in sys.argv[1:]


def fail(message: str, *, field: str | None = None, allowed: str | None = None, detail: str | None = None) -> None:
    """One line on stderr and exit code 2; under ``--json`` also the error as JSON on stdout
    (``{"error": {"field", "message", "allowed"}}``), so a script reading stdout sees what failed.
    The line ends with ``(allowed: …)`` whenever ``allowed`` is given."""
    line = f"{message} (allowed: {allowed})" if allowed and "(allowed:" not in message else message
    err_console.print(f"[bold red]error:[/] {line}", highlight=False)
    if _json_requested():
        try:
            sys.stdout.write(json.dumps({"error": {"field": field, "message": detail or message, "allowed": allowed}}) + "\n")
        except BrokenPipeError:  # the reader of stdout went away: the line on stderr says it, the status stays 2
            pass
    raise typer.Exit(code=2)


def run(fn, *args, **kwargs):
    """Call a library function; turn expected errors into a one-line message naming the flag, and
    exit code 2."""
    return run_naming(FLAGS, fn, *args, **kwargs)


def run_naming(names: dict[str, str], fn, *args, **kwargs):
    """``run`` where an error's domain field is named as ``names`` says (``{}``: as the library
    names it, e.g. a scenario file's keys)."""
    from pydantic import ValidationError  # loaded already by whatever raises it

    from inferplan.shells.pydantic_errors import allowed_by, error_message

    try:
        return fn(*args, **kwargs)
    except InferplanError as exc:
        exc.field = names.get(exc.field or "", exc.field)
        fail_naming(names, exc)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = flags_in(error_message(first), named_in(names, None))
        loc = ".".join(str(p) for p in first["loc"])
        if not loc:  # a rule over several inputs (a GPU or a system): its message names the flags
            fail(message)
        flag = FLAGS.get(loc, f"--{loc.replace('_', '-')}" if "." not in loc else loc)
        fail(f"{flag}: {message}", field=flag, allowed=allowed_by(first), detail=message)


def flagged_cells(matrix):
    """A what-fits matrix whose cell errors name the flag (--max-model-len) instead of the field."""
    def flagged(cell):
        flag = FLAGS.get(cell.error_field or "")
        if cell.error is None:
            return cell
        error = cell.error.replace(f"{cell.error_field}: ", f"{flag}: ", 1) if flag else cell.error
        return cell.model_copy(update={"error_field": flag or cell.error_field,
                                       "error": flags_in(error, named_in(FLAGS, cell.error_names))})

    return matrix.model_copy(update={"cells": tuple(flagged(c) for c in matrix.cells)})


def emit_json(obj) -> None:
    sys.stdout.write(obj.model_dump_json(indent=2) if hasattr(obj, "model_dump_json") else json.dumps(obj, indent=2, default=str))
    sys.stdout.write("\n")


def deployment_from(flags: dict):
    """The Deployment a command's deployment flags describe (``cli_flags.deployment_flags``)."""
    from inferplan.inputs.deployment import Deployment

    return deployment(**{k: v for k, v in flags.items() if k in Deployment.model_fields})


def deployment(**kwargs):
    from inferplan.inputs.deployment import Deployment

    if (kwargs.get("gpu") or "").strip().lower() == "local":
        kwargs["gpu"] = local_gpu()
    return run(Deployment, **{k: v for k, v in kwargs.items() if v is not None})


def local_gpu() -> str:
    """``--gpu local``: the catalogue id of this machine's card when it matches one exactly, else
    ``local`` (planned with the read memory; ``catalog_for`` adds it)."""
    from inferplan.catalog.detect import LOCAL_ID, local_accelerator, read_machine
    from inferplan.catalog.loader import load_catalog

    catalog = run(load_catalog)
    machine = run(read_machine, catalog, probe_once())
    if not machine.has_gpu:
        run(local_accelerator, catalog, machine, probe_once())  # says plainly there is no GPU (exit 2)
    return machine.groups[0].matched or LOCAL_ID


def probe_once() -> dict[str, str]:
    """This machine's tool outputs, read once per command."""
    from inferplan.catalog.detect import probe

    global _PROBED
    if _PROBED is None:
        _PROBED = probe()
    return _PROBED


_PROBED: dict[str, str] | None = None


def catalog_for(d):
    """The catalogue a deployment is planned with: with this machine's accelerator as ``local`` when
    ``--gpu local`` (catalog/detect.py), else the shipped one (None: the library loads it)."""
    if (d.gpu or "").strip().lower() != "local":
        return None
    from inferplan.catalog.detect import local_catalog
    from inferplan.catalog.loader import load_catalog

    return run(local_catalog, run(load_catalog), probe_once())[0]


def workload(**kwargs):
    from inferplan.inputs.workload import Workload

    concurrency = kwargs.pop("concurrency")
    if concurrency is not None and concurrency != "max":
        try:
            concurrency = int(concurrency)
        except ValueError:
            fail("--concurrency: must be a whole number or 'max'", field="--concurrency", allowed="a whole number or max")
    return run(Workload, concurrency=1 if concurrency is None else concurrency, **{k: v for k, v in kwargs.items() if v is not None})


def split_list(value: Optional[str], flag: str = "") -> Optional[list[str]]:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        fail(f"{flag or 'list'}: {value!r} names nothing; give comma-separated ids or leave it out for the default", field=flag or None)
    return items


def fail_naming(names: dict[str, str], exc: InferplanError, field: str | None = None, *, own: dict[str, str] | None = None,
                allowed_names: dict[str, str] | None = None) -> None:
    """``fail`` with a library error whose message and allowed text say the inputs they name (the
    error's ``names``) as ``names`` gives them, e.g. flags; ``field``: the flag at fault, if not the
    error's own (already said as a flag); ``own``: a command's own inputs, said wherever they stand.
    A located error (a file's place) names the file's keys: they stay as the file spells them.
    ``allowed_names``: an allowed text that is a list of these inputs (each item one of them) says every
    one as its flag; an allowed text in prose keeps its words as the message does."""
    field = field or exc.field
    said = {**(named_in(names, exc.names) if exc.names is not None or not exc.located else {}), **(own or {})}
    listed = exc.allowed and allowed_names and all(item.strip() in allowed_names for item in exc.allowed.split(","))
    exc.field, exc.allowed = field, flags_in(exc.allowed, allowed_names if listed else said) if exc.allowed else None
    message = flags_in(str(exc), said)
    line = f"{field}: {message}" if field and not exc.located else message
    fail(line + (f" (allowed: {exc.allowed})" if exc.allowed else ""), field=field, allowed=exc.allowed, detail=message)


def named_in(names: dict[str, str], listed: tuple[str, ...] | None) -> dict[str, str]:
    """Of ``names``, the inputs an error's prose names: those it lists (``InferplanError.names``), or
    where it lists none, each spelled with an underscore ("model" is also a word)."""
    if listed is not None:
        return {k: v for k, v in names.items() if k in listed}
    return {k: v for k, v in names.items() if "_" in k}


def flags_in(message: str, names: dict[str, str]) -> str:
    """``message`` with each domain field it names as a whole word (``request_rate_per_s``) said as the
    flag ``names`` gives it (``--request-rate``); a flag already in it, or a quoted word (a value:
    ``'draft_model'``), is left as it is."""
    if not names:
        return message
    fields = "|".join(re.escape(k) for k in sorted(names, key=len, reverse=True))
    return re.sub(rf"(?<![\w.'-])({fields})(?!\w|\.\w|')", lambda m: names[m.group(1)], message)
