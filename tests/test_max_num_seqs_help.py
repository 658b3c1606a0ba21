"""--max-num-seqs is read per data-parallel rank (deploy -dp 8 --max-num-seqs 112 launches SGLang with
--max-running-requests 896); its help says so on every command that takes it."""

from __future__ import annotations

import typer.main

from inferplan.shells.cli import app


def test_max_num_seqs_help_says_per_data_parallel_rank():
    group = typer.main.get_command(app)
    helps = {name: p.help for name, command in group.commands.items() for p in getattr(command, "params", [])
             if "--max-num-seqs" in getattr(p, "opts", ())}
    assert {"fit", "perf", "deploy"} <= set(helps)
    assert all("per data-parallel rank" in " ".join(h.split()) for h in helps.values()), helps
