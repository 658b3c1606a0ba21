"""A measured run as it is stored: the deployment it measured, its provenance and its points.

``read_runs`` turns result files plus what the user states (model, GPU, engine …) into validated
``MeasuredRun``s — every file or none: one bad file refuses the lot, naming the file and the key or
line. What a file states itself (vLLM's ``model_id``, llama-bench's ``build_commit``) fills in what
the user left out; what the user states wins.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import Catalog
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.input_files import text_of
from inferplan.inputs import Input, SafeName
from inferplan.measurements.formats import FORMATS, guess_format, parse
from inferplan.measurements.result_fields import Parsed
from inferplan.measurements.holds import check_holds_weights, check_stated
from inferplan.measurements.same_level import one_point_per_level
from inferplan.measurements.naming import ftype_quantization, run_model
from inferplan.measurements.serving_formats import server_kv_dtype
from inferplan.measurements.server_acceptance import FILE_DRAFTS, MeasuredAcceptance, file_acceptance
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.hardware import default_engine
from inferplan.memory.mtp import SPECULATIVE_METHODS
from inferplan.memory.offload import all_layers_on_gpu
from inferplan.performance.drafts import Acceptance, resolve_acceptance
from inferplan.performance.run_record import RUN_DRAFTS, RUN_OFFLOAD, RUN_SETTINGS, MeasuredPoint, UserRun, run_deployment

MAX_FILE_BYTES = 20_000_000
MAX_FILES = 100

UNSTATED = "unstated"  # who ran it, where the import names no one
# where a run's acceptance rate comes from (``draft_origin.py``): stated by the user, measured by the server, published
# for its draft, assumed by inferplan; unknown for a run stored before the record
AcceptanceOrigin = Literal["stated", "measured", "published", "assumed", "unknown"]


def origin_of(acceptance: Acceptance) -> AcceptanceOrigin:
    """The origin of a rate ``resolve_acceptance`` gave an import that stated none."""
    return "stated" if acceptance.basis == "stated" else "assumed" if acceptance.assumed else "published"


def by_whom(run: "MeasuredRun") -> str:
    """The words " by NAME" for a run whose import named who ran it, else none (no "by unstated")."""
    return "" if run.measured_by == UNSTATED else f" by {run.measured_by}"


def failed_requests(run: UserRun) -> int | None:
    """The requests of ``run`` that failed, over its points that count them (None: its file counts none)."""
    counted = [p.failed_requests for p in run.points if p.failed_requests is not None]
    return sum(counted) if counted else None


def failure_text(run: UserRun) -> str | None:
    """What every view of a run whose requests failed says of it (None: none failed, or none counted). Such a run is
    stored and planned on as measured, since its figures are what the requests that completed measured on the
    deployment; but it offered another load than it states (fewer requests in flight, its percentiles over the
    successes), so it is said wherever the run is shown, to be judged or deleted. A run none of whose requests
    completed is refused at import naming the client's key (it measured nothing)."""
    failed = [p for p in run.points if p.failed_requests]
    if not failed:
        return None
    where = ", ".join(f"{p.failed_requests:,}{f' of {p.requests:,}' if p.requests else ''} at concurrency {p.concurrency}"
                      for p in failed)
    return (f"requests failed ({where}): its figures are over the requests that completed, a different load from the "
            "one it states")


