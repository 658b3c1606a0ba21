"""A llama.cpp deployment holds whole --parallel slots: fit's JSON, its human line and the what-fits
matrix give the slots the launch opens (``max_concurrency``, ``started_slots``) and the most whose
cache fits (``most_slots``), never the KV room divided by one sequence."""

from rich.console import Console

from inferplan.inputs.deployment import Deployment
from inferplan.memory.matrix import fits_matrix
from inferplan.memory.slots import most_slots
from inferplan.memory.suggest import fit_or_suggest
from inferplan.shells import render
from inferplan.shells.render_fits import fits_grid

OFFLOADED = Deployment(model="gpt-oss-120b", gpu="rtx-5090", engine="llamacpp", n_cpu_moe=30,
                       host_memory_gb=96, max_model_len=32768)


def test_fit_json_gives_the_slots_its_human_line_gives(catalog):
    r = fit_or_suggest(OFFLOADED, catalog)
    assert r.fits and (r.started_slots, r.max_concurrency, r.total_max_concurrency) == (1, 1.0, 1.0)
    assert r.most_slots == most_slots(OFFLOADED, catalog, 1024) and r.most_slots > 1
    console = Console(width=200, record=True)
    render.print_fit(console, r, OFFLOADED, False)
    assert f"at once: 1 sequence of 32,768 tokens, the --parallel slots it is started with; {r.most_slots} fit" in \
        console.export_text()


def test_stated_slots_are_what_it_holds_at_once(catalog):
    r = fit_or_suggest(OFFLOADED.model_copy(update={"max_num_seqs": 4}), catalog)
    assert (r.started_slots, r.max_concurrency, r.most_slots) == (4, 4.0, None)


def test_the_fits_matrix_shows_the_most_whole_slots_that_fit(catalog):
    matrix = fits_matrix(models=["qwen3-30b-a3b", "gemma-3-27b"], gpus=["rtx-4090"], quantizations=["q4_k_m"],
                         engine="llamacpp", catalog=catalog)
    for cell in matrix.cells:
        d = Deployment(model=cell.model, gpu="rtx-4090", engine="llamacpp", quantization=cell.quantization,
                       max_model_len=cell.result.max_model_len)
        assert cell.result.most_slots == fit_or_suggest(d, catalog).most_slots
        assert cell.result.max_concurrency == 1.0
    console = Console(width=200, record=True)
    console.print(fits_grid(matrix, 200))
    text = console.export_text()
    rows = {line.split()[0]: line.split()[-1] for line in text.splitlines() if line.startswith(("qwen3", "gemma"))}
    assert rows == {c.model: str(c.result.most_slots) for c in matrix.cells}  # whole: 8, not 8.5
    assert "the most whose cache fits (fit's most_slots" in text


def test_what_runs_on_a_gpu_counts_llamacpp_in_the_matrixs_whole_slots(catalog):
    from inferplan.performance.here import what_runs_on

    runs = what_runs_on("rtx-4090", 1, catalog, engine="llamacpp", quantizations=["q4_k_m"])
    rows = [r for r in runs.models if r.model == "qwen3-30b-a3b"]
    matrix = fits_matrix(models=["qwen3-30b-a3b"], gpus=["rtx-4090"], quantizations=["q4_k_m"], engine="llamacpp",
                         catalog=catalog)
    assert [r.concurrency for r in rows] == [float(matrix.cells[0].result.most_slots)]


def test_fit_names_the_slots_that_fit_when_fewer_fit_than_it_states():
    # 40 stated slots of 2,500 tokens do not fit a 24 GB card: the line names the 26 that do
    from typer.testing import CliRunner

    from inferplan.shells.cli import app
    ran = CliRunner().invoke(app, ["fit", "--model", "qwen3-30b-a3b", "--gpu", "rtx-3090", "-q", "q4_k_m", "--engine",
                                   "llamacpp", "--max-model-len", "2500", "--max-num-seqs", "40"], env={"COLUMNS": "200"})
    assert "26 fit: --max-num-seqs 26" in " ".join(ran.stdout.split()), ran.stdout


def test_fit_says_no_slot_fits_where_not_even_one_does(catalog):
    # a 70B Q4_K_M file is larger than the 36 GiB a 48 GB Mac lets the GPU wire: the slot it starts fits nowhere
    d = Deployment(model="llama-3.3-70b", gpu="M4 Pro 48GB", engine="llamacpp", quantization="q4_k_m",
                   max_model_len=8192)
    r = fit_or_suggest(d, catalog)
    assert not r.fits and r.most_slots == 0 and r.max_concurrency == 0
    console = Console(width=200, record=True)
    render.print_fit(console, r, d, False)
    assert "at once: 1 sequence of 8,192 tokens, the --parallel slots it is started with; not even one fits" in \
        console.export_text()
