"""The cost/interactivity frontier: tokens/s per GPU against tokens/s per user as concurrency sweeps
from one request to what the KV cache holds, each point an ``estimate_at`` of the same deployment."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.memo import per_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.context import ServingContext
from inferplan.performance.profiles import find_profile
from inferplan.performance.run_record import UserRun
from inferplan.performance.serving import estimate_at, user_run_estimate, with_profile


class FrontierPoint(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    concurrency: int
    output_tokens_per_s_per_user: float
    output_tokens_per_s_per_gpu: float
    ttft_s: float
    bound: str


class Frontier(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    model: str
    accelerator: str
    gpus: int
    input_len: int
    output_len: int
    max_concurrency: int
    points: tuple[FrontierPoint, ...]
    source: str
    assumptions: tuple[str, ...]
    layout_note: str | None = None  # how the layout was chosen when only a GPU count was given
    build_note: str | None = None  # the build an Ollama tag naming the model selected (catalog/ollama.py)


def _sources(found: set[str]) -> str:
    return found.pop() if len(found) == 1 else "measured+calibrated-model"


@per_catalog(maxsize=256)  # the plan view draws the same frontier for every user count and price
def frontier(d: Deployment, w: Workload, catalog: Catalog | None = None, *, points: int = 24,
             user_runs: tuple[UserRun, ...] = ()) -> Frontier:
    """Throughput per GPU vs tokens/s per user as concurrency sweeps from 1 to what memory holds
    (from the user's own matching run where there is one, ``estimate``)."""
    catalog = catalog or load_catalog()
    ctx = ServingContext(catalog, d, w)
    top = min(ctx.max_concurrency(), ctx.max_running * ctx.dp)
    levels = sorted({max(1, round(top ** (i / max(points - 1, 1)))) for i in range(points)})
    estimates = [estimate_at(ctx, c) for c in levels]
    profile, skipped = find_profile(ctx)
    if profile is not None:
        estimates = [with_profile(ctx, e, profile) for e in estimates]
    if user_runs and w.speculative_tokens == 0:
        estimates = [user_run_estimate(ctx, e, user_runs) for e in estimates]
    return Frontier(
        model=ctx.mp.result.model, accelerator=ctx.mp.result.accelerator, gpus=ctx.gpus,
        input_len=w.input_len, output_len=w.output_len, max_concurrency=ctx.max_concurrency(),
        points=tuple(
            FrontierPoint(concurrency=e.concurrency, output_tokens_per_s_per_user=e.output_tokens_per_s_per_user,
                          output_tokens_per_s_per_gpu=e.output_tokens_per_s_per_gpu, ttft_s=e.ttft_s, bound=e.bound)
            for e in estimates
        ),
        source=_sources({e.source for e in estimates}),
        assumptions=tuple(dict.fromkeys([*(a for e in estimates for a in e.assumptions), *skipped])),
        layout_note=ctx.mp.result.layout_note, build_note=ctx.mp.result.build_note,
    )