class RunProvenance(Input):
    """What the user says about the runs being imported (the deployment, who measured, when)."""

    model: str | None = Field(None, min_length=1, max_length=300)
    gpu: str | None = Field(None, min_length=1, max_length=200)
    gpus: int | None = Field(None, ge=1, le=100_000)
    tensor_parallel_size: int | None = Field(None, ge=1, le=1024, description="default: the file's metadata, else 1")
    pipeline_parallel_size: int | None = Field(None, ge=1, le=1024, description=(
        "default 1; an engine that splits by layer (llama.cpp) over several GPUs with no split stated: a stage per GPU"))
    data_parallel_size: int | None = Field(None, ge=1, le=1024, description="default: the GPUs over TP × PP")
    enable_expert_parallel: bool = False
    engine: str | None = Field(None, min_length=1, max_length=50,
                               description=("default: the format's engine (llama-bench: llamacpp), else the one "
                                            "the GPU's software stack runs by default (engines.yaml default_on)"))
    engine_version: str | None = Field(None, max_length=100)
    quantization: str | None = Field(None, max_length=50)
    format: str | None = Field(None, description=f"one of {', '.join(FORMATS)}; default: told from the file")
    measured_by: SafeName | None = None
    measured_on: dt.date | None = None
    driver: str | None = Field(None, max_length=100)
    note: str = Field("", max_length=2000)
    # the KV cache the engine reported at start-up (vLLM: "GPU KV cache size: N tokens"), to check the memory plan
    kv_cache_tokens: int | None = Field(None, ge=1, le=10**12)
    enforce_eager: bool = Deployment.model_fields["enforce_eager"]  # the run captured no CUDA graphs
    max_model_len: int | None = Field(None, ge=1, le=100_000_000, description="the context the engine ran with")
    # what the run kept in host RAM (weights, a host KV-cache tier), its KTransformers release and its host,
    # as a Deployment states them (RUN_OFFLOAD)
    n_gpu_layers: int | None = Deployment.model_fields["n_gpu_layers"]
    n_cpu_moe: int | None = Deployment.model_fields["n_cpu_moe"]
    cpu_offload_gb: float | None = Deployment.model_fields["cpu_offload_gb"]
    kv_offloading_size: float | None = Deployment.model_fields["kv_offloading_size"]
    kv_offloading_backend: Literal["native", "lmcache"] | None = Deployment.model_fields["kv_offloading_backend"]
    hicache_ratio: float | None = Deployment.model_fields["hicache_ratio"]
    hicache_size: float | None = Deployment.model_fields["hicache_size"]
    kt_num_gpu_experts: int | None = Deployment.model_fields["kt_num_gpu_experts"]
    kt_method: str | None = Deployment.model_fields["kt_method"]
    kt_release: str | None = Deployment.model_fields["kt_release"]
    host_sockets: int | None = Deployment.model_fields["host_sockets"]
    host_memory_gb: float | None = Deployment.model_fields["host_memory_gb"]
    host_memory_bandwidth_gb_per_s: float | None = Deployment.model_fields["host_memory_bandwidth_gb_per_s"]
    # the engine settings it was started with that change the prediction, as a Deployment states them (RUN_SETTINGS;
    # left out, or a KV cache dtype of auto: the engine's default); checked with the engine by ``holds.check_stated``
    kv_cache_dtype: str | None = Field(None, min_length=1, max_length=40,
                                       description="as the engine names it, e.g. fp8 (default: auto, the engine's own)")
    gpu_memory_utilization: float | None = Deployment.model_fields["gpu_memory_utilization"]
    max_num_seqs: int | None = Deployment.model_fields["max_num_seqs"]
    max_num_batched_tokens: int | None = Deployment.model_fields["max_num_batched_tokens"]
    ubatch_size: int | None = Deployment.model_fields["ubatch_size"]
    moe_runner_backend: str | None = Deployment.model_fields["moe_runner_backend"]
    # its speculative decoding (RUN_DRAFTS): draft tokens per step as the workload bounds them, how drafts were
    # made (SPECULATIVE_METHODS, checked with the model and engine by ``holds.check_stated``), the draft
    # checkpoint, and the acceptance rate per draft token it is predicted at (the engine's logged rate; it wins over the
    # acceptance the server measured that a vLLM or SGLang result file saves)
    speculative_tokens: int = Workload.model_fields["speculative_tokens"]
    speculative_method: str | None = Field(None, max_length=40, description=f"one of {', '.join(SPECULATIVE_METHODS)}")
    draft_model: str | None = Field(None, min_length=3, max_length=300, description=(
        "the EAGLE-3 or draft_model checkpoint: a repo path, or a catalogued draft's id (default with eagle3: the "
        "model's one catalogued draft)"))
    acceptance_rate: float | None = Field(None, ge=0, le=1, description=(
        "per draft token (default: the one the acceptance length a vllm or sglang result file saves gives, else a "
        "catalogued EAGLE-3 draft's published rate, else 0.7, assumed; none with ngram drafts: state it)"))

    @field_validator("kv_cache_dtype")
    @classmethod
    def _auto_is_the_default(cls, value: str | None) -> str | None:
        return None if value is not None and value.strip().lower() == "auto" else value


