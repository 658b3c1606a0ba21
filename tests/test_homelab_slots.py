"""A llama.cpp row of What runs on my GPUs? counts the requests at once as the what-fits matrix does (the
most --parallel slots whose cache fits), and its command opens that many."""

import re

from inferplan.catalog.loader import load_catalog
from inferplan.memory.matrix import fits_matrix
from inferplan.performance.here import what_runs_on
from inferplan.report.homelab_view import homelab_view

CATALOG = load_catalog()


def test_a_llamacpp_row_serves_the_slots_the_fits_matrix_counts_and_its_command_opens_them():
    view = homelab_view(what_runs_on("rtx-4090", 1, CATALOG, engine="llamacpp", quantizations=["q4_k_m"]), CATALOG)
    rows = {row.model: row for row in view.rows if row.fits}
    cells = {c.model: c for c in fits_matrix(models=list(rows), gpus=["rtx-4090"], engine="llamacpp",
                                             quantizations=["q4_k_m"], catalog=CATALOG).cells}
    assert rows["gpt-oss-20b"].at_once != "1"
    for model, row in rows.items():
        assert row.at_once == f"{cells[model].requests_at_once:,}", model
        slots = int(re.search(r"--parallel (\d+)", row.command).group(1))
        assert f"{slots:,}" == row.at_once, model
        assert f"--ctx-size {slots * cells[model].result.max_model_len}" in row.command, model
