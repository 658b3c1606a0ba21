"""Benchmark clients' result files → measured points (SI units), one parser per format.

Every parser is strict: a file that is not the format, or lacks a figure the point needs, is
refused with an ``InvalidScenarioError`` whose ``field`` is the key or line at fault. Formats and
their keys (docs/measurements.md has the sources):

- ``vllm``: ``vllm bench serve --save-result`` JSON (``max_concurrency``, ``completed``,
  ``total_input_tokens``, ``total_output_tokens``, ``mean_ttft_ms``, ``mean_tpot_ms``,
  ``output_throughput``, ``request_throughput``; percentiles ``median_ttft_ms``, ``p99_ttft_ms``,
  ``median_tpot_ms``, ``p99_tpot_ms`` and the offered load ``request_rate``, ``num_prompts``).
- ``sglang``: ``python -m sglang.bench_serving --output-file`` JSONL, one run a line (same keys,
  plus ``max_concurrency``/``concurrency``).
- ``llama-bench``: ``llama-bench -o json|csv|md`` (``n_prompt``, ``n_gen``, ``avg_ts``; md: the
  ``test`` and ``t/s`` columns).
- ``genai-perf``: ``profile_export_genai_perf.json`` of genai-perf or AIPerf (``time_to_first_token``,
  ``inter_token_latency``, ``output_token_throughput``, ``request_throughput``, each ``{unit, avg,
  p50, p99}``: the mean and the percentiles; lengths from ``input_sequence_length``/``output_sequence_length``).
- ``guidellm``: ``guidellm benchmark --output-path report.json`` (``benchmarks[].metrics``: ``mean``,
  ``median``, ``percentiles.p99``).
- ``csv``: the documented CSV (``CSV_COLUMNS``).
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import re
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import ValidationError

from inferplan.errors import InvalidScenarioError
from inferplan.performance.local_runs import MeasuredPoint

FORMATS = ("vllm", "sglang", "llama-bench", "genai-perf", "guidellm", "csv")
CSV_COLUMNS = ("concurrency", "input_tokens", "output_tokens", "ttft_ms", "tpot_ms", "output_tokens_per_s", "requests_per_s")
CSV_REQUIRED = ("concurrency", "input_tokens", "output_tokens")
# optional columns: percentiles (ms) and the offered load (request rate, empty for no limit; requests in the run)
CSV_TAILS = {"ttft_p50_s": "ttft_p50_ms", "ttft_p99_s": "ttft_p99_ms", "tpot_p50_s": "tpot_p50_ms", "tpot_p99_s": "tpot_p99_ms"}
CSV_COLUMNS += (*CSV_TAILS.values(), "request_rate_per_s", "requests")
# the point's percentile -> vLLM's and SGLang's result key (vLLM: ``p{percentile}_{metric}_ms`` for each
# of --metric-percentiles, 99 by default)
SERVING_TAILS = {"ttft_p50_s": "median_ttft_ms", "ttft_p99_s": "p99_ttft_ms", "tpot_p50_s": "median_tpot_ms",
                 "tpot_p99_s": "p99_tpot_ms"}
MS = 1e-3
MAX_POINTS = 10_000


class Parsed:
    """What a file says: its points and what it names of the run (model, engine version, date)."""

    def __init__(self, points: list[MeasuredPoint], **meta: str | None):
        self.points = points
        self.meta = {k: v for k, v in meta.items() if v}


def _bad(where: str, why: str, fmt: str) -> InvalidScenarioError:
    return InvalidScenarioError(f"{where}: {why}", field=where, allowed=f"a {fmt} result file (docs/measurements.md)")


def _num(obj: dict, key: str, fmt: str, where: str = "", *, required: bool = True) -> float | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    if value is None or value == "":
        if required:
            raise _bad(f"{where}{key}", "missing", fmt)
        return None
    if isinstance(value, bool):
        raise _bad(f"{where}{key}", f"{value!r} is not a number", fmt)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _bad(f"{where}{key}", f"{value!r} is not a number", fmt) from None
    if not math.isfinite(number) or number < 0:
        raise _bad(f"{where}{key}", f"{value!r} is not a finite, non-negative number", fmt)
    return number


def _point(where: str, fmt: str, **fields: Any) -> MeasuredPoint:
    fields = {k: (v if v else None) if k not in ("concurrency", "input_tokens", "output_tokens") else v
              for k, v in fields.items()}
    try:
        return MeasuredPoint(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise _bad(f"{where}{first['loc'][0] if first['loc'] else ''}", first["msg"], fmt) from None


def _json(text: str, fmt: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        line = getattr(exc, "lineno", 1)
        raise _bad(f"line {line}", f"not JSON ({getattr(exc, 'msg', 'too deeply nested')})", fmt) from None


def _ms(value: float | None) -> float | None:
    return None if value is None else value * MS


def _serving_point(run: dict, fmt: str, where: str) -> MeasuredPoint:
    """A vLLM or SGLang serving run: per-request lengths are the totals over completed requests."""
    if not isinstance(run, dict):
        raise _bad(where or "line 1", "expected a JSON object", fmt)
    completed = _num(run, "completed", fmt, where)
    if not completed:
        raise _bad(f"{where}completed", "no request completed", fmt)
    concurrency = run.get("max_concurrency") or run.get("concurrency")
    if concurrency is None:
        raise _bad(f"{where}max_concurrency", "missing: run the client with --max-concurrency so the load is known", fmt)
    return _point(where, fmt, concurrency=int(_num({"c": concurrency}, "c", fmt, f"{where}max_concurrency.")),
                  input_tokens=round(_num(run, "total_input_tokens", fmt, where) / completed),
                  output_tokens=round(_num(run, "total_output_tokens", fmt, where) / completed),
                  ttft_s=_ms(_num(run, "mean_ttft_ms", fmt, where)), tpot_s=_ms(_num(run, "mean_tpot_ms", fmt, where)),
                  output_tokens_per_s_total=_num(run, "output_throughput", fmt, where),
                  requests_per_s=_num(run, "request_throughput", fmt, where, required=False),
                  **_serving_tails(run, fmt, where, completed))


def _serving_tails(run: dict, fmt: str, where: str, completed: float) -> dict[str, Any]:
    """The percentiles and the offered load of a vLLM or SGLang run, when the load is one the
    planner models: no rate limit ("inf"), or Poisson arrivals at a finite rate (burstiness 1, no
    ramp-up). A run replaying a trace's timestamps (SGLang "trace"), with gamma arrivals or a
    ramping rate leaves them None."""
    rate = run.get("request_rate")
    if rate == "trace":
        return {}
    if rate is None or rate == "inf" or (isinstance(rate, float) and math.isinf(rate) and rate > 0):
        rate = None
    else:
        rate = _num(run, "request_rate", fmt, where)
        if not rate:
            raise _bad(f"{where}request_rate", "zero requests per second", fmt)
        if run.get("burstiness", 1.0) != 1.0 or run.get("ramp_up_strategy"):
            return {}
    requests = _num(run, "num_prompts", fmt, where, required=False) or completed
    return {"request_rate_per_s": rate, "requests": round(requests), "lengths_uniform_scv": _random_lengths_scv(run, fmt, where),
            **{field: _ms(_num(run, key, fmt, where, required=False)) for field, key in SERVING_TAILS.items()}}


def _random_lengths_scv(run: dict, fmt: str, where: str) -> float | None:
    """SGLang's random dataset draws each prompt and output length evenly from [r·L, L] (r its
    ``random_range_ratio``): a squared coefficient of variation of (1 − r)² / (3 (1 + r)²)."""
    if run.get("dataset_name") != "random" or run.get("random_range_ratio") is None:
        return None
    r = _num(run, "random_range_ratio", fmt, where)
    if r > 1:
        raise _bad(f"{where}random_range_ratio", f"{r!r} is more than 1", fmt)
    return (1 - r) ** 2 / (3 * (1 + r) ** 2)


def parse_vllm(text: str) -> Parsed:
    run = _json(text, "vllm")
    point = _serving_point(run, "vllm", "")
    return Parsed([point], model=_str(run.get("model_id")), model_field="model_id", date=_date(run.get("date")),
                  **_stated_deployment(run))


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
def _client_backends() -> dict[str, str]:
    """The engine behind each bench_serving backend (``clients.yaml``)."""
    path = Path(__file__).with_name("clients.yaml")
    return yaml.safe_load(path.read_text(encoding="utf-8"))["client_backends"]


def parse_sglang(text: str) -> Parsed:
    """SGLang bench_serving's JSON lines; the engine is the one its ``backend`` names."""
    points, model, backend = [], None, None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            run = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            raise _bad(f"line {n}", "not a JSON object (one run per line)", "sglang") from None
        points.append(_serving_point(run, "sglang", f"line {n}: "))
        model = model or _str(run.get("model_id") or run.get("model"))
        backend = backend or _str(run.get("backend"))
    if not points:
        raise _bad("line 1", "no run in the file", "sglang")
    return Parsed(points, model=model, model_field="model_id", engine=_client_backends().get(backend or ""))