class MeasuredRun(UserRun):
    """One imported result file: the deployment and points the planner uses, and their provenance."""

    id: int | None = None  # set by the store
    file: str
    format: str
    measured_by: str
    driver: str | None = None
    note: str = ""
    kv_cache_tokens: int | None = None
    max_model_len: int | None = None
    measured_acceptance: MeasuredAcceptance | None = None  # the acceptance its server measured, as its file saves it
    # where its acceptance rate comes from, as its import records it (``draft_origin.py``; None: no draft tokens; a
    # run stored before the record reads as unknown)
    acceptance_origin: AcceptanceOrigin | None = None
    points: tuple[MeasuredPoint, ...] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _origin_unrecorded(cls, data: object) -> object:
        """A run with draft tokens and a rate but no record of where the rate came from (one stored before the record)
        reads as unknown; an import records it (``_drafted``)."""
        if isinstance(data, dict) and data.get("speculative_tokens") and data.get("acceptance_rate") is not None \
                and data.get("acceptance_origin") is None:
            return {**data, "acceptance_origin": "unknown"}
        return data

    def as_user_run(self) -> UserRun:
        return UserRun.model_validate({**self.model_dump(include=set(UserRun.model_fields)), "id": self.id or 0})


def _decode(name: str, data: bytes) -> str:
    """A result file's text: its bytes, or their gzip content (told by the bytes, not the name), as UTF-8."""
    if len(data) > MAX_FILE_BYTES:
        raise InvalidScenarioError(f"{name}: {len(data):,} bytes is more than a result file holds", field="file",
                                   allowed=f"at most {MAX_FILE_BYTES:,} bytes")
    return text_of(data, where=name, field="file", error=InvalidScenarioError, max_bytes=MAX_FILE_BYTES, encoding="utf-8-sig")


def read_run(catalog: Catalog, name: str, data: bytes, given: RunProvenance, *, today: dt.date | None = None) -> MeasuredRun:
    """One file into a validated run (errors name ``<file>: <key or line>``)."""
    text = _decode(name, data)
    fmt = given.format or guess_format(name, text)
    try:
        parsed = parse(text, fmt)
    except InferplanError as exc:
        raise InvalidScenarioError(f"{name}: {exc}", field=exc.field, allowed=exc.allowed) from None
    if not (given.model or parsed.meta.get("model")):
        raise InvalidScenarioError(f"{name}: the file names no model", field="model", allowed="a catalogue model id")
    if not given.gpu:
        raise InvalidScenarioError(f"{name}: say which accelerator ran it", field="gpu", allowed="a catalogue accelerator id")
    try:
        run = _run(catalog, name, fmt, parsed, given, today)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InvalidScenarioError(f"{name}: {first['msg']}", field=".".join(map(str, first["loc"]))) from None
    except InferplanError as exc:
        if exc.field in {v for k, v in parsed.meta.items() if k.endswith("_field")} | {*FILE_LAUNCH, *FILE_DRAFTS}:  # name the file
            raise InvalidScenarioError(f"{name}: {exc}", field=exc.field, allowed=exc.allowed, names=exc.names) from None
        raise
    check_stated(catalog, run)
    run = _drafted(catalog, run)
    check_holds_weights(catalog, run)
    return run


