"""A search's answer as people read it: each ranked deployment as three short texts (what to run,
what it costs, how fast it answers) with the notes it rests on, the families that failed and why,
the API beside it, and the front of cost against tokens/s per user as a Vega-Lite chart. The
terminal and the web page both show these texts, so they read the same."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.report.charts import SCHEMA, TITLE_CONFIG
from inferplan.report.money import monthly_text
from inferplan.search.arrivals import plural, rate_text
from inferplan.search.reasons import miss_text, unit_of
from inferplan.search.result import (ApiAlternative, Deployed, Infeasible, NearMiss, NextStep, ParetoPoint, ReasonGroup,
                                     SearchResult, TargetMiss)


def duration(seconds: float) -> str:
    """A time as people read it: seconds from 1 s, whole milliseconds from 1 ms, hundredths of one below
    (a KV cache handed over in 0.31 ms, never "0 ms" for a time that is not nothing)."""
    ms = seconds * 1e3
    if seconds >= 1:
        return f"{seconds:,.2f} s"
    if ms >= 1:
        return f"{ms:,.0f} ms"
    if ms >= 0.01:
        return f"{ms:.2f} ms"
    return "< 0.01 ms" if seconds > 0 else "0 ms"


def layout_text(d: Deployed) -> str:
    drafter = f"EAGLE-3 {d.draft_model}" if d.speculative_method == "eagle3" else "MTP"
    spec = f", {drafter} {d.speculative_tokens} draft" if d.speculative_tokens else ""
    if d.pools:  # separate pools, each in its own layout
        pools = " + ".join(f"{p.role} {p.layout} × {p.instances}" for p in d.pools)
        return f"{pools}, ≤ {d.max_num_seqs} running per decode instance{spec}"
    cell = d.layout
    ranks = f" ({d.max_num_seqs_per_rank} per rank)" if d.data_parallel_size > 1 else ""
    return f"{cell} × {plural(d.replicas, 'instance')}, ≤ {d.max_num_seqs} running each{ranks}{spec}"


def gpus_text(gpus: int, gpus_paid: int, systems: int | None, whole_rack: bool) -> str:
    """GPUs run on, and those paid for where whole systems hold more: "52 GPUs in 7 systems (56 paid
    for)"; a rack says that it is priced whole: "1 GPU in 1 system (the whole rack's 72 GPUs priced)"."""
    text = plural(gpus, "GPU") + (f" in {plural(systems, 'system')}" if systems else "")
    if gpus_paid > gpus:
        whose = "the whole rack's" if systems == 1 else "the whole racks'"
        whose = "whole racks'" if systems is None else whose  # rented racks
        text += f" ({whose} {gpus_paid:,} GPUs priced)" if whole_rack else f" ({gpus_paid:,} paid for)"
    return text


def rented_text(d: Deployed) -> str:
    """GPUs run on in the rented instances that hold them: "6 GPUs in 1 rented 8-GPU instance (8 paid for)"."""
    paid = f" ({d.gpus_paid:,} paid for)" if d.gpus_paid > d.gpus else ""
    return f"{plural(d.gpus, 'GPU')} in {plural(d.rented_instances, f'rented {d.rented_instance_gpus}-GPU instance')}{paid}"


def deployment_text(d: Deployed) -> str:
    where = d.platform if d.rented_instances else d.system or d.platform
    text = (f"{d.model} on {where} · {d.engine} · {d.quantization} ({d.quantization_label}) · KV {d.kv_cache_dtype}\n"
            f"{layout_text(d)}; {rented_text(d) if d.rented_instances else gpus_text(d.gpus, d.gpus_paid, d.systems, d.whole_rack)}")
    if d.disaggregated and d.kv_transfer_s is not None:
        text += f"\nKV cache handed over in {duration(d.kv_transfer_s)} on {d.kv_transfer_link}"
    if d.context_at_mean_request:
        text += (f"\ncontext {d.max_model_len:,} tokens, the mean request (no length spread stated): the engine "
                 "refuses any longer request")
    if d.longer_request_share:
        share = f"{d.longer_request_share:.2%}" if d.longer_request_share >= 1e-4 else "under 0.01%"
        text += (f"\ncontext {d.max_model_len:,} tokens, the model's own: {share} of the requests are longer and "
                 "refused")
    return text


def cost_text(d: Deployed) -> str:
    capex = f"\ncapex ${d.capex_usd:,.0f}" if d.rent_or_buy == "buy" and d.capex_usd else ""
    return f"{monthly_text(d.monthly_usd)}/month ({d.rent_or_buy})\n${d.usd_per_mtok:,.3f}/Mtok{capex}"


def latency_text(d: Deployed) -> str:
    """The percentiles of the pick's simulation where it has one (JSON ``simulated_ttft_p95_s`` …), else
    the queueing approximation's (``ttft_p95_s`` …), labelled which: the approximation takes the batch a
    newcomer joins at its mean, so while few requests wait its TTFT p50, p95 and p99 differ by the step
    under way alone (docs/search.md). The end-to-end p95 is shown beside the TPOT p95, from the same."""
    t, how = (d.simulation, "simulated") if d.simulation is not None else (d, "approximated")
    return (f"TTFT {duration(t.ttft_p50_s)} / {duration(t.ttft_p95_s)} / {duration(t.ttft_p99_s)} (p50/95/99, {how})\n"
            f"TPOT p95 {duration(t.tpot_p95_s)}; end-to-end p95 {duration(t.e2e_p95_s)} ({how}); "
            f"{d.output_tokens_per_s_per_user:,.0f} tok/s each on average\n"
            f"binding: {d.binding}")


def infeasible_text(x: Infeasible) -> str:
    return f"{x.model} on {x.platform} · {x.engine} · {x.quantization}: {x.reason} — {x.message}{_fits_hint(x)}"


def _fits_hint(x: Infeasible | ReasonGroup) -> str:
    """The smaller format (and shorter context) that fits, as the memory fit finds it ("": none)."""
    if not x.fits_in_quantization:
        return ""
    at = f" at {x.fits_at_max_model_len:,} tokens" if x.fits_at_max_model_len else ""
    return f"; it fits as {x.fits_in_quantization}{at} (name it among the quantizations to search)"


def group_text(g: ReasonGroup, infeasible: tuple[Infeasible, ...] = ()) -> str:
    """One reason and the families it failed: a lone family as ``infeasible_text`` says it, several as
    "price — <message>: 55 families (qwen3-32b on 1x-h100-sxm, 2x-h100-sxm; llamacpp, vllm; 9 weight formats)"."""
    if len(g.families) == 1:
        f = g.families[0]
        x = next((x for x in infeasible if (x.model, x.platform, x.engine, x.quantization, x.message)
                  == (f.model, f.platform, f.engine, f.quantization, g.message)), None)
        if x is not None:
            return infeasible_text(x)
        return f"{f.model} on {f.platform} · {f.engine} · {f.quantization}: {g.reason} — {g.message}{_fits_hint(g)}"
    def seen(attr: str) -> list[str]:
        return list(dict.fromkeys(getattr(f, attr) for f in g.families))
    quants = seen("quantization")
    formats = ", ".join(quants) if len(quants) <= 3 else f"{len(quants)} weight formats"
    return (f"{g.reason} — {g.message}: {len(g.families)} families ({', '.join(seen('model'))} on "
            f"{', '.join(seen('platform'))}; {', '.join(seen('engine'))}; {formats}){_fits_hint(g)}")


def infeasible_lines(r: SearchResult) -> tuple[str, ...]:
    """The failed families, one line per reason (``SearchResult.infeasible_summary``)."""
    return tuple(group_text(g, r.infeasible) for g in r.infeasible_summary.groups)


def headline(r: SearchResult) -> str:
    """What leads an answer with no deployment: its one cause when one explains it."""
    cause = r.infeasible_summary.cause
    return f"{cause[0].upper()}{cause[1:]}." if cause else "No deployment meets every target."


def next_step_text(step: NextStep) -> str:
    """A next step in words with the request fields it sets, as the web page's form names them."""
    said = [f"{k} {_value_text(v)}" for k, v in step.changes.items() if v is not None]
    return f"{step.text} ({'; '.join(said)})" if said else step.text


def _value_text(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={'your price' if v is None else f'{v:.12g}'}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


# how a near miss beats the top pick, by the objective
CHEAPER_WORDS = {"usd-per-mtok": "cheaper", "monthly": "cheaper", "capex": "less capex", "gpus": "fewer GPUs",
                 "power": "less power"}


def near_misses_title(r: SearchResult) -> str:
    first = "cheaper than #1, " if r.results else ""
    return (f"Near misses ({first}each missing a target by at most {r.near_miss_margin:.0%}, inside the speed model's "
            "error; docs/search.md)")


def relaxed_text(m: TargetMiss, names: dict[str, str] | None = None) -> str:
    """The relaxed target as a flag (``names``: target field -> flag) or in words: "--min-tokens-per-s-per-user
    69.8", "tokens/s per user (p95) ≥ 69.8 tok/s"."""
    if names:
        return f"{names[m.target]} {m.relaxed:.12g}"
    unit = f" {unit_of(m.target)}" if unit_of(m.target) else ""
    return f"{m.label} {'≥' if unit_of(m.target) == 'tok/s' else '≤'} {m.relaxed:.12g}{unit}"


def near_miss_text(n: NearMiss, objective: str, names: dict[str, str] | None = None) -> str:
    """One near miss: the relaxed targets that admit it, what it is and costs, and each target it misses."""
    cheaper = f", {n.times_cheaper:,.3g}× {CHEAPER_WORDS[objective]} than #1" if n.times_cheaper else ""
    misses = "; ".join(miss_text(m.label, m.value, m.limit, unit_of(m.target), "under" if unit_of(m.target) == "tok/s"
                                 else "over", lead="reaches") for m in n.misses)
    return (f"{' and '.join(relaxed_text(m, names) for m in n.misses)} admits {n.model} on {n.platform} · {n.engine} · "
            f"{n.quantization} ({n.layout} × {n.replicas}, {plural(n.gpus_paid, 'GPU')}) at {monthly_text(n.monthly_usd)}"
            f"/month ({n.rent_or_buy}){cheaper}: {misses}")


def pareto_text(p: ParetoPoint) -> str:
    return (f"${p.usd_per_mtok:,.3f}/Mtok at {p.output_tokens_per_s_per_user:,.0f} tok/s per user: "
            f"{p.platform} · {p.engine} · {p.quantization}, {gpus_text(p.gpus, p.gpus_paid, p.systems, p.whole_rack)}"
            + (" (disaggregated)" if p.disaggregated else ""))


def api_text(a: ApiAlternative) -> str:
    return f"at an API: {a.id} ({a.provider}) ${a.usd_per_mtok:,.3f}/Mtok, {monthly_text(a.monthly_usd)}/month"


# each objective in words, as the page's "Rank by" control names it
OBJECTIVE_WORDS = {"usd-per-mtok": "USD per million tokens", "monthly": "monthly cost", "capex": "capex",
                   "gpus": "GPU count", "power": "power"}


def summary_text(r: SearchResult) -> str:
    load = r.load
    who = (f"{plural(load.users, 'user')} ({load.workload})" if load.users else f"trace {load.trace}" if load.trace
           else f"{rate_text(load.request_rate_per_s)} requests/s")
    how = (f" in bursts at {load.peak_to_average:g}× the mean rate (a busy and a quiet spell per {load.burst_period_s:g} s)"
           if load.arrival == "bursty" else "")
    spread = (f" ({load.lengths} length spread SCV {load.input_tokens_scv:.3g} / {load.output_tokens_scv:.3g}; cells "
              f"hold {load.longest_request_tokens:,} tokens, or their model's own context if shorter)"
              if load.input_tokens_scv or load.output_tokens_scv else "")
    return (f"{who}: {rate_text(load.request_rate_per_s)} requests/s{how} of {load.input_len:,} + {load.output_len:,} "
            f"tokens{spread}; {r.candidates:,} deployments on {r.cells:,} replica cells checked in {r.elapsed_s:.2f} s; "
            f"ranked by {OBJECTIVE_WORDS[r.objective]}.")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)


class SearchRow(_Frozen):
    rank: int
    deployment: str
    cost: str
    latency: str
    notes: tuple[str, ...]  # what the pick rests on, as `inferplan search` prints under its table
    deploy: str  # the launch command
    scenario: dict  # what the Users + ROI simulator loads


class SearchView(_Frozen):
    summary: str
    notes: tuple[str, ...]
    rows: tuple[SearchRow, ...]
    infeasible: tuple[str, ...]  # the families with no deployment that works, one line per reason
    headline: str = ""  # with no deployment: its one cause when one explains it, else that none meets every target
    next_steps: tuple[str, ...] = ()  # with a cause: the searches to run next, in words
    near_misses_title: str = ""  # what the near misses are, said above them
    near_misses: tuple[str, ...] = ()  # one line per near miss: the relaxed target that admits it, its cost
    api: tuple[str, ...]
    chart: dict | None  # the cost/interactivity front; None when nothing is feasible
    result: SearchResult


def pareto_chart(r: SearchResult) -> dict | None:
    if not r.pareto:
        return None
    values = [{"tokens/s per user": p.output_tokens_per_s_per_user, "USD per million tokens": p.usd_per_mtok,
               "deployment": f"{p.platform} · {p.engine} · {p.quantization} · "
                             f"{gpus_text(p.gpus, p.gpus_paid, p.systems, p.whole_rack)}"
                             + (" (disaggregated)" if p.disaggregated else "")} for p in r.pareto]
    return {"$schema": SCHEMA, "title": ["Cost against interactivity", "no deployment is both cheaper and faster per user"],
            "description": "Cost against interactivity: USD per million tokens (log scale) against output tokens/s per "
                           "user of the deployments no other is both cheaper and faster than",  # the chart's accessible name
            "width": 420, "height": 220, "data": {"values": values}, "config": TITLE_CONFIG,
            "mark": {"type": "line", "point": True, "interpolate": "step-after"},
            "encoding": {"x": {"field": "tokens/s per user", "type": "quantitative"},
                         "y": {"field": "USD per million tokens", "type": "quantitative", "scale": {"type": "log"}},
                         "tooltip": [{"field": "deployment"}, {"field": "tokens/s per user", "format": ",.0f"},
                                     {"field": "USD per million tokens", "format": ",.3f"}]}}


def search_view(r: SearchResult) -> SearchView:
    rows = tuple(SearchRow(rank=d.rank, deployment=deployment_text(d), cost=cost_text(d), latency=latency_text(d),
                           notes=d.notes, deploy=d.deploy, scenario=d.scenario) for d in r.results)
    api = tuple(api_text(a) for a in r.api)
    return SearchView(summary=summary_text(r), notes=r.notes, rows=rows, infeasible=infeasible_lines(r), api=api,
                      headline="" if rows else headline(r),
                      next_steps=tuple(next_step_text(n) for n in r.infeasible_summary.next_steps),
                      near_misses_title=near_misses_title(r),
                      near_misses=tuple(near_miss_text(n, r.objective) for n in r.near_misses), chart=pareto_chart(r), result=r)
