"""The command that starts one serving instance of a planned deployment.

Every flag name and value mapping comes from ``catalog/data/engine_flags.yaml``, and ``flag_args.py`` turns each
group of settings into arguments by it; this module chooses which settings a deployment states and puts the
command together. A setting the engine takes only from its options file
(TensorRT-LLM's ``--extra_llm_api_options`` YAML) is written there, and the command carries the
file (``LaunchFile``) and a ``script`` that writes it before starting the engine. A setting the
engine cannot take raises ``UnsupportedSettingError`` naming the setting and the engine.
"""

from __future__ import annotations

import json
import shlex
from typing import Literal

import yaml
from pydantic import Field

from inferplan.catalog.flag_parts_schema import LaterFlags
from inferplan.catalog.flags_schema import EngineFlags, flags_for
from inferplan.memory.hardware import build_note, with_default_engine
from inferplan.memory.fit import as_planned, plan_memory
from inferplan.memory.host_budget import unstated_host_note
from inferplan.memory.hardware import resolve_hardware
from inferplan.memory.eagle3 import planned_draft
from inferplan.memory.mtp import (OTHER_METHOD, SPECULATIVE_METHODS, check_launch_drafts, check_mtp_layers, with_mtp_draft,
                                  with_unnamed_drafts)
from inferplan.memory.page_cache import cold_start_comment
from inferplan.catalog.memory_rules import memory_rule
from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.deploy.macos import wired_limit_note, wired_limit_step
from inferplan.deploy.copies import copies_note
from inferplan.catalog.flag_scope import check_flag_release, check_parallel_release, option_rule, per_rank_value, runs_attention_dp
from inferplan.deploy.flag_args import (emit, flag_rule, kv_args, merge_options, offload_args, parallel_args,
                                        quantization_args, set_option)
from inferplan.deploy.nodes import HostCommand, Target, env_words, hosts_launch, hosts_script
from inferplan.deploy.checkpoint import served_model
from inferplan.deploy.checks import one_instance
from inferplan.deploy.image import planned_engine_release
from inferplan.deploy.variant_env import runner_env, software_launch, variant_env
from inferplan.deploy.kt_args import kt_args
from inferplan.deploy.ollama_launch import MODELFILE, ollama_build, ollama_script, ollama_start
from inferplan.deploy.moe_backend import moe_backend
from inferplan.deploy.prompt_budget import chunked_prefill
from inferplan.deploy.stated import slot_context, stated_or_default
from inferplan.deploy.router import role_args, router_notes, worker_ports
from inferplan.deploy.pool_kv import check_launch_connector, pool_kv_notes
from inferplan.errors import InferplanError, InvalidScenarioError, UnknownModelError, UnsupportedSettingError
from inferplan.inputs import Input
from inferplan.inputs.deployment import Deployment
from inferplan.deploy.output import Output
from inferplan.memory.expert_split import planned_redundant_experts
from inferplan.memory.extensible import check_extensible_kv_cache
from inferplan.memory.resolve import resolve_model
from inferplan.memory.step_budget import with_step_budget

Role = Literal["both", "prefill", "decode"]
DEFAULT_HOST = "0.0.0.0"  # listen on every interface: a container's port is reached from outside it
MAX_DRAFT_TOKENS = 64  # far above the 1-16 drafts engines are run with; guards against a typo


class Speculative(Input):
    """Speculative decoding to switch on: how drafts are made and how many tokens per step."""

    method: Literal[SPECULATIVE_METHODS] | None = Field(
        None, description="how drafts are made; left out: mtp where the model ships MTP layers and the engine drafts "
                          "with them (as perf plans the draft), else ngram")
    tokens: int = Field(ge=1, le=MAX_DRAFT_TOKENS, description="draft tokens proposed per step")
    draft_model: str | None = Field(None, min_length=1, description="draft checkpoint (draft_model, eagle3)")


class LaunchFile(Output):
    """A file the command reads, written before it starts (an engine's options file)."""

    path: str  # as the command names it
    text: str