def _drafted(catalog: Catalog, run: MeasuredRun) -> MeasuredRun:
    """A run with draft tokens states how they were made, its EAGLE-3 draft and the acceptance rate it is predicted
    at: where the user left them out, as deploy launches a draft (``planned_speculative``: mtp where the model drafts
    with its own layers, else ngram; eagle3 with the model's one catalogued draft, and a catalogued draft named by
    its id as its repo) and the rate of the acceptance its server measured (``measured_acceptance``), else the rate
    perf prices that draft at (``resolve_acceptance``: the draft's published one, else the default; ngram drafts have
    none and are refused naming ``acceptance_rate``); and which of these the rate is (``acceptance_origin``)."""
    if not run.speculative_tokens:
        return run
    from inferplan.deploy.command import Speculative, planned_speculative

    spec = planned_speculative(run_deployment(run.model_copy(update={"speculative_method": None})), catalog,
                               Speculative(tokens=run.speculative_tokens, method=run.speculative_method,
                                           draft_model=run.draft_model))
    run = run.model_copy(update={"speculative_method": spec.method, "draft_model": spec.draft_model})
    if run.acceptance_rate is not None:
        return run.model_copy(update={"acceptance_origin": "stated"})
    if run.measured_acceptance is not None:
        return run.model_copy(update={"acceptance_rate": run.measured_acceptance.rate, "acceptance_origin": "measured"})
    resolved = resolve_acceptance(catalog, run_deployment(run), None)
    return run.model_copy(update={"acceptance_rate": resolved.rate, "acceptance_origin": origin_of(resolved)})


def _run(catalog: Catalog, name: str, fmt: str, parsed: Parsed, given: RunProvenance, today: dt.date | None) -> MeasuredRun:
    """The run the file and the user's statements describe: what the user states wins over what the
    file states (its model, weight format, tensor parallel size), which wins over the defaults."""
    meta = parsed.meta
    _server_layout_agrees(name, meta, given)
    given = given.model_copy(update={  # the layout and CUDA graphs a file states (SGLang's server_info), unless stated
        "pipeline_parallel_size": given.pipeline_parallel_size or _file_int(meta, "pipeline_parallel_size"),
        "data_parallel_size": given.data_parallel_size or _file_replicas(meta),
        "enforce_eager": given.enforce_eager or meta.get("enforce_eager") == "true",
        "kv_cache_dtype": _server_kv_dtype(catalog, meta, given)})
    model_field = "model" if given.model else meta.get("model_field", "model")
    spec, named_format = run_model(catalog, given.model or meta["model"], model_field, not given.model)
    accel = catalog.accelerator(given.gpu)
    engine = catalog.engine(given.engine or meta.get("engine") or default_engine(catalog, accel)).id
    quant = given.quantization or _file_quantization(catalog, meta) or named_format or spec.native_quantization or "bf16"
    tp = given.tensor_parallel_size or _file_int(meta, "tensor_parallel_size") or 1
    date = given.measured_on or _file_date(meta.get("date")) or (today or dt.date.today())
    _not_after_today(name, date, bool(given.measured_on), today or dt.date.today())
    pp, split_note = _pipeline_stages(catalog, engine, given, tp, meta)
    layout = {"pipeline_parallel_size": pp, "data_parallel_size": given.data_parallel_size,
              "enable_expert_parallel": given.enable_expert_parallel}
    gpus = given.gpus or tp * pp * (given.data_parallel_size or 1)
    _check_data_parallel(given.data_parallel_size, gpus, tp * pp)
    return MeasuredRun(file=name[-200:], format=fmt, model=spec.id, accelerator=accel.id, gpus=gpus,
                       tensor_parallel_size=tp, **layout, engine=engine,
                       engine_version=given.engine_version or meta.get("engine_version") or "unstated",
                       quantization=catalog.quantization(quant).id, measured_on=date, measured_by=given.measured_by or UNSTATED,
                       driver=given.driver, note="; ".join(n for n in (given.note, split_note) if n),
                       kv_cache_tokens=given.kv_cache_tokens,
                       max_model_len=given.max_model_len, points=tuple(parsed.points), enforce_eager=given.enforce_eager,
                       **_with_drafts(name, {f: getattr(given, f) for f in (*RUN_OFFLOAD, *RUN_SETTINGS, *RUN_DRAFTS)}
                                      | _file_launch(catalog, meta, given, engine, spec)
                                      | file_acceptance(meta, given.speculative_tokens)))


