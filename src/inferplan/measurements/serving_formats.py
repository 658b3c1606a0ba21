"""The serving benchmarks' result parsers: ``vllm bench serve --save-result`` JSON and SGLang's
``bench_serving --output-file`` JSON lines (keys in ``formats.py``'s docstring; sources in
docs/measurements.md), with the acceptance the server measured where the file saves it (its keys are data:
``clients.yaml`` ``measured_acceptance``)."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from inferplan.errors import InvalidScenarioError
from inferplan.measurements.result_fields import (Parsed, bad_field, from_ms, iso_date, json_documents, json_lines, measured_point,
                                                  read_count, read_number, text_of)
from inferplan.performance.run_record import MeasuredPoint

# the point's percentile -> vLLM's and SGLang's result key (vLLM: ``p{percentile}_{metric}_ms`` for each
# of --metric-percentiles, 99 by default)
SERVING_TAILS = {"ttft_p50_s": "median_ttft_ms", "ttft_p99_s": "p99_ttft_ms", "tpot_p50_s": "median_tpot_ms",
                 "tpot_p99_s": "p99_tpot_ms"}
# the point's field -> the key it is read from, to name a figure out of the point's range
SERVING_KEYS = {"input_tokens": "total_input_tokens", "output_tokens": "total_output_tokens", "ttft_s": "mean_ttft_ms",
                "tpot_s": "mean_tpot_ms", "output_tokens_per_s_total": "output_throughput",
                "requests_per_s": "request_throughput", "request_rate_per_s": "request_rate", **SERVING_TAILS}


def _serving_point(run: dict, fmt: str, where: str) -> MeasuredPoint:
    """A vLLM or SGLang serving run: per-request lengths are the totals over completed requests."""
    if not isinstance(run, dict):
        raise bad_field(where.removesuffix(": ") or "line 1", "expected a JSON object", fmt)
    completed = read_count(run, "completed", fmt, where)
    failed = _failed(run, fmt, where)
    if not completed:
        raise bad_field(f"{where}completed", "no request completed" + (f" ({failed} failed)" if failed else "")
                        + ": a run none of whose requests completed measured nothing", fmt)
    input_tokens = round(read_number(run, "total_input_tokens", fmt, where) / completed)
    output_tokens = round(read_number(run, "total_output_tokens", fmt, where) / completed)
    keys = {**SERVING_KEYS, "concurrency": _concurrency_key(run), "requests": _requests_key(run)}
    sent = completed + (failed or 0)
    return measured_point(where, fmt, keys, concurrency=_concurrency(run, fmt, where, sent, output_tokens),
                          input_tokens=input_tokens, output_tokens=output_tokens,
                          ttft_s=from_ms(read_number(run, "mean_ttft_ms", fmt, where)),
                          tpot_s=from_ms(read_number(run, "mean_tpot_ms", fmt, where)),
                          output_tokens_per_s_total=read_number(run, "output_throughput", fmt, where),
                          requests_per_s=read_number(run, "request_throughput", fmt, where, required=False),
                          failed_requests=failed, **_serving_tails(run, fmt, where, sent))


def _failed(run: dict, fmt: str, where: str) -> int | None:
    """The requests that failed: vLLM's ``failed``; SGLang writes no count, but with ``--output-details`` its
    ``errors``, one per request sent, empty for one that completed; None where the file says neither."""
    if run.get("failed") is not None:
        return read_count(run, "failed", fmt, where)
    errors = run.get("errors")
    if isinstance(errors, list):
        return sum(1 for e in errors if isinstance(e, str) and e.strip())
    return None


def _unlimited(rate: Any) -> bool:
    """No rate limit: the key absent, vLLM's "inf" or SGLang's ``Infinity``."""
    return rate is None or rate == "inf" or (isinstance(rate, float) and math.isinf(rate) and rate > 0)


def _requests(run: dict, fmt: str, where: str, sent: float) -> float:
    """The requests the run sent: vLLM's ``num_prompts``; SGLang writes none, so ``sent``, its ``completed`` and
    the requests that failed (``_failed``)."""
    return read_count(run, "num_prompts", fmt, where, required=False) or sent


def _requests_key(run: dict) -> str:
    return "num_prompts" if run.get("num_prompts") else "completed"


def _concurrency_key(run: dict) -> str:
    """The key the point's concurrency is read from (``_concurrency``)."""
    if _unlimited(run.get("request_rate")):
        return "max_concurrency" if run.get("max_concurrency") else _requests_key(run)
    return "concurrency" if run.get("concurrency") is not None else "request_throughput"


