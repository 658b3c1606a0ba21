"""``inferplan simulate``: a deployment under load, simulated beside the queueing approximation."""

from pathlib import Path
from typing import Optional

import typer

from inferplan.errors import InferplanError
from inferplan.shells.cli_common import (
    TokensOpt,
    DraftAcceptanceOpt,
    SimulatedMaxLenOpt,
    catalog_for,
    JsonOpt,
    console,
    deployment_from,
    emit_json,
    FLAGS as COMMON_FLAGS,
    fail,
    fail_naming,
    flags_in,
    workload,
)
from inferplan.shells.cli_flags import FORMAT, LAYOUT, LIMITS, deployment_flags
from inferplan.shells.pydantic_errors import allowed_by

# SimulationQuery field -> the flag a user typed
FLAGS = {"request_rate_per_s": "--request-rate", "users": "--users", "workload_preset": "--workload",
         "clients": "--clients", "peak_to_average": "--peak-to-average", "burst_period_s": "--burst-period",
         "input_tokens_scv": "--input-scv", "output_tokens_scv": "--output-scv", "lengths": "--lengths",
         "input_len": "--input-len", "output_len": "--output-len", "workload.input_len": "--input-len",
         "workload.output_len": "--output-len", "prefill_instances": "--prefill-instances",
         "prefill_tensor_parallel_size": "--prefill-tensor-parallel-size", "kv_transfer_s": "--kv-transfer-s"}


@deployment_flags(*LAYOUT, *LIMITS, *FORMAT, options={"max_model_len": SimulatedMaxLenOpt})
def simulate_cmd(
    flags: dict,
    input_len: int = TokensOpt(1024, "--input-len", help="Mean prompt tokens per request."),
    output_len: int = TokensOpt(256, "--output-len", help="Mean generated tokens per request."),
    input_scv: float = typer.Option(0.0, "--input-scv", help="Spread of prompt lengths: squared coefficient of variation (0: all the mean)."),
    output_scv: float = typer.Option(0.0, "--output-scv", help="Spread of output lengths (squared coefficient of variation)."),
    lengths: str = typer.Option("lognormal", "--lengths", help="lognormal | uniform: how lengths spread (uniform: a benchmark's random dataset, SCV at most 1/3)."),
    speculative_tokens: int = typer.Option(0, "--speculative-tokens", min=0, max=32, help="Draft tokens proposed per step (0: no speculative decoding)."),
    acceptance_rate: Optional[float] = DraftAcceptanceOpt,
    prefix_cache_hit_rate: Optional[float] = typer.Option(None, "--prefix-cache-hit-rate", help="Share of prompt tokens served from the prefix cache, 0 to 1 (not prefilled again; default 0, or the --workload preset's with --users)."),
    request_rate_per_s: Optional[float] = typer.Option(None, "--request-rate", help="Mean requests per second."),
    users: Optional[int] = typer.Option(None, "--users", help="Users of --workload: their busiest-hour request rate and lengths."),
    workload_preset: Optional[str] = typer.Option(None, "--workload", help="Workload preset for --users (default chat-seat; agent-worker ...)."),
    clients: Optional[int] = typer.Option(None, "--clients", help="A closed loop: this many clients, each sending when its last request ends."),
    trace: Optional[Path] = typer.Option(None, "--trace", help="CSV or JSONL (gzip, xz, bzip2 or zip too) of arrival_s (or timestamp), input_tokens, output_tokens, or the Azure, BurstGPT or Mooncake trace's columns; replayed end to end up to --requests."),
    arrival: str = typer.Option("poisson", "--arrival", help="poisson | bursty"),
    peak_to_average: float = typer.Option(1.0, "--peak-to-average", help="Bursty: busy-state rate over the mean (above 1)."),
    burst_period_s: Optional[float] = typer.Option(None, "--burst-period", help="Bursty: mean seconds of one busy and one quiet spell (default 60)."),
    requests: int = typer.Option(20_000, "--requests", help="Requests to simulate."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
    replicas: int = typer.Option(1, "--replicas", help="Copies of the deployment behind the router."),
    router: str = typer.Option("least-loaded", "--router", help="least-loaded | round-robin"),
    prefill_instances: Optional[int] = typer.Option(None, "--prefill-instances", help="Separate pools: this many prefill instances ahead of the deployment, which is the decode instance (--replicas: decode instances); on a --system the prefill GPUs come out of it and each decode instance runs on --gpus, else on its share of the rest."),
    prefill_tensor_parallel_size: Optional[int] = typer.Option(None, "--prefill-tensor-parallel-size", help="With --prefill-instances: the prefill instance's TP size (default the deployment's)."),
    kv_transfer_s: Optional[float] = typer.Option(None, "--kv-transfer-s", help="With --prefill-instances: one request's KV hand-over in seconds (default: its KV cache over the link joining the pools)."),
    as_json: bool = JsonOpt,
) -> None:
    """Tail latency under load: p50/p95/p99 TTFT, TPOT and E2E, simulated and approximated."""
    from pydantic import ValidationError

    from inferplan.search.simulation import SimulationQuery, simulate_deployment
    from inferplan.search.trace import read_trace
    from inferplan.shells.render_latency import print_simulation

    d = deployment_from(flags)
    w = workload(input_len=input_len, output_len=output_len, concurrency=None, speculative_tokens=speculative_tokens,
                 acceptance_rate=acceptance_rate, prefix_cache_hit_rate=prefix_cache_hit_rate)
    try:
        query = SimulationQuery(
            deployment=d, workload=w, request_rate_per_s=request_rate_per_s, users=users, workload_preset=workload_preset,
            clients=clients, arrival=arrival.strip().lower(), peak_to_average=peak_to_average,
            **({"burst_period_s": burst_period_s} if burst_period_s is not None else {}), input_tokens_scv=input_scv, output_tokens_scv=output_scv,
            lengths=lengths.strip().lower(), requests=requests,
            seed=seed, replicas=replicas, router=router.strip().lower(), prefill_instances=prefill_instances,
            prefill_tensor_parallel_size=prefill_tensor_parallel_size, kv_transfer_s=kv_transfer_s)
        parsed = read_trace(trace) if trace is not None else None
        result = simulate_deployment(query, catalog_for(d), trace=parsed)  # catalog_for: --gpu local
    except ValidationError as exc:
        first = exc.errors()[0]
        key = str(first["loc"][0]) if first["loc"] else ""
        message = _flags_in(first["msg"].removeprefix("Value error, "))
        flag = _flag(key) if key else None
        fail(f"{flag}: {message}" if flag else message, field=flag, allowed=allowed_by(first), detail=message)
    except InferplanError as exc:
        # the query's own fields are said as flags; "trace" only where the error names it (else a word: "the trace")
        every = {**COMMON_FLAGS, **FLAGS, "trace": "--trace"}
        fail_naming({**COMMON_FLAGS, "trace": "--trace"}, exc, _flag(exc.field) if exc.field else None, own=FLAGS,
                    allowed_names=every)
    if as_json:
        emit_json(result)
    else:
        print_simulation(console, result)


def _flag(field: str) -> str:
    """The flag a domain field (or a trace row's cell) was given by."""
    if field.startswith("trace"):
        return "--trace"
    return FLAGS.get(field, field if field.startswith("-") else f"--{field.replace('_', '-')}")


def _flags_in(message: str) -> str:
    """``message`` of the query's own validation with the query's fields said as flags (its validators name
    only its fields: "a workload preset goes with users")."""
    return flags_in(message, FLAGS)
