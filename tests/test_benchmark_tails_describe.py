"""A benchmark run's load is named in words a reader reads as written: one client in the singular."""

from __future__ import annotations

from inferplan.search.benchmark_tails import describe, run_load


def test_a_closed_loop_of_one_client_is_singular():
    one = run_load(input_tokens=1000, output_tokens=100, max_concurrency=1, requests=50)
    assert describe(one) == "closed loop, 1 client"
    many = run_load(input_tokens=1000, output_tokens=100, max_concurrency=1200, requests=5000)
    assert describe(many) == "closed loop, 1,200 clients"