_LLAMA_TEST = re.compile(r"^(pp|tg)(\d+)(?: @ d(\d+))?$")


def _llama_row(row: dict, where: str) -> MeasuredPoint:
    n_prompt = int(_num(row, "n_prompt", "llama-bench", where))
    n_gen = int(_num(row, "n_gen", "llama-bench", where))
    rate = _num(row, "avg_ts", "llama-bench", where)
    if not rate:
        raise _bad(f"{where}avg_ts", "zero tokens/s", "llama-bench")
    if n_gen == 0 and n_prompt:  # a prompt-processing test (pp512)
        return _point(where, "llama-bench", concurrency=1, input_tokens=n_prompt, output_tokens=0, prefill_tokens_per_s=rate)
    if n_prompt == 0 and n_gen:  # a generation test (tg128): one stream's tokens/s
        return _point(where, "llama-bench", concurrency=1, input_tokens=0, output_tokens=n_gen, tpot_s=1 / rate,
                      output_tokens_per_s_total=rate)
    raise _bad(f"{where}n_prompt", "a combined pp+tg test is not read; run pp and tg tests apart (-p N -n M)", "llama-bench")


def parse_llama_bench(text: str) -> Parsed:
    stripped = text.lstrip()
    if stripped.startswith("["):
        rows = _json(text, "llama-bench")
        if not isinstance(rows, list) or not rows:
            raise _bad("line 1", "expected a non-empty list of tests", "llama-bench")
        points = [_llama_row(r if isinstance(r, dict) else {}, f"[{i}].") for i, r in enumerate(rows)]
        first = rows[0] if isinstance(rows[0], dict) else {}
    elif stripped.startswith("|"):
        return _llama_markdown(text)
    else:
        rows = list(csv.DictReader(io.StringIO(text)))
        if not rows or "avg_ts" not in rows[0]:
            raise _bad("line 1", "expected llama-bench -o json, csv or md output", "llama-bench")
        points = [_llama_row(r, f"line {i + 2}: ") for i, r in enumerate(rows)]
        first = rows[0]
    return Parsed(points, engine="llamacpp", **_llama_model(first), engine_version=_build(first), date=_date(first.get("test_time")))


