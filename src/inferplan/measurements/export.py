"""A stored run as catalogue YAML in the ``speed_points`` schema (catalog/schema.py ``SpeedPoint``),
with its ``sources`` entry, so a user can contribute the measurement back: one point per measured
figure; the source's url is left for the contributor to fill (where the run is published). A run's acceptance rate
is written only where it is the run's own or its draft's published one (``draft_origin.py``): an assumed one, or one
stored before its origin was recorded, is left out and a caveat says so; the source's note says where it came from."""

from __future__ import annotations

import datetime as dt

import yaml

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.measurements.draft_origin import origin_text, run_origin
from inferplan.measurements.records import MeasuredRun, by_whom, failure_text, run_settings
from inferplan.performance.run_record import run_deployment

# the run's fields a speed point states under the same name (catalog/points_schema.py SpeedPoint); its data parallel
# size is the point's GPUs over TP × PP, and its expert parallelism is the point's ``expert_parallel``
POINT_FIELDS = ("pipeline_parallel_size", "n_gpu_layers", "n_cpu_moe", "cpu_offload_gb", "kt_num_gpu_experts", "kt_release", "kt_method", "host_sockets",
                "host_memory_gb", "kv_cache_dtype", "moe_runner_backend", "max_num_seqs")
# a measured point's field -> the speed point metric it is (per-user decode: 1/TPOT at concurrency 1)
FIELD_METRICS = (("ttft_s", "ttft_s"), ("tpot_s", "tpot_s"), ("output_tokens_per_s_total", "output_tokens_per_s_total"),
                 ("prefill_tokens_per_s", "prefill_tokens_per_s"))


# where a run's acceptance rate came from (``draft_origin.py``) for its speed points to state it as the source's
OWN_ACCEPTANCE = ("stated", "measured", "published")


def run_as_catalogue(run: MeasuredRun, *, checked: dt.date | None = None, catalog: Catalog | None = None) -> dict:
    source = f"user-run-{run.id}"
    # what the speed_points schema takes of the run's drafts, host RAM and engine settings; the rest (a host KV tier,
    # the host's bandwidth, the memory fraction, the step budget) said in a caveat
    stated = {f: getattr(run, f) for f in POINT_FIELDS if getattr(run, f) is not None}
    stated |= {"expert_parallel": True} if run.enable_expert_parallel else {}
    origin = run_origin(run)
    acceptance = origin_text(run, run_deployment(run), catalog or load_catalog()) if origin else ""
    if run.speculative_tokens:
        stated |= {"speculative_tokens": run.speculative_tokens,
                   **({"acceptance_rate": run.acceptance_rate} if origin in OWN_ACCEPTANCE else {})}
    settings = run_settings(run)
    caveats = [*([f"launched with {settings}"] if settings else []),
               *([f"acceptance_rate left out, {acceptance}: state the rate the engine logged"]
                 if origin and origin not in OWN_ACCEPTANCE else [])]
    stated |= {"caveats": caveats} if caveats else {}
    points = []
    for p in run.points:
        # a point whose requests failed says so: its figures are over the requests that completed
        failed = {"caveats": [*stated.get("caveats", []), f"{p.failed_requests:,} requests failed: the figures are over "
                              "the requests that completed"]} if p.failed_requests else {}
        for field, metric in FIELD_METRICS:
            value = getattr(p, field)
            if not value:
                continue
            measured = {"value": value, "kind": "measured", "source": source}  # SI: seconds, tokens/s
            points.append({
                "id": f"user-{run.id}-{run.model}-c{p.concurrency}-{p.input_tokens}-{p.output_tokens}-{metric}".lower().replace("_", "-"),
                "model": run.model, "accelerator": run.accelerator, "gpus": run.gpus,
                "tensor_parallel_size": run.tensor_parallel_size, "engine": run.engine, "engine_version": run.engine_version,
                "quantization": run.quantization, "input_tokens": p.input_tokens, "output_tokens": p.output_tokens,
                "concurrency": p.concurrency, "metric": metric, "measured": measured,
                "split": "holdout", **stated, **failed,
            })
    note = "; ".join(x for x in (f"measured{by_whom(run)}" if by_whom(run) else "", run.note, f"driver {run.driver}" if run.driver else "",
                                  f"{run.format} result file {run.file}", acceptance, failure_text(run)) if x)
    return {
        "sources": [{"id": source, "title": f"{run.engine} {run.engine_version} benchmark of {run.model} on "
                     f"{run.gpus}x {run.accelerator} ({run.measured_on.isoformat()})",
                     "url": "https://example.invalid/where-this-run-is-published",
                     "checked": (checked or run.measured_on).isoformat(), "note": note}],
        "speed_points": points,
    }


def export_yaml(runs: list[MeasuredRun]) -> str:
    merged: dict[str, list] = {"sources": [], "speed_points": []}
    for run in runs:
        part = run_as_catalogue(run)
        merged["sources"] += part["sources"]
        merged["speed_points"] += part["speed_points"]
    return yaml.safe_dump(merged, sort_keys=False, allow_unicode=True)
