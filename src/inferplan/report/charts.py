"""Vega-Lite specs for a plan's charts. Pure data → spec; rendering to SVG happens in ``files.py``.
The web page draws the same specs, so a report and the page always show the same numbers."""

from __future__ import annotations

from inferplan.economics.plan import PlanResult
from inferplan.economics.uncertainty import Uncertainty
from inferplan.units import GiB

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"


def _in(r: PlanResult, currency: str) -> tuple[float, str, str]:
    """The factor from USD into ``currency``, its code and its symbol."""
    return (r.eur(1.0), "EUR", "€") if currency == "eur" else (1.0, "USD", "$")


# titles start at the chart's left edge: centred over the plot, a title beside long axis labels ran
# past the right edge of a phone-wide chart
TITLE_CONFIG = {"title": {"anchor": "start", "frame": "bounds"}}


def _spec(title: str | list[str], description: str, values: list[dict], **body) -> dict:  # a list: one title line each
    """``description``: what the chart plots, its accessible name (the page's screen readers say it, not a
    generic "Vega visualization")."""
    return {"$schema": SCHEMA, "title": title, "description": description, "width": 420, "height": 220,
            "data": {"values": values}, "config": TITLE_CONFIG, **body}


def cost_per_user(r: PlanResult, u: Uncertainty | None = None, currency: str = "usd") -> dict:
    k, code, _ = _in(r, currency)
    rows = [
        ("Same-model API", r.same_model_api_usd_per_user_month, None),
        ("Selected API alternative", r.api_alternative_usd_per_user_month, None),
        ("Private quote", r.private_quote_usd_per_user_month, None),
        ("Operating break-even", r.operating_break_even_usd_per_user_month, u.operating_break_even_usd_per_user_month if u else None),
        ("Target-payback price", r.target_payback_usd_per_user_month, u.target_payback_usd_per_user_month if u else None),
    ]
    values = [{"price": name, "amount": k * v, "p10": k * (b.p10 if b else v), "p90": k * (b.p90 if b else v)}
              for name, v, b in rows if v is not None]
    return _spec(f"Price per user per month ({code})", f"Price per user per month in {code}: the APIs, the private "
                 "quote, the operating break-even and the target-payback price, with their P10–P90 ranges", values, layer=[
        {"mark": "bar", "encoding": {"y": {"field": "price", "type": "nominal", "sort": None, "title": None},
                                     "x": {"field": "amount", "type": "quantitative", "title": f"{code} per user per month"}}},
        {"mark": {"type": "rule", "color": "black"}, "encoding": {"y": {"field": "price", "type": "nominal", "sort": None},
                                                                 "x": {"field": "p10", "type": "quantitative"}, "x2": {"field": "p90"}}},
    ])


def payback_curve(r: PlanResult, months: int | None = None, currency: str = "usd") -> dict:
    k, code, _ = _in(r, currency)
    months = months or int(max(12, r.amortization_years * 12))
    values = [{"month": m, "amount": k * (-r.capex_usd + m * r.monthly_operating_cash_usd),
               "series": "cumulative operating cash − capex"} for m in range(months + 1)] if r.capex_usd is not None and not r.rented else []
    values += [{"month": m, "amount": 0.0, "series": "capex recovered"} for m in (0, months)]
    return _spec(f"Payback over time ({code})", f"Payback over time: cumulative operating cash less capex in {code} "
                 "against months, beside the line where the capex is recovered", values, mark="line", encoding={
        "x": {"field": "month", "type": "quantitative", "title": "months"},
        "y": {"field": "amount", "type": "quantitative", "title": code},
        "color": {"field": "series", "type": "nominal", "title": None, "legend": {"orient": "bottom", "direction": "vertical"}},  # one entry a line: fits a phone
    })


def capacity_by_constraint(r: PlanResult) -> dict:
    c = r.capacity
    values = [{"constraint": f"{k}: {v:,.0f}", "users": v} for k, v in r.users_per_loadout_by_limit.items()]
    # a linear scale, each bar's number in its label: a log scale without labels drew 19 as half of 550
    return _spec(["Users per loadout by constraint", f"binding: {c.binding}"],
                 f"Users per loadout by constraint, each limit's number of users; the binding one: {c.binding}",
                 values, mark="bar", encoding={
        "y": {"field": "constraint", "type": "nominal", "sort": None, "title": None},
        "x": {"field": "users", "type": "quantitative", "title": "users per loadout"},
    })