def _llama_model(row: dict) -> dict[str, str | None]:
    """The model llama-bench names (its GGUF file's name, else its ``model_type``) and the file type
    ``model_type`` ends with ("qwen3moe 30B.A3B Q4_K - Medium": architecture, size, type)."""
    model_type = _str(row.get("model_type"))
    words = model_type.split(" ", 2) if model_type else []
    stated = {"quantization": words[2], "quantization_field": "model_type"} if len(words) == 3 else {}
    if _str(row.get("model_filename")):
        return {"model": _str(row.get("model_filename")), "model_field": "model_filename", **stated}
    return {"model": model_type, "model_field": "model_type", **stated}


def _llama_markdown(text: str) -> Parsed:
    lines = [line for line in text.splitlines() if line.strip().startswith("|")]
    header = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    if "test" not in header or "t/s" not in header:
        raise _bad("line 1", "the table has no 'test' and 't/s' columns", "llama-bench")
    points, model = [], None
    for n, line in enumerate(lines[2:], 3):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(header):
            raise _bad(f"line {n}", f"{len(cells)} cells, the header has {len(header)}", "llama-bench")
        row = dict(zip(header, cells))
        m = _LLAMA_TEST.match(row["test"])
        if not m:
            raise _bad(f"line {n}: test", f"{row['test']!r} is not ppN or tgN", "llama-bench")
        kind, tokens = m.group(1), m.group(2)
        rate = row["t/s"].split("±")[0]
        fields = {"n_prompt": tokens if kind == "pp" else 0, "n_gen": tokens if kind == "tg" else 0, "avg_ts": rate}
        points.append(_llama_row(fields, f"line {n}: "))
        model = model or row.get("model")
    if not points:
        raise _bad("line 3", "no test rows", "llama-bench")
    return Parsed(points, engine="llamacpp", **_llama_model({"model_type": model}))


