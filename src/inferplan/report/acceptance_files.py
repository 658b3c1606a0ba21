"""An acceptance pack as a folder: README.md (what to do, in order), launch.sh, benchmarks.sh,
checklist.md and predictions.json (the figures the runs will be compared with)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from inferplan.errors import InvalidScenarioError
from inferplan.measurements.acceptance import AcceptancePack
from inferplan.performance.run_record import RUN_OFFLOAD, RUN_SETTINGS


def _readme(p: AcceptancePack) -> str:
    d, lay = p.deployment, p.layout
    hardware = f"{lay.gpus}x {p.accelerator}" + (f" of {d.system}" if d.system else "")
    lines = [
        f"# Acceptance test: {d.model} on {hardware} with {d.engine}",
        "",
        f"Layout: {_layout_text(lay)}.",
        "",
        f"Workload `{p.workload_preset}`: {p.input_tokens} prompt and {p.output_tokens} output tokens per request, "
        f"at concurrency {', '.join(map(str, p.concurrencies))} (what the KV cache holds, of the sweep).",
        "",
        f"1. Start the engine (`launch.sh`; the command is from {p.launch_from}):",
        "", "   ```sh", *(f"   {line}" for line in p.launch.text.splitlines()), "   ```", "",
        *([f"   Notes from {p.launch_from}:", "", *(f"   - {n}" for n in p.notes), "",
           "   The load tests, the predictions and the import line are for the instance `launch.sh` starts.", ""]
          if p.notes else []),
        "2. Run the load tests in `benchmarks.sh` (any one client is enough; each writes under `results/`).",
        "3. Record what `checklist.md` asks for.",
        "4. Import the results and see the planner's prediction beside them:",
        "",
        "       inferplan measurements import results/* " + import_flags(p) + " --engine-version <version>",
        "       inferplan measurements list",
        "       inferplan measurements show <id>",
        "",
        "`predictions.json` holds the planner's figures for these runs (TTFT and TPOT in seconds, output tokens/s in total).",
    ]
    return "\n".join(lines) + "\n"


def _script(commands: list[str]) -> str:
    return "#!/bin/sh\nset -e\nmkdir -p results\n" + "\n".join(commands) + "\n"


def write_pack(pack: AcceptancePack, out: Path) -> list[Path]:
    """Write the pack into ``out`` (created; an existing file of the pack's names is replaced)."""
    if out.exists() and not out.is_dir():
        raise InvalidScenarioError(f"{out} exists and is not a folder", field="out", allowed="a folder path")
    out.mkdir(parents=True, exist_ok=True)
    by_client: dict[str, list[str]] = {}
    for b in pack.benchmarks:
        by_client.setdefault(b.client, []).append(b.text)
    bench = [line for client, texts in by_client.items() for line in (f"\n# {client} (result format: {client})", *texts)]
    files = {
        "README.md": _readme(pack),
        "launch.sh": _script([pack.launch.text]),
        "benchmarks.sh": _script(bench),
        "checklist.md": "# Record with every run\n\n" + "".join(f"- [ ] {c}\n" for c in pack.checklist),
        "predictions.json": json.dumps({"deployment": pack.deployment.model_dump(mode="json", exclude_none=True),
                                        "accelerator": pack.accelerator, "layout": pack.layout.model_dump(mode="json"),
                                        **({"speculative": pack.speculative.model_dump(mode="json", exclude_none=True),
                                            "acceptance_rate": pack.acceptance_rate} if pack.speculative else {}),
                                        "workload_preset": pack.workload_preset,
                                        "predictions": [p.model_dump(mode="json") for p in pack.predictions]}, indent=2) + "\n",
    }
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _layout_text(lay) -> str:
    ep = ", expert parallel" if lay.expert_parallel else ""
    return (f"{lay.gpus} GPU{'s' if lay.gpus > 1 else ''}: tensor parallel {lay.tensor_parallel_size}, pipeline parallel "
            f"{lay.pipeline_parallel_size}, data parallel {lay.data_parallel_size}{ep}")


def import_flags(p: AcceptancePack) -> str:
    """The flags that import the pack's results as the instance it launched (its resolved layout, the engine
    settings its launch command states, what it keeps in host RAM, its host — a system card's too — and its
    speculative decoding; its acceptance rate where the user stated it, else the import takes the one the server
    measured where the result file saves it, or the same published or assumed one as the predictions, and records
    which: ``measurements/draft_origin.py``), quoted as a shell reads them."""
    d, lay, q = p.deployment, p.layout, shlex.quote
    spec, host = p.speculative, {**{f: getattr(d, f) for f in RUN_OFFLOAD}, **p.system_host}
    drafts = ([f"--speculative-tokens {spec.tokens}", f"--speculative-method {q(spec.method)}",
               *([f"--draft-model {q(spec.draft_model)}"] if spec.draft_model else []),
               *([f"--acceptance-rate {p.acceptance_rate}"] if p.acceptance_rate_stated else [])] if spec else [])
    return " ".join([f"--model {q(d.model)}", f"--gpu {q(p.accelerator)}", f"--gpus {lay.gpus}",
                     f"-tp {lay.tensor_parallel_size}", f"-pp {lay.pipeline_parallel_size}",
                     f"-dp {lay.data_parallel_size}{' --enable-expert-parallel' if lay.expert_parallel else ''}",
                     f"--engine {q(d.engine)}", *([f"--quantization {q(d.quantization)}"] if d.quantization else []),
                     f"--max-model-len {d.max_model_len}", *([_flag("enforce_eager")] if d.enforce_eager else []),
                     *(f"{_flag(f)} {q(str(getattr(d, f)))}" for f in RUN_SETTINGS if getattr(d, f) not in (None, "auto")),
                     *(f"{_flag(f)} {q(str(host[f]))}" for f in RUN_OFFLOAD if host[f] is not None), *drafts])


def _flag(field: str) -> str:
    """The flag of a Deployment field (each flag here is the field's name)."""
    return "--" + field.replace("_", "-")
