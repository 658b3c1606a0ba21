"""Measured points of the very deployment an estimate is about, quoted beside it.

A serving profile (a measured sweep) replaces the model where it matches (``profiles.py``). A
single published point does not: it was taken at one workload, one build, and sources for the same
cell can disagree by more than the model's error. So an estimate quotes every scored speed point
of its deployment — model, accelerator, GPU count, tensor and pipeline parallel size, engine (and
llama.cpp back end), weight format, concurrency and speculative tokens — with its workload, build
and source, and what the estimate gives for the same figure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferplan.catalog.points_schema import SpeedMetric, SpeedPoint
from inferplan.performance.estimate import MeasuredQuote, ServingEstimate

if TYPE_CHECKING:  # pragma: no cover
    from inferplan.catalog.loader import Catalog

MAX_QUOTES = 5  # the points nearest the asked workload; the rest are counted


def metric_value(metric: SpeedMetric, est: ServingEstimate, input_tokens: int) -> float:
    """An estimate's figure for a measured metric (prompt tokens/s over ``input_tokens``)."""
    if metric is SpeedMetric.DECODE_TOKENS_PER_S_PER_USER:
        return est.output_tokens_per_s_per_user
    if metric is SpeedMetric.PREFILL_TOKENS_PER_S:  # prompt processing alone (llama-bench pp, offline prefill)
        return max(input_tokens, 1) / est.prefill_s
    if metric in (SpeedMetric.OUTPUT_TOKENS_PER_S_TOTAL, SpeedMetric.DECODE_TOKENS_PER_S_TOTAL):
        return est.output_tokens_per_s_total
    if metric is SpeedMetric.TOTAL_TOKENS_PER_S:
        return est.output_tokens_per_s_total + est.input_tokens_per_s_total
    if metric is SpeedMetric.TTFT_S:
        return est.ttft_s
    return est.tpot_s


def point_value(point: SpeedPoint, est: ServingEstimate) -> float:
    """An estimate's figure for what ``point`` measured: a decode rate timed over the whole request
    (``timed_over: request``) spends the prompt's TTFT too, output tokens over TTFT plus their decode."""
    value = metric_value(point.metric, est, point.input_tokens)
    if point.timed_over == "request" and point.metric is SpeedMetric.DECODE_TOKENS_PER_S_PER_USER:
        return point.output_tokens / (est.ttft_s + point.output_tokens / value)
    return value


def matching_points(catalog: Catalog, est: ServingEstimate, *, tp: int, pp: int, backend: str | None,
                    speculative_tokens: int, max_load: bool) -> list[SpeedPoint]:
    """Scored points measured on the deployment and concurrency ``est`` describes."""
    return [
        p for p in catalog.speed_points_by_cell.get((est.model, est.accelerator), ())
        if p.cuda_graphs and p.gpus == est.gpus
        and p.tensor_parallel_size == tp and p.pipeline_parallel_size == pp and p.engine == est.engine
        and p.quantization == est.quantization and p.speculative_tokens == speculative_tokens
        and (p.backend or backend) == backend  # a point without one ran on the accelerator's default
        and (p.concurrency is None if max_load else p.concurrency == est.concurrency)
    ]


def measured_quotes(points: list[SpeedPoint], est: ServingEstimate, input_len: int, output_len: int) -> tuple[MeasuredQuote, ...]:
    """The points nearest the asked input/output lengths first."""
    def distance(p: SpeedPoint) -> float:
        return abs(p.input_tokens - input_len) / max(input_len, 1) + abs(p.output_tokens - output_len) / max(output_len, 1)

    return tuple(
        MeasuredQuote(point=p.id, metric=p.metric.value, measured=p.measured.value,
                      estimate=point_value(p, est), input_tokens=p.input_tokens,
                      output_tokens=p.output_tokens, engine_version=p.engine_version, source=p.measured.source)
        for p in sorted(points, key=lambda p: (distance(p), p.id))
    )


def quote_note(q: MeasuredQuote, input_len: int, output_len: int) -> str:
    """A quoted point in words: its difference from the estimate only where it measured the asked
    workload (elsewhere the two differ by the workload too; `inferplan validate --speed` scores it)."""
    time = q.metric in (SpeedMetric.TPOT_S.value, SpeedMetric.TTFT_S.value)
    value = (lambda v: f"{v * 1e3:,.2f} ms") if time else (lambda v: f"{v:,.1f}")
    same = (q.input_tokens, q.output_tokens) == (input_len, output_len)
    versus = (f"({(q.estimate - q.measured) / q.measured:+.0%})" if same else
              f"at the asked {input_len}/{output_len} (another workload, so not the model's error on the point: "
              "`inferplan validate --speed` scores that)")
    return (f"measured on this deployment: {q.metric} {value(q.measured)} at {q.input_tokens}/{q.output_tokens} tokens "
            f"({q.engine_version}; source {q.source}, point {q.point}); this estimate gives {value(q.estimate)} {versus}")