class LaunchCommand(Output):
    engine: str
    engine_version: str | None  # the engine release the deployment is planned at (None: none on record)
    flags_checked_against: str  # the release (or commit) of the parser the flag names were checked against
    role: Role
    argv: tuple[str, ...]
    text: str  # argv as one shell line, each argument quoted where the shell needs it
    files: tuple[LaunchFile, ...] = ()
    script: str  # shell lines that write ``files`` (a here-document each), then ``text``
    checkpoint: str  # what is served: a Hugging Face repo, a GGUF file or the model as given
    port: int
    env: dict[str, str] = {}  # environment the command is started with (GPU pinning, per-worker ports)
    notes: tuple[str, ...] = ()
    hosts: int = 1  # hosts one instance runs over; above 1, argv is host 0's and script every host's
    host_commands: tuple[HostCommand, ...] = ()  # what each host runs, host 0 (the head) first
    runner: str | None = None  # what argv starts where it is not the engine's launcher: ollama, for an Ollama tag
    # client commands run once the server answers (runner ollama: pull the tag, create a model from the Modelfile)
    then: tuple[tuple[str, ...], ...] = ()


def engine_flags(catalog: Catalog, engine: str) -> EngineFlags:
    """An engine's flag record (``engine`` as in a Deployment: an id or alias)."""
    record = catalog.engine(engine, field_name="engine")
    flags = flags_for(catalog, record.id)
    if flags is None:
        raise UnsupportedSettingError(f"no launch flags are recorded for {record.name}", field="engine",
                                      allowed=", ".join(sorted(f.engine for f in catalog.engine_flags)))
    return flags


def engine_takes(catalog: Catalog, engine: str, setting: str) -> bool:
    """Whether ``engine``'s launcher takes ``setting`` (a Deployment field, ``speculative`` or
    ``disaggregation``) as a flag or in its options file: what can be planned on that engine
    without a launch error."""
    flags = engine_flags(catalog, engine)
    if setting == "speculative":
        return flags.speculative is not None
    if setting == "disaggregation":
        return flags.disaggregation is not None
    return setting in flags.settings or option_rule(flags, setting) is not None


