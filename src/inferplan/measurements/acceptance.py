"""The acceptance test for a planned deployment: how to start it, the engines' own benchmark
clients sweeping the workload's concurrencies at its lengths, what to record, and the predictions
those runs will be compared with (``inferplan measurements import`` then ``show``).

Commands and flag names are data (``clients.yaml``); the launch command is ``inferplan deploy``'s
(``deploy.launch_command``, a module of this layer). The pack is one deployment throughout: the
instance the launch command starts (``deploy.copies.launched_instance``: a plan of several copies on
its GPUs is tested on one of them, and the pack carries deploy's note on starting the others), whose
resolved layout the predictions and the import line state.
"""

from __future__ import annotations

import functools
import shlex
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.schema import ModelCard
from inferplan.deploy import LaunchCommand, Speculative, launch_command
from inferplan.deploy.command import planned_speculative, with_draft
from inferplan.deploy.copies import launched_instance
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import plan_memory
from inferplan.memory.hardware import resolve_hardware
from inferplan.memory.layout import ParallelPlan
from inferplan.memory.slots import most_slots
from inferplan.memory.resolve import resolve_model
from inferplan.performance.drafts import resolve_acceptance
from inferplan.performance.launch_match import NO_OFFLOAD, launched_offload
from inferplan.performance.serving import estimate
from inferplan.units import GB

CLIENTS_FILE = Path(__file__).with_name("clients.yaml")
LAUNCH_FROM = "inferplan deploy"  # where the pack's launch command comes from


