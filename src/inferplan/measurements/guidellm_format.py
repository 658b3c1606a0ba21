"""guidellm's ``guidellm benchmark --output-path report.json`` → a measured point per benchmark (keys in
``formats.py``'s docstring; sources in docs/measurements.md). The report moved between releases: the strategy from
``args.strategy`` to ``config.strategy`` and the request totals from the benchmark into its ``metrics`` (guidellm 0.4
on, ``GenerativeBenchmark`` in src/guidellm/benchmark/schemas/benchmark.py), and both places are read."""

from __future__ import annotations

from typing import Any

from inferplan.measurements.result_fields import (Parsed, bad_field, find_key, from_ms, measured_point, read_count, read_json,
                                                  read_number)


def _mean(metrics: dict, key: str, where: str, *, required: bool = True, stat: str = "mean") -> float | None:
    block = metrics.get(key)
    successful = block.get("successful") if isinstance(block, dict) else None
    if not isinstance(successful, dict):
        if required:
            raise bad_field(f"{where}{key}.successful", "missing", "guidellm")
        return None
    if stat == "p99":  # guidellm keeps percentiles apart: ``successful.percentiles.p99``
        percentiles = successful.get("percentiles")
        if percentiles is not None and not isinstance(percentiles, dict):
            raise bad_field(f"{where}{key}.successful.percentiles", "expected {p50, p99 ...}", "guidellm")
        return read_number(percentiles or {}, "p99", "guidellm", f"{where}{key}.successful.percentiles.", required=False)
    return read_number(successful, stat, "guidellm", f"{where}{key}.successful.", required=required)


# guidellm's TPOT: ``inter_token_latency_ms``, the first token to the last over the tokens after the first, as vLLM's
# TPOT; its ``time_per_output_token_ms`` runs from the request's start, so it counts the wait for the first token
# (``GenerativeRequestStats`` in src/guidellm/schemas/base/request_stats.py, guidellm 0.8.1)
GUIDELLM_TPOT = "inter_token_latency_ms"
# the point's percentile -> guidellm's metric and statistic, read for a run of concurrent streams
# (``args.strategy.type_`` concurrent or synchronous: the closed loop the planner models)
GUIDELLM_TAILS = {"ttft_p50_s": ("time_to_first_token_ms", "median"), "ttft_p99_s": ("time_to_first_token_ms", "p99"),
                  "tpot_p50_s": (GUIDELLM_TPOT, "median"), "tpot_p99_s": (GUIDELLM_TPOT, "p99")}


# the point's field -> the figure it is read from, to name one out of the point's range
GUIDELLM_KEYS = {"concurrency": "args.strategy.streams", "input_tokens": "prompt_token_count.successful.mean",
                 "output_tokens": "output_token_count.successful.mean",
                 **{field: f"{key}.successful.mean" for field, key in (
                     ("ttft_s", "time_to_first_token_ms"), ("tpot_s", GUIDELLM_TPOT),
                     ("output_tokens_per_s_total", "output_tokens_per_second"), ("requests_per_s", "requests_per_second"))},
                 **{field: f"{key}.successful.{'percentiles.p99' if stat == 'p99' else stat}"
                    for field, (key, stat) in GUIDELLM_TAILS.items()}}


def _strategy(b: dict) -> dict:
    """The benchmark's scheduling strategy: ``config.strategy`` (guidellm 0.4 on), ``args.strategy`` before."""
    for holder in ("config", "args"):
        strategy = b.get(holder, {}).get("strategy") if isinstance(b.get(holder), dict) else None
        if isinstance(strategy, dict):
            return strategy
    return {}


def _guidellm_tails(b: dict, metrics: dict, where: str) -> dict[str, Any]:
    if _strategy(b).get("type_") not in ("concurrent", "synchronous"):
        return {}
    return {field: from_ms(_mean(metrics, key, where, required=False, stat=stat)) for field, (key, stat) in GUIDELLM_TAILS.items()}


def parse_guidellm(text: str) -> Parsed:
    data = read_json(text, "guidellm")
    benchmarks = data.get("benchmarks") if isinstance(data, dict) else None
    if not isinstance(benchmarks, list) or not benchmarks:
        raise bad_field("benchmarks", "missing or empty", "guidellm")
    points = []
    for i, b in enumerate(benchmarks):
        where = f"benchmarks[{i}]."
        metrics = b.get("metrics") if isinstance(b, dict) else None
        if not isinstance(metrics, dict):
            raise bad_field(f"{where}metrics", "missing", "guidellm")
        failed = _guidellm_failed(b, where)
        concurrency = _concurrency(b, metrics, where)
        points.append(measured_point(where, "guidellm", GUIDELLM_KEYS, concurrency=concurrency,
                                     input_tokens=round(_mean(metrics, "prompt_token_count", where)),
                                     output_tokens=round(_mean(metrics, "output_token_count", where)),
                                     ttft_s=from_ms(_mean(metrics, "time_to_first_token_ms", where)),
                                     tpot_s=from_ms(_mean(metrics, GUIDELLM_TPOT, where)),
                                     output_tokens_per_s_total=_mean(metrics, "output_tokens_per_second", where),
                                     requests_per_s=_mean(metrics, "requests_per_second", where, required=False),
                                     failed_requests=failed, **_guidellm_tails(b, metrics, where)))
    return Parsed(points)


def _concurrency(b: dict, metrics: dict, where: str) -> int:
    """The streams of a concurrent strategy (a synchronous one is one), else the mean requests in flight."""
    strategy = _strategy(b)
    holder = "config" if isinstance(b.get("config"), dict) and b["config"].get("strategy") is strategy else "args"
    if strategy.get("type_") == "synchronous":
        return 1
    if strategy.get("streams") is not None:
        return read_count(strategy, "streams", "guidellm", f"{where}{holder}.strategy.")
    streams = find_key(b.get("args", {}), "streams")
    if streams is None:
        streams = _mean(metrics, "request_concurrency", where)
    return max(1, round(read_number({"streams": streams}, "streams", "guidellm", f"{where}args.strategy.")))


def _guidellm_failed(b: dict, where: str) -> int | None:
    """A benchmark's requests that failed, ``request_totals.errored`` + ``incomplete`` (None: the report counts none;
    guidellm 0.4 on keeps the totals in ``metrics``); a benchmark with none ``successful`` is refused naming it: it
    measured nothing."""
    metrics = b.get("metrics") if isinstance(b.get("metrics"), dict) else {}
    at, totals = next(((f"{where}{p}request_totals.", t) for p, t in (("", b.get("request_totals")),
                       ("metrics.", metrics.get("request_totals"))) if isinstance(t, dict)), ("", None))
    if totals is None:
        return None
    failed = sum(read_count(totals, key, "guidellm", at, required=False) or 0 for key in ("errored", "incomplete"))
    if read_count(totals, "successful", "guidellm", at, required=False) == 0:
        raise bad_field(f"{at}successful", f"no request completed ({failed} errored or incomplete): a benchmark none of "
                        "whose requests completed measured nothing", "guidellm")
    return failed