def _concurrency(run: dict, fmt: str, where: str, sent: float, output_tokens: int) -> int:
    """The requests in flight the point stands for: the client's ``max_concurrency``; without a cap,
    a run with no rate limit sends every request at once (one in flight per request), and a run at a
    request rate has its mean in flight by Little's law — SGLang's own ``concurrency`` (the summed
    end-to-end latencies over the run's duration), else completed requests per second × mean
    end-to-end latency (vLLM's ``mean_e2el_ms``; without it mean TTFT + mean TPOT × (output tokens − 1),
    exact when every request has the same output length). A cap beside a request rate bounds the mean in flight, which
    a rate too low to reach the cap keeps under it (``--request-rate 2 --max-concurrency 64``). Neither a cap nor a
    rate: refused."""
    cap = read_count(run, "max_concurrency", fmt, where) if run.get("max_concurrency") else None  # 0 or null: no cap
    if cap is not None and _unlimited(run.get("request_rate")):
        return cap
    if run.get("request_rate") is None:
        raise bad_field(f"{where}request_rate", "missing, and no max_concurrency: the load the client offered is unknown", fmt)
    if _unlimited(run.get("request_rate")):
        return round(_requests(run, fmt, where, sent))
    in_flight = _mean_in_flight(run, fmt, where, output_tokens)
    return max(1, min(cap, in_flight) if cap is not None else in_flight)


def _mean_in_flight(run: dict, fmt: str, where: str, output_tokens: int) -> int:
    """The run's mean requests in flight by Little's law, rounded (``_concurrency``)."""
    if run.get("concurrency") is not None:
        in_flight = read_number(run, "concurrency", fmt, where)
    else:
        e2e_ms = read_number(run, "mean_e2el_ms", fmt, where, required=False)
        if e2e_ms is None:
            e2e_ms = read_number(run, "mean_ttft_ms", fmt, where) + read_number(run, "mean_tpot_ms", fmt, where) * max(output_tokens - 1, 0)
        in_flight = read_number(run, "request_throughput", fmt, where) * from_ms(e2e_ms)
    return round(in_flight)


def _serving_tails(run: dict, fmt: str, where: str, sent: float) -> dict[str, Any]:
    """The percentiles and the offered load of a vLLM or SGLang run, when the load is one the
    planner models: no rate limit ("inf"), or Poisson arrivals at a finite rate (burstiness 1, no
    ramp-up). A run replaying a trace's timestamps (SGLang "trace"), with gamma arrivals or a
    ramping rate leaves them None."""
    rate = run.get("request_rate")
    if rate == "trace":
        return {}
    if _unlimited(rate):
        rate = None
    else:
        rate = read_number(run, "request_rate", fmt, where)
        if not rate:
            raise bad_field(f"{where}request_rate", "zero requests per second", fmt)
        if run.get("burstiness", 1.0) != 1.0 or run.get("ramp_up_strategy"):
            return {}
    requests = _requests(run, fmt, where, sent)
    return {"request_rate_per_s": rate, "requests": round(requests), "lengths_uniform_scv": _random_lengths_scv(run, fmt, where),
            **{field: from_ms(read_number(run, key, fmt, where, required=False)) for field, key in SERVING_TAILS.items()}}


def _random_lengths_scv(run: dict, fmt: str, where: str) -> float | None:
    """SGLang's random dataset draws each prompt and output length evenly from [r·L, L] (r its
    ``random_range_ratio``): a squared coefficient of variation of (1 − r)² / (3 (1 + r)²)."""
    if run.get("dataset_name") != "random" or run.get("random_range_ratio") is None:
        return None
    r = read_number(run, "random_range_ratio", fmt, where)
    if r > 1:
        raise bad_field(f"{where}random_range_ratio", f"{r!r} is more than 1", fmt)
    return (1 - r) ** 2 / (3 * (1 + r) ** 2)


def parse_vllm(text: str) -> Parsed:
    """One ``vllm bench serve`` result, or the several that ``--append-result`` writes into one file (a JSON object
    a line): one point each, of one server, so the model and deployment every run names must agree."""
    runs = json_documents(text, "vllm")
    if len(runs) == 1:
        run = runs[0][1]
        return Parsed([_serving_point(run, "vllm", "")], model=text_of(run.get("model_id")), model_field="model_id",
                      date=iso_date(run.get("date")), **_stated_deployment(run), **measured_acceptance(run, "vllm", ""))
    wheres = [f"line {line}: " for line, _ in runs]
    points = [_serving_point(run, "vllm", where) for (_, run), where in zip(runs, wheres)]
    first = runs[0][1] if isinstance(runs[0][1], dict) else {}
    for (_, run), where in zip(runs[1:], wheres[1:]):
        for key in ("model_id", *(k for keys in METADATA_KEYS.values() for k in keys)):
            if run.get(key) != first.get(key):
                raise bad_field(f"{where}{key}", f"{run.get(key)!r} here, {first.get(key)!r} on the first line: the "
                                "results are of several deployments; import one file per deployment", "vllm")
    dates = sorted(d for d in (iso_date(run.get("date")) for _, run in runs) if d)
    return Parsed(points, places=wheres, model=text_of(first.get("model_id")), model_field="model_id",
                  date=dates[-1] if dates else None, **_stated_deployment(first),
                  **_pooled_acceptance([run for _, run in runs], wheres))