class Command(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    client: str  # vllm | sglang | llama-bench | genai-perf | guidellm | launch
    format: str | None  # the --format its result imports as
    concurrency: int | None  # None: one command for every level
    argv: tuple[str, ...]
    text: str
    result: str | None  # the result file, under results/
    source: str


class Prediction(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    concurrency: int
    input_tokens: int
    output_tokens: int
    ttft_s: float
    tpot_s: float
    output_tokens_per_s_total: float
    source: str


class AcceptancePack(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    deployment: Deployment  # the instance launched, as the predictions take it
    accelerator: str  # its accelerator's catalogue id
    layout: ParallelPlan  # its resolved parallel sizes and GPUs
    notes: tuple[str, ...] = ()  # the launch command's notes (how to start the plan's other copies)
    # the host RAM (GiB) and DRAM bandwidth (GB/s) the predictions took from a --system card, under the
    # Deployment fields that state them: the import line states them, as it names the accelerator alone
    system_host: dict[str, float] = {}
    speculative: Speculative | None = None  # the speculative decoding it launches with (method filled as deploy fills it)
    acceptance_rate: float | None = None  # per draft token, as the predictions take it (with ``speculative``)
    acceptance_rate_stated: bool = False  # the user stated it (else a draft's published rate, or the default, assumed)
    workload_preset: str
    input_tokens: int
    output_tokens: int
    concurrencies: tuple[int, ...]
    launch: Command
    launch_from: str  # LAUNCH_FROM
    benchmarks: tuple[Command, ...]
    checklist: tuple[str, ...]
    predictions: tuple[Prediction, ...]


@functools.cache
def clients() -> dict:
    return yaml.safe_load(CLIENTS_FILE.read_text(encoding="utf-8"))


def _fill(argv: list[str], values: dict[str, object]) -> tuple[str, ...]:
    return tuple(str(a).format(**values) for a in argv)


def _launch(cmd: LaunchCommand) -> Command:
    return Command(client="launch", format=None, concurrency=None, argv=tuple(cmd.argv), text=cmd.script, result=None,
                   source=LAUNCH_FROM)


def _levels(d: Deployment, w: Workload, sweep: tuple[int, ...], catalog: Catalog) -> tuple[int, ...]:
    """The sweep's concurrencies ``d`` holds at ``w``'s lengths and drafts: as many requests as its KV cache
    holds at once; for an engine started with a context per slot and no slot count stated (llama.cpp), as many
    slots as fit."""
    most = most_slots(d, catalog, max(sweep))
    if most is None:
        most = estimate(d, w.model_copy(update={"concurrency": "max"}), catalog, use_profiles=False).max_concurrency
    return tuple(c for c in sweep if c <= most) or (1,)


def _holding(d: Deployment, levels: tuple[int, ...], catalog: Catalog) -> Deployment:
    """``d`` started to hold the most requests its benchmarks send at once: an engine whose context
    flag is shared by its slots (llama.cpp's --ctx-size is max_model_len × --parallel, a flag record
    with ``multiplied_by: max_num_seqs``) is given that many slots; a stated slot count stands."""
    flags = flags_for(catalog, catalog.engine(d.engine).id)
    rule = flags.settings.get("max_model_len") if flags else None
    if d.max_num_seqs is not None or rule is None or rule.multiplied_by != "max_num_seqs":
        return d
    return d.model_copy(update={"max_num_seqs": max(levels)})


def _benchmarks(values: dict, concurrencies: tuple[int, ...], data: dict, engine: str) -> list[Command]:
    """The commands of every client that can talk to ``engine``'s server, for each level it sweeps."""
    out = []
    for c in (c for c in data["clients"] if engine in c["engines"]):
        levels = concurrencies if c["per_concurrency"] else (None,)
        for level in levels:
            v = {**values, "concurrency": level, "concurrencies": ",".join(map(str, concurrencies)),
                 "num_prompts": max(data["min_prompts"], data["num_prompts_per_concurrency"] * (level or 1)),
                 "backend": c.get("backends", {}).get(engine)}
            result = c["result"].format(**v)
            argv = _fill(c["argv"], {**v, "result": result})
            text = shlex.join(argv) + (f" > results/{c['stdout_to']}" if c.get("stdout_to") else "")
            out.append(Command(client=c["id"], format=c["format"], concurrency=level, argv=argv, text=text,
                               result=f"results/{result}", source=c["source"]))
    return out


def _model_file(started: LaunchCommand, card: ModelCard | None) -> str:
    """The file llama-bench loads: the one the launch command serves (a GGUF path, or its placeholder), or for a
    repo it fetches, a placeholder naming the file the catalogue says the tag picks (``Checkpoint.gguf_file``)."""
    if started.checkpoint.endswith((".gguf", ".gguf>")):
        return started.checkpoint
    repo = started.checkpoint.split(":")[0]
    file = next((k.gguf_file.file for k in (card.checkpoints if card else ()) if k.repo == repo and k.gguf_file), None)
    return f"<{file}, as downloaded from {repo}>" if file else f"<the GGUF file of {started.checkpoint}>"


def served_name(started: LaunchCommand, data: dict) -> str:
    """The model name ``started``'s server answers to: its served-name flag's value where the command
    sets one (``served_name_flags``), else the model it was started with."""
    flag = data["served_name_flags"].get(started.engine)
    argv = started.argv
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else started.checkpoint


def _tokenizer(started: LaunchCommand, card_repo: str, catalog: Catalog) -> str:
    """Where clients load the tokenizer of what ``started`` serves: the served Hugging Face repo or folder;
    for a GGUF file or a placeholder (no tokenizer a client can load), the model's own repo."""
    flags = flags_for(catalog, started.engine)
    gguf = flags is not None and flags.model_source == "gguf_file"
    return card_repo if gguf or started.checkpoint.startswith("<") else started.checkpoint


def _system_host(d: Deployment, catalog: Catalog) -> dict[str, float]:
    """What a system card gives a deployment that keeps weights or KV cache in host RAM and states neither its
    host RAM nor its DRAM bandwidth (none on unified memory, where the GPU's memory is the host's)."""
    hw = resolve_hardware(catalog, d)
    if hw.system is None or hw.accel.unified_memory or launched_offload(d) == NO_OFFLOAD:
        return {}
    card = {"host_memory_gb": hw.system.host_memory_bytes.capacity_gib if hw.system.host_memory_bytes else None,
            "host_memory_bandwidth_gb_per_s": (hw.system.host_memory_bandwidth_bytes_per_s.value / GB
                                               if hw.system.host_memory_bandwidth_bytes_per_s else None)}
    return {f: v for f, v in card.items() if v is not None and getattr(d, f) is None}


def acceptance_pack(d: Deployment, workload_preset: str, catalog: Catalog | None = None, *,
                    input_len: int | None = None, output_len: int | None = None, speculative: Speculative | None = None,
                    acceptance_rate: float | None = None) -> AcceptancePack:
    """The test to run on the instance of ``d`` one launch command starts (``launched_instance``), for the
    preset's request lengths (or those given), launched with ``speculative`` decoding as ``deploy`` launches
    it and predicted as ``perf`` plans it (its draft tokens at ``acceptance_rate``, default the workload's)."""
    catalog = catalog or load_catalog()
    preset = catalog.workload_presets.get(workload_preset, field_name="workload_preset", error=InvalidScenarioError)
    inp = input_len or int(preset.input_tokens_per_request.value)
    out = output_len or int(preset.output_tokens_per_request.value)
    spec = resolve_model(catalog, d.model)
    d, copies = launched_instance(d.model_copy(update={"max_model_len": d.max_model_len or inp + out}), catalog)
    speculative = planned_speculative(d, catalog, speculative)
    stated = acceptance_rate is not None
    if speculative:  # the rate the predictions take, as perf resolves it
        acceptance_rate = resolve_acceptance(catalog, with_draft(d, catalog, speculative), acceptance_rate).rate
    rate = {} if acceptance_rate is None else {"acceptance_rate": acceptance_rate}  # without drafts: refused
    w = Workload(input_len=inp, output_len=out, concurrency=1, speculative_tokens=speculative.tokens if speculative else 0, **rate)
    data = clients()
    levels = _levels(with_draft(d, catalog, speculative), w, tuple(data["concurrency_sweep"]), catalog)
    card = catalog.model(spec.id) if spec.id in catalog.models else None
    repo = next((k.repo for k in (card.checkpoints if card else ()) if k.repo and k.quantization == spec.native_quantization),
                None) or next((k.repo for k in (card.checkpoints if card else ()) if k.repo), spec.id)
    d = _holding(d, levels, catalog)
    started = launch_command(d, catalog, speculative=speculative)
    launch = _launch(started)
    model_file = _model_file(started, card)
    values = {"served_model": served_name(started, data), "tokenizer": _tokenizer(started, repo, catalog),
              "model_file": model_file, "input_len": inp, "output_len": out, "port": started.port}
    predictions, drafted = [], with_draft(d, catalog, speculative)  # priced by its method (ngram: no draft forward)
    for c in levels:
        e = estimate(drafted, w.model_copy(update={"concurrency": c}), catalog, use_profiles=False)
        predictions.append(Prediction(concurrency=c, input_tokens=inp, output_tokens=out, ttft_s=e.ttft_s, tpot_s=e.tpot_s,
                                      output_tokens_per_s_total=e.output_tokens_per_s_total, source=e.source))
    return AcceptancePack(deployment=d, accelerator=resolve_hardware(catalog, d).accel.id,
                          layout=plan_memory(with_draft(d, catalog, speculative), catalog).result.parallel,
                          notes=(*started.notes, *copies), system_host=_system_host(d, catalog), speculative=speculative,
                          acceptance_rate=w.acceptance_rate if speculative else None, acceptance_rate_stated=stated,
                          workload_preset=preset.id, input_tokens=inp, output_tokens=out, concurrencies=levels,
                          launch=launch, launch_from=LAUNCH_FROM, benchmarks=tuple(_benchmarks(values, levels, data, started.engine)),
                          checklist=tuple(data["checklist"]), predictions=tuple(predictions))
