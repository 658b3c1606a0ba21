"""Rendering a ``SearchResult`` for the terminal: a list layout (every id whole within 100
columns), the families that failed and why, the cost/interactivity front and the API beside."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from inferplan.search.result import Deployed, SearchResult


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.0f} ms" if seconds < 1 else f"{seconds:,.2f} s"


def _layout(d: Deployed) -> str:
    cell = f"TP{d.tensor_parallel_size}"
    if d.pipeline_parallel_size > 1:
        cell += f" PP{d.pipeline_parallel_size}"
    if d.expert_parallel:
        cell = f"DP{d.data_parallel_size} + EP{d.gpus_per_instance}"
    pools = (f"{d.prefill_instances} prefill + {d.decode_instances} decode instances"
             if d.disaggregated else f"{d.replicas} instance{'s' if d.replicas > 1 else ''}")
    spec = f", MTP {d.speculative_tokens} draft" if d.speculative_tokens else ""
    return f"{cell} × {pools}, ≤ {d.max_num_seqs} running each{spec}"


def print_search(console: Console, r: SearchResult, *, show_deploy: bool = False) -> None:
    load = r.load
    who = (f"{load.users:,} users ({load.workload})" if load.users else f"trace {load.trace}" if load.trace
           else f"{load.request_rate_per_s:g} requests/s")
    console.print(f"[bold]{who}[/]: {load.request_rate_per_s:,.2f} requests/s of {load.input_len:,} + {load.output_len:,} "
                  f"tokens; {r.candidates:,} deployments on {r.cells:,} replica cells checked in {r.elapsed_s:.2f} s; "
                  f"ranked by {r.objective}")
    for note in r.notes:
        console.print(f"[dim]{note}[/]")
    if r.results:
        table = Table(show_lines=True, width=min(console.width, 100))
        table.add_column("#", justify="right", width=3)
        table.add_column("deployment", overflow="fold", ratio=3)
        table.add_column("cost", overflow="fold", ratio=2)
        table.add_column("latency", overflow="fold", ratio=2)
        for d in r.results:
            where = d.system or d.platform
            what = (f"{d.model} on [bold]{where}[/] · {d.engine} · {d.quantization} ({d.quantization_label}) · "
                    f"KV {d.kv_cache_dtype}\n"
                    f"{_layout(d)}; {d.gpus} GPU{'s' if d.gpus > 1 else ''}" + (f" in {d.systems} system{'s' if d.systems > 1 else ''}" if d.systems else ""))
            if d.disaggregated:
                what += f"\nKV cache handed over in {_ms(d.kv_transfer_s)} on {d.kv_transfer_link}"
            if show_deploy:
                what += f"\n[dim]{d.deploy}[/]"
            capex = f"\ncapex ${d.capex_usd:,.0f}" if d.rent_or_buy == "buy" and d.capex_usd else ""
            cost = f"${d.monthly_usd:,.0f}/month ({d.rent_or_buy})\n${d.usd_per_mtok:,.3f}/Mtok{capex}"
            lat = (f"TTFT {_ms(d.ttft_p50_s)} / {_ms(d.ttft_p95_s)} / {_ms(d.ttft_p99_s)} (p50/95/99)\n"
                   f"TPOT p95 {_ms(d.tpot_p95_s)} = {d.output_tokens_per_s_per_user:,.0f} tok/s each\n"
                   f"binding: {d.binding}")
            table.add_row(str(d.rank), what, cost, lat)
        console.print(table)
    else:
        console.print("[bold red]No deployment meets every target.[/] Why, family by family:")
    if r.infeasible:
        shown = r.infeasible if not r.results else r.infeasible[:12]
        console.print(f"[bold]{len(r.infeasible)} families with no deployment that works[/]"
                      + (" (first 12; --json lists all)" if len(shown) < len(r.infeasible) else "") + ":")
        for x in shown:
            console.print(f"  {x.model} on {x.platform} · {x.engine} · {x.quantization}: [yellow]{x.reason}[/] — {x.message}",
                          highlight=False)
    if r.pareto:
        console.print("[bold]cost against interactivity[/] (no deployment is both cheaper and faster per user):")
        for p in r.pareto[:8]:
            console.print(f"  ${p.usd_per_mtok:,.3f}/Mtok at {p.output_tokens_per_s_per_user:,.0f} tok/s per user: "
                          f"{p.platform} · {p.engine} · {p.quantization}, {p.gpus} GPU{'s' if p.gpus > 1 else ''}"
                          + (" (disaggregated)" if p.disaggregated else ""), highlight=False)
    for a in r.api:
        console.print(f"at an API: {a.id} ({a.provider}) ${a.usd_per_mtok:,.3f}/Mtok, ${a.monthly_usd:,.0f}/month",
                      highlight=False)