def launch_command(d: Deployment, catalog: Catalog | None = None, *, role: Role = "both",
                   speculative: Speculative | None = None, host: str = DEFAULT_HOST, port: int | None = None,
                   files_dir: str | None = None, worker: int | None = None,
                   devices: tuple[int, ...] | None = None, target: Target = "shell",
                   address: str | None = None, pool_hosts: bool = False,
                   host_gpus: int | None = None) -> LaunchCommand:
    """The argv that starts one instance of ``d`` (TP × PP GPUs, times DP when it is stated); an
    options file is named by its bare name (a pool's side: prefixed by its role), or under ``files_dir``
    (where a container mounts it). ``worker``: the instance's index among a disaggregated deployment's
    workers on one host, which gives it its own further ports (``DisaggregationRule.worker_ports``);
    ``devices``: the host's GPUs it is pinned to (the vendor's visible-devices variable); ``address``: a pool
    worker's address its peers reach it at, where the engine is told it (``DisaggregationRule.peer_address``;
    default ``PREFILL_HOST`` / ``DECODE_HOST``, the router note's names); ``pool_hosts``: in a pools script, a pool
    instance over several hosts, its head its first host (``deploy.nodes.POOL_ADDRESSING``); ``host_gpus``: the GPUs its
    hosts have, where fewer than the catalogue's host (``memory.host_span.host_split``). A setting the launcher
    has no flag for that only bounds the plan (``EngineFlags.plan_bounds``: MLX's context, which each request
    bounds) is said in a note, so the flags fit and perf took start the same deployment here."""
    catalog = catalog or load_catalog()
    d = with_default_engine(d, catalog)
    speculative = planned_speculative(d, catalog, speculative)
    d = as_planned(with_draft(d, catalog, speculative), catalog)  # --gpus or a system alone: fit's layout
    d, step_note = with_step_budget(d, catalog)  # the step fit plans where the engine cannot chunk the longest prompt
    flags = engine_flags(catalog, d.engine)
    named = ollama_build(d, catalog) if role == "both" else None
    if named is not None:  # an Ollama tag's build: Ollama's own commands
        return _ollama_command(d, catalog, flags, ollama_start(d, catalog, named, flags, host=host, port=port),
                               devices)
    check_launch_connector(d, flags, role)
    served = served_model(d, catalog, flags)
    if role != "both" and flags.disaggregation is not None:  # a pool's worker listens where the router looks
        port = port or flags.disaggregation.first_worker_port
    port = port or flags.default_port
    argv = [*flags.launcher, *served.argv]
    options: dict = {}  # what goes to the engine's options file
    check_parallel_release(flags, planned_engine_release(d, catalog), d.data_parallel_size or 1, d.enable_expert_parallel)
    argv += parallel_args(d, flags, options)
    if spare := planned_redundant_experts(d, catalog):  # SGLang: expert slots that divide by the ranks
        argv += emit(flag_rule(flags, "redundant_experts"), spare)
    argv += quantization_args(served, flags)
    argv += kv_args(d, catalog, flags, options)
    moe = moe_backend(d, catalog, flags)  # TensorRT-LLM: gpt-oss's experts on Hopper
    if moe is not None:
        set_option(options, moe[0], moe[1])
    bounds: list[str] = []  # the plan's bounds the launcher takes no flag for
    d = slot_context(d, catalog, flags)
    for setting in ("max_model_len", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "ubatch_size",
                    "moe_runner_backend", "max_mamba_cache_size", "mamba_full_memory_ratio"):
        value = stated_or_default(d, flags, setting)
        if value is not None and setting in flags.plan_bounds:
            bounds.append(f"{setting} {value}: {flags.plan_bounds[setting].note}")
        elif value is not None:
            rule = flag_rule(flags, setting)
            check_flag_release(rule, setting, planned_engine_release(d, catalog))
            value = value * (getattr(d, rule.multiplied_by) or 1) if rule.multiplied_by else value
            argv += emit(rule, per_rank_value(d, flags, rule, value))
    if d.enforce_eager:  # no CUDA graphs, as the plan counts none
        argv += emit(flag_rule(flags, "enforce_eager"), True)
    if d.enable_extensible_kv_cache is not None:  # the KV cache sized as the plan sizes it
        connector = flags.disaggregation.connector(role) if role != "both" and flags.disaggregation else None
        check_extensible_kv_cache(catalog, d, resolve_hardware(catalog, d).accel, connector)
        argv += emit(flag_rule(flags, "enable_extensible_kv_cache"), d.enable_extensible_kv_cache)
    chunked, chunked_notes = chunked_prefill(d, catalog, flags, speculative.method if speculative else None)
    merge_options(options, chunked)  # TensorRT-LLM refuses a longer prompt without it
    argv += offload_args(d, flags)
    kt_argv, kt_notes = kt_args(d, catalog, flags, served.quantization)  # KTransformers' CPU experts
    argv += kt_argv
    if speculative is not None:
        argv += _speculative_args(speculative, flags, options)
    stack_env, stack_args = software_launch(d, flags, catalog)  # SGLang on an Apple GPU: MLX, no CUDA graphs
    argv += stack_args
    env = {**stack_env, **variant_env(d, flags, catalog), **runner_env(d, flags)}  # VLLM_USE_V1=0, VLLM_USE_V2_MODEL_RUNNER
    if role != "both":
        argv += role_args(role, flags)
        merge_options(options, flags.disaggregation.options)
        for name, value in ({} if worker is None else worker_ports(flags.disaggregation, worker)).items():
            argv, env = (argv + [name, str(value)], env) if name.startswith("-") else (argv, {**env, name: str(value)})
        if flags.disaggregation.peer_address.env:  # vLLM's NIXL side channel: localhost unless told
            env = {**env, flags.disaggregation.peer_address.env: address or f"{role.upper()}_HOST"}
    if devices:
        env = {**_visible_devices(d, catalog, devices), **env}
    listen = tuple(emit(flag_rule(flags, "host"), host) + emit(flag_rule(flags, "port"), port))
    files = ()
    if options:
        name = flags.options_file.file_name if role == "both" else f"{role}_{flags.options_file.file_name}"
        files = (LaunchFile(path=f"{files_dir.rstrip('/')}/{name}" if files_dir else name,
                            text=yaml.safe_dump(options, sort_keys=False)),)
    named = [flags.options_file.flag, files[0].path] if files else []
    argv_t = tuple(str(a) for a in (*argv, *listen, *named))
    release_planned = planned_engine_release(d, catalog)
    spread = hosts_launch(d, catalog, flags, release_planned, engine=tuple(str(a) for a in (*argv, *named)), listen=listen,
                          before=tuple(here_document(f) for f in files), machine=wired_limit_step(d), target=target,
                          env=env,
                          attention_dp=runs_attention_dp(d, flags), pool=pool_hosts, host_gpus=host_gpus)
    spans = spread.notes if spread else ()
    spread = spread if spread and spread.commands else None  # commands only where the engine has a multi-host launch
    argv_t = spread.commands[0].argv if spread else argv_t
    later = later_release(argv_t, flags)
    version = flags.version if later is None else later.version
    # which source tree the flags were read from stays in the record (flags_checked_against); the note says the release
    release = () if later is None else (f"{', '.join(f for f in later.flags if f in argv_t)}: "
                                        f"needs {flags.engine} {later.version} or later",)
    text = spread.commands[0].text if spread else shlex.join(argv_t)
    line = " ".join([*env_words(env), text])
    cold = _cold_start_comment(d, catalog, release_planned)
    return LaunchCommand(engine=flags.engine, engine_version=release_planned,
                         flags_checked_against=version, role=role, argv=argv_t, text=text, files=files,
                         script="\n".join([*cold, hosts_script(spread)] if spread else
                                          [*wired_limit_step(d), *(here_document(f) for f in files), *cold, line]),
                         checkpoint=served.checkpoint, port=port, env=env,
                         hosts=spread.split.hosts if spread else 1, host_commands=spread.commands if spread else (),
                         notes=(*filter(None, (build_note(catalog, d),)), *served.notes, *((moe[2],) if moe else ()), *bounds, *((step_note,) if step_note else ()), *chunked_notes, *release, *kt_notes, *router_notes(role, flags), *copies_note(d, catalog),
                                *spans, *(c.lstrip("# ") for c in cold), *pool_kv_notes(catalog, d, role),
                                *wired_limit_note(d)))