def _stat(data: dict, key: str, fmt: str, *, required: bool = True, stat: str = "avg") -> float | None:
    block = data.get(key)
    if block is None:
        if required:
            raise _bad(key, "missing", fmt)
        return None
    if not isinstance(block, dict):
        raise _bad(key, "expected {unit, avg, p50, p99}", fmt)
    value = _num(block, stat, fmt, f"{key}.", required=required)
    unit = str(block.get("unit", "ms"))
    if value is not None and key in ("time_to_first_token", "inter_token_latency"):
        scale = {"ms": MS, "s": 1.0, "sec": 1.0, "ns": 1e-9, "us": 1e-6}.get(unit)
        if scale is None:
            raise _bad(f"{key}.unit", f"unit {unit!r} is not ms, s, us or ns", fmt)
        value *= scale
    return value


# the point's percentile -> genai-perf's (and AIPerf's) metric block and statistic
GENAI_PERF_TAILS = {"ttft_p50_s": ("time_to_first_token", "p50"), "ttft_p99_s": ("time_to_first_token", "p99"),
                    "tpot_p50_s": ("inter_token_latency", "p50"), "tpot_p99_s": ("inter_token_latency", "p99")}


def _find(obj: Any, key: str, depth: int = 0) -> Any:
    """The first value of ``key`` anywhere in nested objects (genai-perf moves its input config)."""
    if depth > 8:
        return None
    if isinstance(obj, dict):
        if key in obj and not isinstance(obj[key], (dict, list)):
            return obj[key]
        for v in obj.values():
            if (found := _find(v, key, depth + 1)) is not None:
                return found
    return None


def parse_genai_perf(text: str) -> Parsed:
    data = _json(text, "genai-perf")
    if not isinstance(data, dict):
        raise _bad("line 1", "expected a JSON object", "genai-perf")
    concurrency = _find(data.get("input_config", {}), "concurrency")
    if concurrency is None:
        raise _bad("input_config.concurrency", "missing: profile with --concurrency so the load is known", "genai-perf")
    point = _point("", "genai-perf", concurrency=int(_num({"c": concurrency}, "c", "genai-perf", "input_config.")),
                   input_tokens=round(_stat(data, "input_sequence_length", "genai-perf")),
                   output_tokens=round(_stat(data, "output_sequence_length", "genai-perf")),
                   ttft_s=_stat(data, "time_to_first_token", "genai-perf"),
                   tpot_s=_stat(data, "inter_token_latency", "genai-perf"),
                   output_tokens_per_s_total=_stat(data, "output_token_throughput", "genai-perf"),
                   requests_per_s=_stat(data, "request_throughput", "genai-perf", required=False),
                   **{field: _stat(data, key, "genai-perf", required=False, stat=stat) for field, (key, stat) in GENAI_PERF_TAILS.items()})
    return Parsed([point], model=_str(_find(data.get("input_config", {}), "model")), model_field="input_config.model")