def _server_layout_agrees(name: str, meta: dict[str, str], given: RunProvenance) -> None:
    """A stated tensor, pipeline or data parallel size the server itself reported otherwise (SGLang's ``server_info``, its
    resolved arguments) is refused naming both: the run would be stored as a launch that did not run."""
    for field in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"):
        key, stated = meta.get(f"{field}_field", ""), getattr(given, field)
        reported = _file_replicas(meta) if field == "data_parallel_size" else _file_int(meta, field)
        if key.startswith("server_info.") and None not in (stated, reported) and stated != reported:
            raise InvalidScenarioError(f"{name}: stated {field} {stated}, but the server reported {key} {meta[field]}",
                                       field=field, allowed=f"leave it out, or what the server reported ({meta[field]})")


def _server_kv_dtype(catalog: Catalog, meta: dict[str, str], given: RunProvenance) -> str | None:
    """The run's KV cache dtype: the stated one, else the one the server reported (SGLang's
    ``server_info.kv_cache_dtype`` as the catalogue's id; its auto is the engine's default, None, which states
    nothing: a stated dtype beside it is kept, as a stated model or quantization is). A stated one the server named
    otherwise is refused naming both: the run would be predicted at another KV cache size."""
    named = meta.get("kv_cache_dtype") if meta.get("kv_cache_dtype_field") == "server_info.kv_cache_dtype" else None
    if named is None:
        return given.kv_cache_dtype
    reported = server_kv_dtype(named)
    if given.kv_cache_dtype is None:
        return reported
    try:
        stated = catalog.kv_cache_dtype(given.kv_cache_dtype).id
    except InferplanError:  # no dtype of that name: refused as stated, by ``check_stated``
        return given.kv_cache_dtype
    if reported is not None and stated != reported:
        raise InvalidScenarioError(f"stated kv_cache_dtype {given.kv_cache_dtype}, but the server reported "
                                   f"server_info.kv_cache_dtype {named} ({reported})", field="kv_cache_dtype",
                                   allowed=f"leave it out, or what the server reported ({reported})")
    return given.kv_cache_dtype


def _check_data_parallel(dp: int | None, gpus: int, per_copy: int) -> None:
    """A stated data-parallel size is the GPUs over TP × PP: a run whose GPUs say otherwise is refused (its record
    and export take the copies from the GPUs)."""
    if dp is not None and gpus != per_copy * dp:
        allowed = f"{gpus // per_copy} (the {gpus} GPUs over TP x PP {per_copy})" if gpus % per_copy == 0 else \
            f"none: {gpus} GPUs are no whole number of copies of TP x PP {per_copy}"
        raise InvalidScenarioError(f"data parallel {dp} with TP x PP {per_copy} is {dp * per_copy} GPUs, not the "
                                   f"{gpus} stated", field="data_parallel_size", allowed=allowed)


def _pipeline_stages(catalog: Catalog, engine: str, given: RunProvenance, tp: int, meta: dict[str, str]) -> tuple[int, str]:
    """The run's pipeline stages, and a note when they are not stated: an engine that splits a model by layer (the
    split a llama-bench file records, ``split_mode``, else ``engines.yaml`` ``multi_gpu_split``: llama.cpp's default
    ``--split-mode layer``) ran a run stated only by its GPU count as a stage per GPU; any other stated layout leaves
    one stage. A file's ``split_mode none`` ran on one GPU, so more stated GPUs are refused; ``row`` or ``tensor``
    splits each layer's tensors, which no default reads, so over more GPUs the split must be stated."""
    split = meta.get("split_mode") if engine == meta.get("engine") else None
    gpus = given.gpus or 1
    if split == "none" and max(gpus, tp, given.pipeline_parallel_size or 1, given.data_parallel_size or 1) > 1:
        raise InvalidScenarioError("the file's split_mode is none: llama.cpp ran the model on one GPU", field="split_mode",
                                   allowed="gpus 1 (and no tensor, pipeline or data parallel size above 1)", names=("gpus",))
    if given.pipeline_parallel_size is not None:
        return given.pipeline_parallel_size, ""
    if split in ("row", "tensor") and gpus > 1 and given.tensor_parallel_size is None:
        raise InvalidScenarioError(f"the file's split_mode is {split}: llama.cpp split each layer's tensors over the "
                                   f"{gpus} GPUs, a layout the import does not guess", field="split_mode",
                                   allowed="state the split it ran with (tensor_parallel_size, pipeline_parallel_size)",
                                   names=("tensor_parallel_size", "pipeline_parallel_size"))
    alone = gpus > 1 and tp == 1 and given.tensor_parallel_size is None and given.data_parallel_size is None
    by_layer = split == "layer" or split is None and catalog.engine(engine).multi_gpu_split == "layer"
    if not alone or given.enable_expert_parallel or not by_layer:
        return 1, ""
    name = catalog.engine(engine).name
    why = (f"the file's split_mode is layer, {name}'s split of a model by layer over its {gpus} GPUs" if split else
           f"no split stated, and {name} splits a model by layer over its {gpus} GPUs by default")
    return gpus, f"pipeline parallel {gpus}: {why}"