def _pooled_acceptance(runs: list[Any], wheres: list[str]) -> dict[str, object]:
    """The acceptance the server measured over the appended runs that save one: each run's accepted tokens per draft
    step (its length − 1) weighted by its draft steps, and its draft tokens summed over the steps."""
    found = [(measured_acceptance(run, "vllm", where), run) for run, where in zip(runs, wheres)]
    found = [(m, run) for m, run in found if m]
    if len(found) < 2:
        return found[0][0] if found else {}
    keys = acceptance_keys()["vllm"]
    steps = sum(float(run[keys.drafts]) for _, run in found)
    accepted = sum((float(m["acceptance_length"]) - 1) * float(run[keys.drafts]) for m, run in found)
    return {**found[0][0], "acceptance_length": 1 + accepted / steps, "acceptance_over": "the file's runs together",
            "draft_tokens_per_step": sum(float(run[keys.draft_tokens]) for _, run in found) / steps}


# keys ``vllm bench serve --metadata KEY=VALUE ...`` adds to the result for the server's settings
# (the client cannot see them otherwise): the first of each tuple the file holds is read
METADATA_KEYS = {"tensor_parallel_size": ("tensor_parallel_size", "tp"), "quantization": ("quantization",)}


def _stated_deployment(run: dict) -> dict[str, str | None]:
    """What a result's metadata states of the deployment: each value with the key it was read from."""
    stated: dict[str, str | None] = {}
    for field, keys in METADATA_KEYS.items():
        key = next((k for k in keys if run.get(k) not in (None, "")), None)
        if key is not None:
            stated[field], stated[f"{field}_field"] = str(run[key]).strip()[:50], key
    return stated


@functools.cache
def _clients() -> dict:
    return yaml.safe_load(Path(__file__).with_name("clients.yaml").read_text(encoding="utf-8"))


def _client_backends() -> dict[str, str]:
    """The engine behind each bench_serving backend (``clients.yaml``)."""
    return _clients()["client_backends"]