def _mean(metrics: dict, key: str, where: str, *, required: bool = True, stat: str = "mean") -> float | None:
    block = metrics.get(key)
    successful = block.get("successful") if isinstance(block, dict) else None
    if not isinstance(successful, dict):
        if required:
            raise _bad(f"{where}{key}.successful", "missing", "guidellm")
        return None
    if stat == "p99":  # guidellm keeps percentiles apart: ``successful.percentiles.p99``
        percentiles = successful.get("percentiles")
        if percentiles is not None and not isinstance(percentiles, dict):
            raise _bad(f"{where}{key}.successful.percentiles", "expected {p50, p99 ...}", "guidellm")
        return _num(percentiles or {}, "p99", "guidellm", f"{where}{key}.successful.percentiles.", required=False)
    return _num(successful, stat, "guidellm", f"{where}{key}.successful.", required=required)


# the point's percentile -> guidellm's metric and statistic, read for a run of concurrent streams
# (``args.strategy.type_`` concurrent or synchronous: the closed loop the planner models)
GUIDELLM_TAILS = {"ttft_p50_s": ("time_to_first_token_ms", "median"), "ttft_p99_s": ("time_to_first_token_ms", "p99"),
                  "tpot_p50_s": ("time_per_output_token_ms", "median"), "tpot_p99_s": ("time_per_output_token_ms", "p99")}


def _guidellm_tails(b: dict, metrics: dict, where: str) -> dict[str, Any]:
    strategy = b.get("args", {}).get("strategy") if isinstance(b.get("args"), dict) else None
    if not isinstance(strategy, dict) or strategy.get("type_") not in ("concurrent", "synchronous"):
        return {}
    return {field: _ms(_mean(metrics, key, where, required=False, stat=stat)) for field, (key, stat) in GUIDELLM_TAILS.items()}


def parse_guidellm(text: str) -> Parsed:
    data = _json(text, "guidellm")
    benchmarks = data.get("benchmarks") if isinstance(data, dict) else None
    if not isinstance(benchmarks, list) or not benchmarks:
        raise _bad("benchmarks", "missing or empty", "guidellm")
    points = []
    for i, b in enumerate(benchmarks):
        where = f"benchmarks[{i}]."
        metrics = b.get("metrics") if isinstance(b, dict) else None
        if not isinstance(metrics, dict):
            raise _bad(f"{where}metrics", "missing", "guidellm")
        streams = _find(b.get("args", {}), "streams")
        if streams is None:
            streams = _mean(metrics, "request_concurrency", where)
        points.append(_point(where, "guidellm", concurrency=max(1, round(_num({"s": streams}, "s", "guidellm", f"{where}args.strategy."))),
                             input_tokens=round(_mean(metrics, "prompt_token_count", where)),
                             output_tokens=round(_mean(metrics, "output_token_count", where)),
                             ttft_s=_ms(_mean(metrics, "time_to_first_token_ms", where)),
                             tpot_s=_ms(_mean(metrics, "time_per_output_token_ms", where)),
                             output_tokens_per_s_total=_mean(metrics, "output_tokens_per_second", where),
                             requests_per_s=_mean(metrics, "requests_per_second", where, required=False),
                             **_guidellm_tails(b, metrics, where)))
    return Parsed(points)