def _with_drafts(name: str, fields: dict[str, object]) -> dict[str, object]:
    """A run's fields, once stated and read from its file: how drafts were made, the draft and its acceptance rate
    apply only to a run with draft tokens per step — stated, or read from the file (a vLLM result's
    ``spec_decode_draft_tokens`` / ``spec_decode_num_drafts``)."""
    if not fields.get("speculative_tokens"):
        for field in ("speculative_method", "draft_model", "acceptance_rate"):
            if fields.get(field) is not None:
                raise InvalidScenarioError(f"{name}: {field} applies only with speculative decoding (draft tokens per "
                                           "step), and neither the run nor its file states any", field=field,
                                           allowed="leave it out, or 1 or more speculative_tokens beside it")
    return fields


# the run fields a llama-bench row's launch settings fill (``formats.LLAMA_LAUNCH_KEYS``): field -> the file's key
FILE_LAUNCH = {"n_gpu_layers": "n_gpu_layers", "n_cpu_moe": "n_cpu_moe", "max_num_batched_tokens": "n_batch",
               "ubatch_size": "n_ubatch", "kv_cache_dtype": "type_k"}


def _file_launch(catalog: Catalog, meta: dict[str, str], given: RunProvenance, engine: str, spec) -> dict[str, object]:
    """The launch settings the file records (llama-bench: -ngl, --n-cpu-moe, -b, -ub, the K and V cache types), as the
    run's fields, where the user stated none; a stated one that is not what the file records is refused naming both.
    -ngl past the model's layers (99) or negative (auto) is all on the GPU, as none stated; --n-cpu-moe 0 is none; the
    cache types are llama.cpp's names of the engine's KV cache dtypes (engine_flags.yaml), one for K and V alike. A run
    stated to be of another engine than the file's takes none (they are that engine's flags)."""
    if engine != meta.get("engine"):
        return {}
    if meta.get("no_kv_offload") in ("1", "true"):
        raise InvalidScenarioError("the file's no_kv_offload is on: the KV cache was kept in host RAM, which a run "
                                   "cannot state", field="no_kv_offload", allowed="a run with the KV cache offloaded (0)")
    if meta.get("type_k") is not None and meta.get("type_v", meta["type_k"]) != meta["type_k"]:
        raise InvalidScenarioError(f"the file's type_k {meta['type_k']!r} and type_v {meta['type_v']!r} differ: a run "
                                   "has one KV cache dtype", field="type_k", allowed="a run with type_k equal to type_v")
    layers = spec.architecture.num_layers if spec.architecture else None
    flags = flags_for(catalog, engine)
    rule = flags.settings.get("kv_cache_dtype") if flags else None
    kv_ids = {name: id_ for id_, name in (rule.values if rule else {}).items()}

    def as_run(field: str, value: object) -> object:
        if field == "n_gpu_layers":
            value = int(value)
            return None if value < 0 or (layers is not None and all_layers_on_gpu(value, layers)) else value
        if field == "kv_cache_dtype":
            return kv_ids.get(str(value), str(value))
        value = int(value)
        return None if field == "n_cpu_moe" and value == 0 else value

    filled: dict[str, object] = {}
    for field, key in FILE_LAUNCH.items():
        if key not in meta:
            continue
        if field == "kv_cache_dtype" and meta[key] not in kv_ids:
            raise InvalidScenarioError(f"the file's {key} {meta[key]!r} is no KV cache type {engine} plans", field=key,
                                       allowed=", ".join(kv_ids) or "none")
        try:
            recorded = as_run(field, meta[key])
        except ValueError:
            raise InvalidScenarioError(f"the file's {key} {meta[key]!r} is not a whole number", field=key) from None
        stated = getattr(given, field)
        if stated is None:
            filled[field] = recorded
        elif as_run(field, stated) != recorded:
            raise InvalidScenarioError(f"stated {field} {stated}, but the file's {key} is {meta[key]}", field=field,
                                       allowed=f"leave it out, or what the file records ({meta[key]})")
    return filled