def uncertainty_bands(u: Uncertainty, r: PlanResult | None = None, currency: str = "usd") -> dict:
    k, code, sym = _in(r, currency) if r is not None else (1.0, "USD", "$")
    values = []
    for name, band in ((f"target-payback {sym}/user/month", u.target_payback_usd_per_user_month),
                       (f"operating break-even {sym}/user/month", u.operating_break_even_usd_per_user_month),
                       (f"owner cost {sym}/M total tokens", u.owner_cost_usd_per_mtok)):
        values.append({"metric": name, "p10": k * band.p10, "p50": k * band.p50, "p90": k * band.p90})
    return _spec(f"P10–P90 over {u.draws:,} draws (seed {u.seed})", f"Uncertainty in {code}: the P10–P90 range and "
                 f"median of the target-payback price, the operating break-even and the owner cost per million tokens "
                 f"over {u.draws:,} draws", values, layer=[
        {"mark": {"type": "rule", "strokeWidth": 3}, "encoding": {"y": {"field": "metric", "type": "nominal", "title": None},
                                                                 "x": {"field": "p10", "type": "quantitative", "title": code, "scale": {"type": "log"}},
                                                                 "x2": {"field": "p90"}}},
        {"mark": {"type": "point", "filled": True, "size": 80}, "encoding": {"y": {"field": "metric", "type": "nominal"},
                                                                          "x": {"field": "p50", "type": "quantitative"}}},
    ])


def plan_charts(r: PlanResult, u: Uncertainty | None, currency: str = "usd") -> dict[str, dict]:
    """The plan's charts, money in ``currency`` (usd | eur)."""
    charts = {"cost_per_user": cost_per_user(r, u, currency), "payback": payback_curve(r, currency=currency),
              "capacity": capacity_by_constraint(r)}
    if u is not None:
        charts["uncertainty"] = uncertainty_bands(u, r, currency)
    return charts


def memory_breakdown(fit) -> dict:
    """Per-GPU memory of a fit: weights, activations, runtime, KV cache, and what the engine leaves unused."""
    parts = [("weights", fit.weights_bytes_per_gpu),
             *([("vision projector", fit.vision_projector_bytes_per_gpu)] if fit.vision_projector_bytes_per_gpu else []),
             ("activations", fit.activation_bytes_per_gpu),
             ("runtime", fit.overhead_bytes_per_gpu), ("KV cache", fit.kv_cache_bytes_per_gpu),
             ("outside the engine's budget", max(fit.gpu_memory_bytes - fit.usable_bytes_per_gpu, 0.0))]
    values = [{"part": name, "GiB": value / GiB, "gpu": fit.accelerator} for name, value in parts]
    return _spec(["Memory per GPU (GiB = 2^30 bytes)", f"{fit.model} on {fit.accelerator}"],
                 f"Memory per GPU of {fit.model} on {fit.accelerator} in GiB: weights, activations, runtime, KV cache "
                 "and what lies outside the engine's budget", values, height=80, mark="bar", encoding={
        "y": {"field": "gpu", "type": "nominal", "title": None},
        "x": {"field": "GiB", "type": "quantitative", "stack": "zero", "title": "GiB per GPU"},
        "color": {"field": "part", "type": "nominal", "sort": [p[0] for p in parts], "title": None},
        "order": {"field": "order", "type": "quantitative"},
    })


def frontier_chart(f) -> dict:
    values = [{"tokens/s per user": p.output_tokens_per_s_per_user, "tokens/s per GPU": p.output_tokens_per_s_per_gpu,
               "concurrency": p.concurrency} for p in f.points]
    return _spec(["Throughput–interactivity frontier", f"{f.input_len}/{f.output_len} tokens, {f.source}"],
                 f"Throughput–interactivity frontier: output tokens/s per GPU against tokens/s per user at "
                 f"{f.input_len} input and {f.output_len} output tokens", values,
                 mark={"type": "line", "point": True}, encoding={
                     "x": {"field": "tokens/s per user", "type": "quantitative"},
                     "y": {"field": "tokens/s per GPU", "type": "quantitative"},
                     "tooltip": [{"field": "concurrency"}, {"field": "tokens/s per user"}, {"field": "tokens/s per GPU"}],
                 })