def parse_csv(text: str) -> Parsed:
    # newline="": the csv module splits the lines itself, so a file ending its lines in '\r' alone reads too
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        return _csv_points(reader)
    except csv.Error as exc:  # a field past the module's size limit, ...: the line being read is the next one
        raise _bad(f"line {reader.line_num + 1}", f"not readable as CSV ({exc})", "csv") from None


def _csv_points(reader: csv.DictReader) -> Parsed:
    missing = [c for c in CSV_REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise _bad("line 1", f"the header lacks {', '.join(missing)} (columns: {', '.join(CSV_COLUMNS)})", "csv")
    unknown = [c for c in reader.fieldnames or [] if c not in CSV_COLUMNS]
    if unknown:
        raise _bad("line 1", f"unknown columns {', '.join(map(repr, unknown))} (columns: {', '.join(CSV_COLUMNS)})", "csv")
    points = []
    for n, row in enumerate(reader, 2):
        if None in row or any(v is None for v in row.values()):
            raise _bad(f"line {n}", "a row has a different number of cells from the header", "csv")
        where = f"line {n}: "
        value = lambda key, required=False: _num(row, key, "csv", where, required=required)  # noqa: E731
        points.append(_point(where, "csv", concurrency=int(value("concurrency", True)), input_tokens=int(value("input_tokens", True)),
                             output_tokens=int(value("output_tokens", True)), ttft_s=_ms(value("ttft_ms")),
                             tpot_s=_ms(value("tpot_ms")), output_tokens_per_s_total=value("output_tokens_per_s"),
                             requests_per_s=value("requests_per_s"), request_rate_per_s=value("request_rate_per_s"),
                             requests=_whole(value("requests")),
                             **{field: _ms(value(column)) for field, column in CSV_TAILS.items()}))
    if not points:
        raise _bad("line 2", "no rows", "csv")
    return Parsed(points)


PARSERS: dict[str, Callable[[str], Parsed]] = {
    "vllm": parse_vllm, "sglang": parse_sglang, "llama-bench": parse_llama_bench,
    "genai-perf": parse_genai_perf, "guidellm": parse_guidellm, "csv": parse_csv,
}


def guess_format(name: str, text: str) -> str:
    """The format a file is in, from its name and first bytes (``--format`` says it outright)."""
    lower, head = name.lower(), text.lstrip()[:4000]
    if lower.endswith(".jsonl"):
        return "sglang"
    if "genai_perf" in lower or "aiperf" in lower or '"time_to_first_token"' in head:
        return "genai-perf"
    if '"benchmarks"' in head:
        return "guidellm"
    if '"n_prompt"' in head or "avg_ts" in head or head.startswith("| model"):
        return "llama-bench"
    if head.startswith("{") and ('"mean_ttft_ms"' in head or '"output_throughput"' in head):
        return "vllm"
    if lower.endswith(".csv"):
        return "csv"
    raise InvalidScenarioError(f"{name}: cannot tell which client wrote it", field="format", allowed=", ".join(FORMATS))


def parse(text: str, fmt: str) -> Parsed:
    if fmt not in PARSERS:
        raise InvalidScenarioError(f"unknown format {fmt!r}", field="format", allowed=", ".join(FORMATS))
    parsed = PARSERS[fmt](text)
    if len(parsed.points) > MAX_POINTS:
        raise _bad("points", f"more than {MAX_POINTS:,} points", fmt)
    return parsed


def _whole(value: float | None) -> int | None:
    return None if value is None else round(value)


def _str(value: Any) -> str | None:
    return value.strip()[:200] if isinstance(value, str) and value.strip() else None


def _date(value: Any) -> str | None:
    m = re.match(r"^(\d{4})-?(\d{2})-?(\d{2})", value) if isinstance(value, str) else None
    return f"{m.group(1)}-{m.group(2)}-{m.group(3)}" if m else None


def _build(row: dict) -> str | None:
    commit, number = _str(row.get("build_commit")), row.get("build_number")
    return f"b{number} ({commit})" if number and commit else (f"b{number}" if number else commit)
