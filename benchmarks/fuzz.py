"""Fuzz the HTTP API from its own OpenAPI schema with schemathesis (a benchmark, not a test).

In-process over ASGI, on a fresh database: for every operation, up to EXAMPLES distinct
valid-by-schema requests and as many schema-violating ones (fewer when an operation has fewer
distinct inputs: GET /api/catalog has none), then a stateful run that follows the schema's links (save a scenario, then
read, rename, compare and delete it). Prints the requests and status codes per operation and
every 5xx; exits 1 on any 5xx.

Run: .venv/bin/python benchmarks/fuzz.py [--examples 1000] [--stateful-steps 300]
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from inferplan.shells.api import create_app

QUIET = settings(deadline=None, database=None, derandomize=True, phases=[Phase.generate],
                 suppress_health_check=list(HealthCheck))


def fuzz_operation(operation, mode: GenerationMode, examples: int, failures: list[str]) -> collections.Counter:
    statuses: collections.Counter = collections.Counter()
    seen: set[str] = set()

    @settings(QUIET, max_examples=examples)
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case) -> None:
        request = repr((case.path_parameters, case.query, case.headers, case.body, case.media_type))
        if request in seen:
            return  # an operation with few inputs (?kind=all|memory|speed) is asked each of them once
        seen.add(request)
        response = case.call()
        statuses[response.status_code] += 1
        if response.status_code >= 500:
            failures.append(f"{operation.label} [{mode.value}] -> {response.status_code}: {response.text[:300]}\n"
                            f"    {case.as_curl_command()[:600]}")

    try:
        run()
    except Unsatisfiable:
        pass  # no input of this kind exists (e.g. a schema violation of an operation without parameters)
    return statuses


def stateful(schema, steps: int, failures: list[str]) -> collections.Counter:
    statuses: collections.Counter = collections.Counter()
    machine = schema.as_state_machine()

    class Recording(machine):  # type: ignore[misc, valid-type]
        def validate_response(self, response, case, **kwargs) -> None:
            statuses[(case.operation.label, response.status_code)] += 1
            if response.status_code >= 500:
                failures.append(f"stateful {case.operation.label} -> {response.status_code}: {response.text[:300]}")

    Recording.run(settings=settings(QUIET, max_examples=steps, stateful_step_count=8))
    return statuses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000, help="requests per operation and generation mode (at most)")
    parser.add_argument("--stateful-steps", type=int, default=300, help="stateful scenarios (up to 8 linked calls each)")
    args = parser.parse_args()

    app = create_app(tempfile.mkdtemp(prefix="inferplan-fuzz-") + "/fuzz.db")
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    failures: list[str] = []
    total: collections.Counter = collections.Counter()
    t0 = time.perf_counter()
    for result in schema.get_all_operations():
        operation = result.ok()
        row = collections.Counter()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            row += fuzz_operation(operation, mode, args.examples, failures)
        total += row
        print(f"{operation.label:48s} {sum(row.values()):6d} requests  " + " ".join(f"{k}:{v}" for k, v in sorted(row.items())),
              flush=True)
    links = stateful(schema, args.stateful_steps, failures)
    linked = collections.Counter()
    for (label, status), n in links.items():
        linked[label] += n
        total[status] += n
    print("stateful (links followed):", ", ".join(f"{label} {n}" for label, n in sorted(linked.items())))
    print(f"total {sum(total.values())} requests in {time.perf_counter() - t0:.0f} s: "
          + " ".join(f"{k}:{v}" for k, v in sorted(total.items())) + f"; 5xx: {len(failures)}")
    for failure in failures[:50]:
        print("5xx:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