def _ollama_command(d: Deployment, catalog: Catalog, flags: EngineFlags, start, devices: tuple[int, ...] | None
                    ) -> LaunchCommand:
    """The ``LaunchCommand`` of Ollama's launch ``start`` (``deploy.ollama_launch``): the server's argv and
    environment (pinned to ``devices``), the Modelfile as its file, and a script that runs it all."""
    env = {**(_visible_devices(d, catalog, devices) if devices else {}), **start.env}
    files = (LaunchFile(path=MODELFILE, text=start.modelfile + "\n"),) if start.modelfile else ()
    script = "\n".join([*wired_limit_step(d), ollama_script(start, list(env_words(env)),
                                                           here_document(files[0]) if files else None)])
    return LaunchCommand(engine=flags.engine, engine_version=planned_engine_release(d, catalog),
                         flags_checked_against=start.release, role="both", argv=start.argv, text=shlex.join(start.argv),
                         files=files, script=script, checkpoint=start.served, port=start.port, env=env,
                         notes=(*_ollama_build_notes(d, catalog), *start.notes, *copies_note(d, catalog),
                                *wired_limit_note(d), f"call it: {start.call}"),
                         runner="ollama", then=start.steps)


def _ollama_build_notes(d: Deployment, catalog: Catalog) -> tuple[str, ...]:
    """The build line of an Ollama tag's launch and, where llama-server's --fit places its weights (no layer count
    stated, so the launch states none either), the placement the plan found for it: the memory fit's own lines; a
    stated split on a machine whose host RAM is not known says the RAM it needs."""
    if d.gpu is None and d.system is None:
        return tuple(filter(None, (build_note(catalog, d),)))
    fit = plan_memory(one_instance(d), catalog).result
    host = None  # a stated split on a machine of unknown host RAM: what it needs (a chosen one's placement says it)
    if fit.placement_note is None and fit.host_memory_origin == "unstated":
        host = f"the split stated: {unstated_host_note(fit.host_memory_bytes_used, fit.host_memory_reserved_bytes)}"
    return tuple(filter(None, (fit.build_note, fit.placement_note, host)))