def _file_quantization(catalog: Catalog, meta: dict[str, str]) -> str | None:
    field = meta.get("quantization_field")
    if not field:
        return None
    if field == "model_type":  # llama-bench: llama.cpp's file type name
        return ftype_quantization(catalog, meta["quantization"], field)
    return catalog.quantization(meta["quantization"], field).id


def _file_replicas(meta: dict[str, str]) -> int | None:
    """The data-parallel replicas a file states (SGLang's ``server_info.dp_size``), when more than one: one replica
    is what a run of GPUs = TP x PP is anyway, and a router in front of separate servers reports its one."""
    replicas = _file_int(meta, "data_parallel_size")
    return replicas if replicas and replicas > 1 else None


def _file_int(meta: dict[str, str], key: str) -> int | None:
    field = meta.get(f"{key}_field")
    if not field:
        return None
    text = meta[key]
    if not text.isdigit() or int(text) < 1:
        raise InvalidScenarioError(f"the file's {field} {text!r} is not a whole number of GPUs", field=field,
                                   allowed="a whole number, 1 or more")
    return int(text)


def _not_after_today(name: str, date: dt.date, stated: bool, today: dt.date) -> None:
    """A run dated after today (a day's grace for the time zones) would be taken for the newest measurement."""
    latest = today + dt.timedelta(days=1)
    if date > latest:
        said = f"measured_on {date}" if stated else f"{name}: the file's date {date}"
        raise InvalidScenarioError(f"{said} is after today: a run is dated the day it was measured",
                                   field="measured_on" if stated else "date", allowed=f"a date up to {latest}")


def _file_date(text: str | None) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text) if text else None
    except ValueError:
        return None


def read_runs(catalog: Catalog, files: list[tuple[str, bytes]], given: RunProvenance) -> list[MeasuredRun]:
    """Every file, or an error for the first one that is refused."""
    if not files:
        raise InvalidScenarioError("no result file given", field="files", allowed="1 or more files")
    if len(files) > MAX_FILES:
        raise InvalidScenarioError(f"{len(files)} files at once", field="files", allowed=f"at most {MAX_FILES}")
    runs = [read_run(catalog, name, data, given) for name, data in files]
    one_point_per_level(runs)
    return runs


def run_settings(run: MeasuredRun) -> str:
    """What a run states of its CUDA graphs, host RAM, its host, its engine settings and its speculative decoding, as the flags that
    stated them (none: ""); its acceptance rate only where the user stated it (else the comparison's notes say where
    it comes from, ``draft_origin.py``)."""
    stated = [(f, v) for f in ("enforce_eager", *RUN_OFFLOAD, *RUN_SETTINGS, *RUN_DRAFTS) if (v := getattr(run, f)) is not None
              and v is not False and not (f == "speculative_tokens" and v == 0)  # 0 draft tokens: none; 0 experts: stated
              and not (f == "acceptance_rate" and run.acceptance_origin != "stated")]
    return " ".join(_flag_text(f, v) for f, v in stated)


def _flag_text(field: str, value) -> str:
    """A stated field as its flag: a yes/no one alone, a number in its shortest form."""
    flag = f"--{field.replace('_', '-')}"
    return flag if value is True else f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}"