class AcceptanceKeys(BaseModel):
    """Where a format's result file saves the acceptance the server measured (``clients.yaml`` ``measured_acceptance``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    length: str  # the acceptance length: tokens a verify step keeps, the bonus token counted
    draft_tokens: str | None = None  # draft tokens proposed, and
    drafts: str | None = None  # draft steps: their quotient is the draft tokens per step (None: the file saves none)
    server_steps: dict[str, str] = {}  # speculative algorithm -> the server_info key of its draft tokens per step
    over: str  # what the figure is an average over
    source: str


@functools.cache
def acceptance_keys() -> dict[str, AcceptanceKeys]:
    return {fmt: AcceptanceKeys.model_validate(keys) for fmt, keys in _clients()["measured_acceptance"].items()}


def measured_acceptance(run: dict, fmt: str, where: str) -> dict[str, object]:
    """The acceptance the server measured as ``run`` saves it: its length (with its key, and what it is an average
    over) and, where the file saves them, the draft tokens per step it was measured at; {} where it saves none (a run
    without speculative decoding, or an engine the client read none from)."""
    keys = acceptance_keys().get(fmt)
    if keys is None or run.get(keys.length) is None:
        return {}
    length = read_number(run, keys.length, fmt, where)
    if length < 1:
        raise bad_field(f"{where}{keys.length}", f"{length!r}: an acceptance length counts the bonus token, so 1 or more", fmt)
    found: dict[str, object] = {"acceptance_length": length, "acceptance_length_field": keys.length, "acceptance_over": keys.over}
    if keys.draft_tokens and keys.drafts:
        drafts = read_number(run, keys.drafts, fmt, where)
        if not drafts:
            raise bad_field(f"{where}{keys.drafts}", "no draft step counted beside an acceptance length", fmt)
        found |= {"draft_tokens_per_step": read_number(run, keys.draft_tokens, fmt, where) / drafts,
                  "draft_tokens_per_step_field": f"{keys.draft_tokens} / {keys.drafts}"}
    return found


def parse_sglang(text: str) -> Parsed:
    """SGLang bench_serving's JSON lines; the engine is the one its ``backend`` names, and the acceptance the server
    measured the last line's that saves one (the server's average since it started, which covers the runs before)."""
    points, places, model, backend, acceptance, server, drafted = [], [], None, None, {}, {}, {}
    for n, run in json_lines(text, "sglang", "one run per line"):
        points.append(_serving_point(run, "sglang", f"line {n}: "))
        places.append(f"line {n}")
        model = model or text_of(run.get("model_id") or run.get("model"))
        backend = backend or text_of(run.get("backend"))
        acceptance = measured_acceptance(run, "sglang", f"line {n}: ") or acceptance  # the server's since it started
        drafted = _server_draft_tokens(run) or drafted
        server = _one_server(server, _server_info(run), f"line {n}: ")
    if not points:
        raise bad_field("line 1", "no run in the file", "sglang")
    named = {"model": model, "model_field": "model_id"} if model else {}
    acceptance = acceptance | drafted if acceptance else {}
    return Parsed(points, places=places, **(server | named), engine=_client_backends().get(backend or ""), **acceptance)


def _server_draft_tokens(run: Any) -> dict[str, object]:
    """The draft tokens per step the server was started with, as a line's ``server_info`` states them for its
    speculative algorithm (``clients.yaml`` ``server_steps``); {} where it states none."""
    info = run.get("server_info") if isinstance(run, dict) else None
    if not isinstance(info, dict):
        return {}
    key = acceptance_keys()["sglang"].server_steps.get(str(info.get("speculative_algorithm") or "").upper())
    value = info.get(key) if key else None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return {"draft_tokens_per_step": float(value), "draft_tokens_per_step_field": f"server_info.{key}"}
    return {}


# what SGLang's ``/server_info``, which bench_serving saves as ``server_info``, states of the deployment: the field it
# fills -> the server argument (its resolved value; python/sglang/srt/utils/common.py ``build_server_info``)
SGLANG_SERVER_KEYS = {"model": "model_path", "engine_version": "version", "tensor_parallel_size": "tp_size",
                      "pipeline_parallel_size": "pp_size", "data_parallel_size": "dp_size", "quantization": "quantization",
                      "enforce_eager": "disable_cuda_graph", "kv_cache_dtype": "kv_cache_dtype"}


def _server_info(run: Any) -> dict[str, str]:
    """The deployment a line's ``server_info`` states (each value with its key as ``<field>_field``); {} where the
    client saved none (the server answered no ``/server_info``)."""
    info = run.get("server_info") if isinstance(run, dict) else None
    if not isinstance(info, dict):
        return {}
    stated: dict[str, str] = {}
    for field, key in SGLANG_SERVER_KEYS.items():
        value = info.get(key)
        if key == "dp_size" and info.get("enable_dp_attention") is True and "attn_dp_size" not in info:
            continue  # a release before attn_dp_size: dp_size with DP attention splits attention inside the TP group
        if value is True:  # a switch on (disable_cuda_graph): no CUDA graphs, as --enforce-eager states it
            stated |= {field: "true", f"{field}_field": f"server_info.{key}"}
        elif isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            stated |= {field: str(value).strip()[:200], f"{field}_field": f"server_info.{key}"}
    return stated | _graphs_disabled(info)


def server_kv_dtype(name: str) -> str | None:
    """The catalogue's id of the KV cache dtype SGLang names (``clients.yaml`` ``server_kv_cache_dtypes``; auto: None,
    the engine's default); a name with no catalogued element type is refused naming ``server_info.kv_cache_dtype``."""
    names = _clients()["server_kv_cache_dtypes"]["values"]
    if name not in names:
        raise InvalidScenarioError(f"server_info.kv_cache_dtype {name[:40]!r} is no KV cache type the plan sizes",
                                   field="server_info.kv_cache_dtype", allowed=", ".join(names))
    return names[name]


def _graphs_disabled(info: dict) -> dict[str, str]:
    """CUDA graphs off as the resolved ``cuda_graph_config`` states it (SGLang 0.5.23 on: its decode backend
    "disabled", whichever flag set it: python/sglang/srt/arg_groups/cuda_graph_hook.py)."""
    graphs = info.get("cuda_graph_config")
    decode = graphs.get("decode") if isinstance(graphs, dict) else None
    if isinstance(decode, dict) and decode.get("backend") == "disabled":
        return {"enforce_eager": "true", "enforce_eager_field": "server_info.cuda_graph_config.decode.backend"}
    return {}


def _one_server(first: dict[str, str], line: dict[str, str], where: str) -> dict[str, str]:
    """The lines of one file are runs of one server: a line whose ``server_info`` states another is refused."""
    for field, value in line.items():
        if field in first and not field.endswith("_field") and first[field] != value:
            raise bad_field(f"{where}{line[f'{field}_field']}", f"{value!r} here, {first[field]!r} on an earlier line: "
                            "the runs are of several servers; import one file per deployment", "sglang")
    return first or line