def _cold_start_comment(d: Deployment, catalog: Catalog, release: str | None) -> tuple[str, ...]:
    """The comment before the launch line on an integrated GPU whose engine release reads the device's free memory."""
    if d.gpu is None and d.system is None:
        return ()
    engine = catalog.engine(d.engine, field_name="engine")
    try:
        rule = memory_rule(catalog, engine.id, release)
    except InferplanError:  # a release with no memory rule on record: nothing is known of what it reads
        return ()
    comment = cold_start_comment(resolve_hardware(catalog, d).accel, engine.name, rule, release)
    return (comment,) if comment else ()


def _visible_devices(d: Deployment, catalog: Catalog, devices: tuple[int, ...]) -> dict[str, str]:
    """The environment that pins a process to ``devices`` of its host (the GPU vendor's variable)."""
    vendor = resolve_hardware(catalog, d).accel.vendor
    resource = catalog.gpu_resources.records.get(vendor)
    if resource is None or resource.visible_devices_env is None:
        raise UnsupportedSettingError(f"no way to pin a process to some {vendor} GPUs is recorded", field="gpu",
                                      allowed=", ".join(r.id for r in catalog.gpu_resources if r.visible_devices_env))
    return {resource.visible_devices_env: ",".join(str(i) for i in devices)}


def here_document(f: LaunchFile) -> str:
    """Shell lines that write ``f`` (a quoted here-document: nothing in it is expanded)."""
    return f"cat > {shlex.quote(f.path)} <<'EOF'\n{f.text.rstrip(chr(10))}\nEOF"


def later_release(argv: tuple[str, ...], flags: EngineFlags) -> LaterFlags | None:
    """The later release an argv's flags need (None: the release ``accepted`` was read at takes them all)."""
    return next((later for later in flags.accepted_later if any(f in later.flags for f in argv)), None)


def planned_speculative(d: Deployment, catalog: Catalog, spec: Speculative | None) -> Speculative | None:
    """``spec`` with its method filled where it states none: the deployment's named method, else the draft perf
    plans (``memory.mtp.with_unnamed_drafts``, the one rule: mtp where the model ships MTP layers and the engine
    drafts with them, else ``OTHER_METHOD`` where the engine's launch has it, else refused naming
    ``speculative_method``; drafts on an Ollama tag's launch, which takes none, refused naming
    ``speculative_tokens``, whatever the method, as perf refuses them: ``check_launch_drafts``). A model the catalogue
    cannot resolve drafts by ``OTHER_METHOD``. ``eagle3`` takes the model's one catalogued draft where none is named,
    a catalogued draft's repo where its id is (``planned_draft``)."""
    tokens = spec.tokens if spec is not None else d.speculative_tokens
    if tokens:
        check_launch_drafts(catalog, d.model_copy(update={"speculative_tokens": tokens}))
    if spec is not None and spec.method == "eagle3":
        try:
            draft = planned_draft(catalog, resolve_model(catalog, d.model), spec.draft_model)
        except UnknownModelError:
            draft = None
        return spec.model_copy(update={"draft_model": draft.repo}) if draft else spec
    if spec is None or spec.method is not None:
        return spec
    if d.speculative_method is not None:  # the method the deployment names
        return spec.model_copy(update={"method": d.speculative_method})
    try:
        drafted = with_unnamed_drafts(catalog, d, spec.tokens)
    except UnknownModelError:
        return spec.model_copy(update={"method": OTHER_METHOD})
    return spec.model_copy(update=_drafted_by(drafted))


def _drafted_by(d: Deployment) -> dict[str, str | None]:
    """The launch's method (and draft checkpoint) of a deployment whose drafts ``with_unnamed_drafts`` planned."""
    if d.mtp_draft:
        return {"method": "mtp"}
    if d.eagle3_draft:
        return {"method": "eagle3", "draft_model": d.eagle3_draft}
    if d.draft_checkpoint:
        return {"method": "draft_model", "draft_model": d.draft_checkpoint}
    return {"method": d.speculative_method}


