"""Start-up of the CLI (a benchmark, not a test): how long a command takes from a cold process,
with the compiled catalogue (the normal start) and without it (INFERPLAN_NO_CACHE=1, as after a
data edit), each also as a multiple of a bare `python -c pass`, which absorbs a machine's speed.

Targets: `inferplan --help` in 0.2 s, `fit`, `perf` and the whole `fits` matrix in 0.3 s.
Run: .venv/bin/python benchmarks/bench_startup.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
COMMANDS = {
    "--help": ["--help"],
    "fit": ["fit", "--model", "llama-3.1-8b", "--gpu", "H100"],
    "perf": ["perf", "--model", "llama-3.3-70b", "--gpu", "H100", "-tp", "2", "-q", "fp8"],
    "fits (whole matrix)": ["fits"],
}


def best_wall_s(argv: list[str], env: dict[str, str], repeat: int = 7) -> float:
    """The fastest of ``repeat`` cold runs: the least disturbed by other work on the machine."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    env = dict(os.environ)
    env.pop("INFERPLAN_NO_CACHE", None)
    # an installed package has its bytecode cached (pip compiles it); where PYTHONDONTWRITEBYTECODE is
    # set, an editable checkout would recompile every module on every start and time the compiler
    if env.pop("PYTHONDONTWRITEBYTECODE", None):
        print("PYTHONDONTWRITEBYTECODE unset for the runs: the first run caches inferplan's bytecode")
    bare = best_wall_s([sys.executable, "-c", "pass"], env)
    print(f"python -c pass: {bare * 1e3:.0f} ms")
    subprocess.run([str(BIN / "inferplan"), "fit", "--model", "llama-3.1-8b", "--gpu", "H100"], env=env,
                   stdout=subprocess.DEVNULL, check=True)  # compiles the catalogue once
    for name, args in COMMANDS.items():
        warm = best_wall_s([str(BIN / "inferplan"), *args], env)
        cold = best_wall_s([str(BIN / "inferplan"), *args], {**env, "INFERPLAN_NO_CACHE": "1"}, repeat=3)
        print(f"inferplan {name:20s} {warm * 1e3:5.0f} ms ({warm / bare:4.1f}x python)   "
              f"without the compiled catalogue {cold * 1e3:5.0f} ms ({cold / bare:4.1f}x)")


if __name__ == "__main__":
    main()
