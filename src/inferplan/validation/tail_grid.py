"""Where the queueing approximation departs from the simulation: a grid of deployments, loads and
length spreads, each simulated and approximated. Run: ``python -m inferplan.validation.tail_grid``."""

from __future__ import annotations

import statistics

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.search.arrivals import Load
from inferplan.search.queueing import approximate
from inferplan.search.service import service_curve
from inferplan.search.simulate import simulate

DEPLOYMENTS = (
    ("llama-3.1-8b on 1x H100", Deployment(model="llama-3.1-8b", gpu="H100")),
    ("llama-3.3-70b fp8 on 2x H100", Deployment(model="llama-3.3-70b", gpu="H100", quantization="fp8", tensor_parallel_size=2)),
    ("qwen3-30b-a3b on 1x L40S", Deployment(model="qwen3-30b-a3b", gpu="L40S", quantization="fp8")),
)
SHAPES = ((1024, 256), (4096, 512))
UTILISATIONS = (0.3, 0.6, 0.8, 0.9)
SPREADS = (0.0, 1.0)  # SCV of prompt and output lengths
ARRIVALS = (("poisson", 1.0), ("bursty", 1.5), ("bursty", 3.0))
METRICS = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s", "e2e_p99_s")
REQUESTS = 30_000


class GridRow(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    deployment: str
    input_tokens: int
    output_tokens: int
    utilisation: float
    spread_scv: float
    arrival: str
    differences: dict[str, float]  # approximation / simulation − 1 per metric (inf: unstable approximation)


def grid() -> list[GridRow]:
    catalog = load_catalog()
    rows = []
    for label, d in DEPLOYMENTS:
        for inp, out in SHAPES:
            curve = service_curve(d, Workload(input_len=inp, output_len=out), catalog)
            for scv in SPREADS:
                for arrival, peak in ARRIVALS:
                    shape = dict(input_tokens=inp, output_tokens=out, input_tokens_scv=scv, output_tokens_scv=scv)
                    unit = approximate(curve, Load(request_rate_per_s=1.0, **shape)).utilisation
                    for u in UTILISATIONS:
                        load = Load(arrival=arrival, peak_to_average=peak, request_rate_per_s=u / unit, **shape)
                        a, s = approximate(curve, load), simulate(curve, load, requests=REQUESTS, seed=1)
                        rows.append(GridRow(deployment=label, input_tokens=inp, output_tokens=out, utilisation=u,
                                            spread_scv=scv, arrival=f"{arrival} x{peak:g}" if arrival == "bursty" else arrival,
                                            differences={m: getattr(a, m) / getattr(s, m) - 1 for m in METRICS}))
    return rows


def summary(rows: list[GridRow]) -> list[str]:
    lines = ["| load | arrival | cases | " + " | ".join(f"{m} median (worst)" for m in METRICS) + " |",
             "|---|---|---|" + "---|" * len(METRICS)]
    for u in UTILISATIONS:
        for arrival in sorted({r.arrival for r in rows}):
            group = [r for r in rows if r.utilisation == u and r.arrival == arrival]
            cells = []
            for m in METRICS:
                diffs = [r.differences[m] for r in group]
                finite = [x for x in diffs if x != float("inf")]
                worst = max(diffs, key=abs)
                cells.append(f"{statistics.median(diffs):+.0%} ({worst:+.0%})" if finite else "unstable")
            lines.append(f"| {u:.0%} | {arrival} | {len(group)} | " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    print("\n".join(summary(grid())))