def with_draft(d: Deployment, catalog: Catalog, spec: Speculative | None) -> Deployment:
    """``d`` as launched with ``spec``: drafting with the model's MTP layers, its plan counts what the
    engine holds for them (``mtp_draft``, as fit and perf plan it); a deployment whose plan counts an MTP
    draft the command would not start is refused."""
    if d.mtp_draft and (spec is None or spec.method != "mtp"):
        raise InvalidScenarioError("the plan counts an MTP draft the launch command starts only with speculative "
                                   "decoding by the mtp method", field="mtp_draft",
                                   allowed="speculative decoding with method mtp and its draft tokens, or no MTP draft")
    if d.eagle3_draft and (spec is None or spec.method != "eagle3" or spec.draft_model != d.eagle3_draft):
        raise InvalidScenarioError("the plan counts an EAGLE-3 draft the launch command starts only with speculative "
                                   "decoding by the eagle3 method and that draft", field="eagle3_draft",
                                   allowed=f"method eagle3 with draft_model {d.eagle3_draft}, or no eagle3_draft")
    if d.speculative_method is not None and (spec is None or spec.method != d.speculative_method):
        raise InvalidScenarioError(f"the deployment drafts by {d.speculative_method}; the launch command starts it only "
                                   "with speculative decoding by that method", field="speculative_method",
                                   allowed=f"speculative decoding with method {d.speculative_method}, or leave it out")
    if spec is not None and spec.method:  # the speed model prices the method's drafts (no MTP draft beside ngram)
        d = d.model_copy(update={"speculative_method": spec.method})
    if spec is not None and spec.method == "eagle3" and spec.draft_model:
        return d.model_copy(update={"eagle3_draft": spec.draft_model, "speculative_tokens": spec.tokens})
    if spec is not None and spec.method == "draft_model" and spec.draft_model:  # counted where fit can (memory.draft_model)
        return d.model_copy(update={"draft_checkpoint": spec.draft_model, "speculative_tokens": spec.tokens})
    if spec is None or spec.method != "mtp":
        return d
    _check_drafts(d, catalog, spec)
    try:
        return with_mtp_draft(catalog, d, spec.tokens)
    except UnknownModelError:  # a model the catalogue cannot resolve is left to the engine
        return d


def _check_drafts(d: Deployment, catalog: Catalog, spec: Speculative) -> None:
    """MTP drafts with the model's own multi-token-prediction layers: a model that ships none is refused
    as fit and perf refuse it (``mtp_draft``). A model the catalogue cannot resolve is left to the engine."""
    if spec.method != "mtp":
        return
    try:
        model = resolve_model(catalog, d.model)
    except InferplanError:
        return
    check_mtp_layers(catalog, model)


def _speculative_args(spec: Speculative, flags: EngineFlags, options: dict) -> list[str]:
    rule = flags.speculative
    if rule is None:
        raise UnsupportedSettingError(f"{flags.engine} {flags.version} takes no speculative-decoding flags at launch",
                                      field="speculative", allowed="no speculative decoding, or another engine")
    if spec.method not in rule.methods:
        raise UnsupportedSettingError(f"{flags.engine} has no speculative method {spec.method}", field="speculative.method",
                                      allowed=", ".join(sorted(rule.methods)))
    fields = rule.fields_by_method.get(spec.method, rule.fields)
    if spec.method in rule.draft_required and not spec.draft_model:
        raise UnsupportedSettingError(f"{spec.method} on {flags.engine} needs a draft checkpoint", field="speculative.draft_model",
                                      allowed="a Hugging Face repo or path of the draft model")
    given = {"method": rule.methods[spec.method], "tokens": spec.tokens, "tokens_plus_one": spec.tokens + 1,
             "draft_model": spec.draft_model, "one": 1}
    values = {key: given[what] for key, what in fields.items() if given[what] is not None}
    if rule.options_key:
        set_option(options, rule.options_key, values)
        return []
    if rule.json_flag:
        return [rule.json_flag, json.dumps(values, separators=(",", ":"))]
    return [part for flag, value in values.items() for part in (flag, str(value))]
