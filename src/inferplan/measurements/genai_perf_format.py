"""genai-perf's and AIPerf's ``profile_export_genai_perf.json`` → one measured point (keys in ``formats.py``'s
docstring; sources in docs/measurements.md): each figure a ``{unit, avg, p50, p99}`` block, the load from
``input_config``, AIPerf's ``error_request_count`` the requests that failed."""

from __future__ import annotations

from inferplan.measurements.result_fields import (MS, Parsed, bad_field, find_key, measured_point, read_count, read_json,
                                                  read_number, text_of)


def _stat(data: dict, key: str, fmt: str, *, required: bool = True, stat: str = "avg") -> float | None:
    block = data.get(key)
    if block is None:
        if required:
            raise bad_field(key, "missing", fmt)
        return None
    if not isinstance(block, dict):
        raise bad_field(key, "expected {unit, avg, p50, p99}", fmt)
    value = read_number(block, stat, fmt, f"{key}.", required=required)
    unit = str(block.get("unit", "ms"))
    if value is not None and key in ("time_to_first_token", "inter_token_latency"):
        scale = {"ms": MS, "s": 1.0, "sec": 1.0, "ns": 1e-9, "us": 1e-6}.get(unit)
        if scale is None:
            raise bad_field(f"{key}.unit", f"unit {unit!r} is not ms, s, us or ns", fmt)
        value *= scale
    return value


# the point's percentile -> genai-perf's (and AIPerf's) metric block and statistic
GENAI_PERF_TAILS = {"ttft_p50_s": ("time_to_first_token", "p50"), "ttft_p99_s": ("time_to_first_token", "p99"),
                    "tpot_p50_s": ("inter_token_latency", "p50"), "tpot_p99_s": ("inter_token_latency", "p99")}


def parse_genai_perf(text: str) -> Parsed:
    data = read_json(text, "genai-perf")
    if not isinstance(data, dict):
        raise bad_field("line 1", "expected a JSON object", "genai-perf")
    concurrency = find_key(data.get("input_config", {}), "concurrency")
    if concurrency is None:
        raise bad_field("input_config.concurrency", "missing: profile with --concurrency so the load is known", "genai-perf")
    failed = _genai_perf_failed(data)  # before the figures a run with no completed request lacks
    keys = {"concurrency": "input_config.concurrency", "input_tokens": "input_sequence_length",
            "output_tokens": "output_sequence_length", "ttft_s": "time_to_first_token", "tpot_s": "inter_token_latency",
            "output_tokens_per_s_total": "output_token_throughput", "requests_per_s": "request_throughput",
            "failed_requests": "error_request_count.avg",
            **{field: f"{key}.{stat}" for field, (key, stat) in GENAI_PERF_TAILS.items()}}
    point = measured_point("", "genai-perf", keys,
                           concurrency=read_count({"concurrency": concurrency}, "concurrency", "genai-perf", "input_config."),
                           input_tokens=round(_stat(data, "input_sequence_length", "genai-perf")),
                           output_tokens=round(_stat(data, "output_sequence_length", "genai-perf")),
                           ttft_s=_stat(data, "time_to_first_token", "genai-perf"),
                           tpot_s=_stat(data, "inter_token_latency", "genai-perf"),
                           output_tokens_per_s_total=_stat(data, "output_token_throughput", "genai-perf"),
                           requests_per_s=_stat(data, "request_throughput", "genai-perf", required=False),
                           failed_requests=failed,
                           **{field: _stat(data, key, "genai-perf", required=False, stat=stat)
                              for field, (key, stat) in GENAI_PERF_TAILS.items()})
    return Parsed([point], model=text_of(find_key(data.get("input_config", {}), "model")), model_field="input_config.model")


def _genai_perf_failed(data: dict) -> int | None:
    """The requests that failed: AIPerf's ``error_request_count`` (``{unit, avg}``, the count in ``avg``), which it
    writes only when a request failed; genai-perf counts none (None). A run none of whose requests completed
    measured nothing and is refused naming ``request_count`` (AIPerf: the requests that completed), read before the
    figures, which such a run lacks: AIPerf writes 0 there, or leaves the key out when every request failed
    (``completed_request_count_metric.py``)."""
    failed = _count_block(data, "error_request_count")
    completed = _count_block(data, "request_count")
    if failed and not completed:
        where, said = ("request_count.avg", "") if completed == 0 else ("request_count", "missing: ")
        raise bad_field(where, f"{said}no request completed ({failed} failed): a run none of whose requests "
                        "completed measured nothing", "genai-perf")
    return failed


def _count_block(data: dict, key: str) -> int | None:
    block = data.get(key)
    if block is None:
        return None
    if not isinstance(block, dict):
        raise bad_field(key, "expected {unit, avg}", "genai-perf")
    return read_count(block, "avg", "genai-perf", f"{key}.")
