"""Output for people: each command leads with its answer and fits one screen, the assumptions wait
behind --explain (and stay in --json), --gpus alone plans one instance and says so, a no-fit answer
ends with commands that fit, and an imported config.json is named after its model."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.shells.cli import app

INFERPLAN = str(Path(sys.executable).parent / "inferplan")
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DATA = Path(__file__).resolve().parent / "data"
CONFIGS = Path(load_catalog().data_dir) / "hf_configs"
SCREEN_LINES = 40
runner = CliRunner()


def screen(*args: str, status: int = 0) -> str:
    env = {**os.environ, "COLUMNS": "100", "LINES": "50"}
    done = subprocess.run([INFERPLAN, *args], env=env, capture_output=True, text=True)
    assert done.returncode == status, done.stderr
    return done.stdout


def as_json(*args: str) -> dict:
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code in (0, 1), r.output
    answer = json.loads(r.stdout)
    assert r.exit_code == (1 if args[0] == "fit" and answer.get("fits") is False else 0), r.output  # fit: 1 = no fit
    return answer


NO_FIT = ("fit", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--engine", "llamacpp", "--quantization", "gguf-q8_0",
          "--max-model-len", "131072")
DEFAULTS = {
    "fit": ("fit", "--model", "llama-3.3-70b", "--gpu", "h100", "--gpus", "4", "--max-model-len", "8192"),
    "fit-no-fit": NO_FIT,
    "perf": ("perf", "--model", "qwen3-30b-a3b", "--gpu", "h100"),
    "frontier": ("frontier", "--model", "llama-3.1-8b", "--gpu", "h100"),
    "plan": ("plan", str(EXAMPLES / "coding-developers-b200.yaml")),
    "fits": ("fits",),
}


@pytest.mark.parametrize("name", DEFAULTS)
def test_the_default_output_fits_one_screen_and_leads_with_the_answer(name):
    out = screen(*DEFAULTS[name], status=1 if name == "fit-no-fit" else 0)  # fit exits 1 when it does not fit
    lines = out.splitlines()
    # the default what-fits grid has a row per catalogue model that runs on one of its four GPUs in some
    # published build (llama-3.1-405b, minimax-m3 and qwen3.5-397b-a17b only in a 4-bit one on the B300):
    # the screen's 50 lines
    assert len(lines) <= (50 if name == "fits" else SCREEN_LINES), out
    first = lines[0]
    assert {"fit": "fits", "fit-no-fit": "does not fit", "perf": "tok/s per user", "frontier": "llama-3.1-8b",
            "plan": "Recommendation:", "fits": "What fits"}[name] in first
    assert "--explain" in out


def test_every_example_plan_fits_one_screen():
    for example in sorted(EXAMPLES.glob("*.yaml")):
        assert len(screen("plan", str(example), "--draws", "200").splitlines()) <= SCREEN_LINES, example.name


@pytest.mark.parametrize("args, assumption", [
    (("fit", "--model", "llama-3.1-8b", "--gpu", "h100"), "free at start-up − margin"),
    (("perf", "--model", "llama-3.1-8b", "--gpu", "h100"), "track record, vllm"),
    (("frontier", "--model", "llama-3.1-8b", "--gpu", "h100", "--points", "3"), "rates:"),
    (("plan", str(EXAMPLES / "coding-developers-b200.yaml"), "--draws", "200"), "amortization 4 years"),
])
def test_the_assumptions_and_track_record_show_behind_explain(args, assumption):
    plain = runner.invoke(app, list(args)).stdout
    explained = runner.invoke(app, [*args, "--explain"]).stdout
    assert assumption not in plain
    assert assumption in explained


def _keys(obj, prefix=""):
    out = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add(prefix + k)
            out |= _keys(v, prefix + k + ".")
    elif isinstance(obj, list) and obj and isinstance(obj[0], dict):
        out |= _keys(obj[0], prefix + "[].")
    return out


JSON_COMMANDS = {
    "fit": ("fit", "--model", "llama-3.1-8b", "--gpu", "h100"),
    "fit_nofit": ("fit", "--model", "llama-3.3-70b", "--gpu", "rtx-4090"),
    "perf": ("perf", "--model", "llama-3.1-8b", "--gpu", "h100"),
    "frontier": ("frontier", "--model", "llama-3.1-8b", "--gpu", "h100", "--points", "3"),
    "plan": ("plan", str(EXAMPLES / "coding-developers-b200.yaml"), "--draws", "100"),
    "model_import": ("model", "import", str(CONFIGS / "qwen3-30b-a3b.json")),
}


@pytest.mark.parametrize("name", JSON_COMMANDS)
def test_json_keeps_every_key_the_answer_had(name):
    """Key sets recorded from the JSON answers before the human output was reshaped."""
    before = set(json.loads((DATA / "cli_json_keys.json").read_text())[name])
    now = {k for k in _keys(as_json(*JSON_COMMANDS[name])) if ".assumptions." not in k}
    assert before - now == set()


def test_two_gpus_without_parallel_sizes_run_one_tensor_parallel_instance_and_say_so():
    out = runner.invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "RTX 4090", "--gpus", "2"]).stdout
    assert "2 GPUs: one instance, tensor parallel 2 (no parallel sizes given)" in out
    r = as_json("fit", "--model", "llama-3.1-8b", "--gpu", "RTX 4090", "--gpus", "2")
    assert (r["parallel"]["tensor_parallel_size"], r["parallel"]["data_parallel_size"]) == (2, 1)
    perf = as_json("perf", "--model", "llama-3.1-8b", "--gpu", "RTX 4090", "--gpus", "2")
    assert perf["layout_note"] == r["layout_note"] and perf["gpus"] == 2
    # a stated size keeps the copies: data-parallel as asked, and a stated TP 1 means copies too
    for stated in (("--data-parallel-size", "2"), ("--tensor-parallel-size", "1")):
        copies = as_json("fit", "--model", "llama-3.1-8b", "--gpu", "RTX 4090", "--gpus", "2", *stated)
        assert copies["parallel"]["data_parallel_size"] == 2 and copies["layout_note"] is None


def test_gpus_alone_lay_out_as_the_engine_launches():
    catalog = load_catalog()

    def layout(**kw):
        p = fit(Deployment(model="llama-3.1-8b", **kw), catalog).parallel
        return p.tensor_parallel_size, p.pipeline_parallel_size, p.data_parallel_size

    assert layout(gpu="h100", gpus=4) == (4, 1, 1)
    assert layout(gpu="h100", gpus=3) == (1, 3, 1)  # 32 heads do not split over 3: pipeline stages
    assert layout(gpu="h100", gpus=6) == (2, 3, 1)
    assert layout(gpu="h100", gpus=16) == (1, 1, 16)  # beyond one 8-GPU host: copies of the one GPU that holds it
    assert layout(gpu="rtx-4090", gpus=2, engine="llamacpp", quantization="gguf-q8_0") == (1, 2, 1)  # layer split
    assert layout(gpu="h100", gpus=2, data_parallel_size=2) == (1, 1, 2)
    assert layout(system="hgx-h100") == (1, 1, 8)  # a system without --gpus keeps its copies


def test_a_no_fit_answer_ends_with_four_commands_that_each_fit():
    out = runner.invoke(app, list(NO_FIT)).stdout
    assert "does not fit" in out
    commands = [line.strip() for line in out.splitlines() if line.strip().startswith("inferplan fit ")]
    assert len(commands) == 4, out
    kinds = [s["kind"] for s in as_json(*NO_FIT)["suggestions"]]
    assert kinds == ["context", "gpus", "quantization", "offload"]
    for command in commands:
        r = as_json(*shlex.split(command)[1:])
        assert r["fits"], command
    shorter = as_json(*shlex.split(commands[0])[1:])
    longer = as_json(*NO_FIT[:-1], str(shorter["max_model_len"] + 256))
    assert not longer["fits"]  # the suggested context is the longest, in 256-token steps


def test_when_no_smaller_format_holds_the_context_the_answer_pairs_one_with_the_longest_it_holds():
    # Llama 3.3 70B on two RTX 4090s: every weight format too large at 131,072 tokens; INT4 holds a shorter one
    args = ("fit", "--model", "llama-3.3-70b", "--gpu", "RTX 4090", "--gpus", "2", "--json")
    found = [s for s in as_json(*args)["suggestions"] if s["kind"] == "quantization" and "engine" not in s["changes"]]
    assert len(found) == 1 and set(found[0]["changes"]) == {"quantization", "max_model_len"}
    changes = found[0]["changes"]
    assert as_json(*args, "--quantization", changes["quantization"], "--max-model-len", str(changes["max_model_len"]))["fits"]
    longer = str(changes["max_model_len"] + 256)
    assert not as_json(*args, "--quantization", changes["quantization"], "--max-model-len", longer)["fits"]
    assert not as_json(*args, "--quantization", changes["quantization"])["fits"]  # not at the asked context


def test_the_api_returns_the_suggestions_too():
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    body = {"model": "llama-3.1-8b", "gpu": "rtx-4090", "max_model_len": 131072}
    r = TestClient(create_app(":memory:")).post("/api/fit", json=body).json()
    assert not r["fits"] and {"context", "gpus"} <= {s["kind"] for s in r["suggestions"]}
    assert all(fit(Deployment(**{**body, **s["changes"]})).fits for s in r["suggestions"])


def _config(tmp_path: Path, name: str, **extra) -> Path:
    folder = tmp_path / "configs"
    folder.mkdir(exist_ok=True)
    raw = {**json.loads((CONFIGS / "llama-3.1-8b.json").read_text()), **extra}
    path = folder / name
    path.write_text(json.dumps(raw))
    return path


def test_a_config_json_is_named_from_the_config_not_its_folder(tmp_path):
    named = _config(tmp_path, "config.json", _name_or_path="acme/tiny-llama-8b")
    out = runner.invoke(app, ["model", "import", str(named)]).stdout
    assert out.startswith("acme/tiny-llama-8b: LlamaForCausalLM") and "configs:" not in out
    assert "8.0B parameters" in out and "KiB per token" in out and "{" not in out  # no Python reprs
    assert as_json("model", "import", str(named))["name"] == "acme/tiny-llama-8b"
    assert as_json("fit", "--model", str(named), "--gpu", "h100")["model"] == "acme/tiny-llama-8b"
    by_file = _config(tmp_path, "my-llama.json")
    assert as_json("fit", "--model", str(by_file), "--gpu", "h100")["model"] == "my-llama"
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "config.json").write_text(json.dumps(json.loads((CONFIGS / "llama-3.1-8b.json").read_text())))
    assert as_json("fit", "--model", str(plain / "config.json"), "--gpu", "h100")["model"] == "LlamaForCausalLM"
    assert "parameter counts computed" in runner.invoke(app, ["model", "import", str(named), "--explain"]).stdout


def test_perf_at_concurrency_one_says_why_per_user_beats_the_total():
    one = as_json("perf", "--model", "llama-3.1-8b", "--gpu", "h100")
    assert one["output_tokens_per_s_per_user"] > one["output_tokens_per_s_total"]
    assert "TTFT" in one["rate_note"]
    assert f"note: {one['rate_note'][:40]}" in runner.invoke(app, ["perf", "--model", "llama-3.1-8b", "--gpu", "h100"]).stdout
    busy = as_json("perf", "--model", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "32")
    assert busy["output_tokens_per_s_total"] > busy["output_tokens_per_s_per_user"] and busy["rate_note"] is None


def test_fits_at_100_columns_is_one_row_per_model_with_every_id_whole():
    out = screen("fits")
    cells = as_json("fits")["cells"]
    models = {c["model"] for c in cells}
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("model")) + 1
    end = next(i for i, line in enumerate(lines) if line.startswith("Fits none"))
    rows = [line.split()[0] for line in lines[start:end]]
    assert lines[start - 1].split()[2:] == ["h100-sxm", "rtx-pro-6000-blackwell", "h200-sxm", "b300"]
    # the rest: models whose rows equal one shown ("a = b"), and models no column holds, listed once each
    rest = " ".join(lines[end:]).replace(" = ", ", ").replace(";", ",").replace(" · ", ", ")
    listed = [word.strip(",:") for word in rest.split() if word.strip(",:") in models]
    assert sorted(rows + [m for m in listed if m not in rows]) == sorted(models)
    assert len(set(rows)) == len(rows)
    nowhere = {c["model"] for c in cells} - {c["model"] for c in cells if c["result"] and c["result"]["fits"]}
    assert nowhere and not nowhere & set(rows)  # no-fit-anywhere models are listed, not rows
    assert "KV/GPU" in screen("fits", "--models", "llama-3.1-8b", "--explain")


def test_the_per_user_note_names_speculative_decoding_and_idle_replicas():
    spec = as_json("perf", "--model", "llama-3.1-8b", "--gpu", "h100", "--speculative-tokens", "3", "--acceptance-rate", "0.7")
    assert "accepted tokens per step with speculative decoding" in spec["rate_note"]
    replicas = as_json("perf", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "4", "--data-parallel-size", "4")
    assert replicas["rate_note"].endswith("3 of 4 replicas have no request")


def test_as_launched_writes_the_chosen_layout_into_the_deployment():
    from inferplan.memory.layout import as_launched

    catalog = load_catalog()
    d = as_launched(Deployment(model="llama-3.1-8b", gpu="h100", gpus=6), catalog)
    assert (d.tensor_parallel_size, d.pipeline_parallel_size, d.data_parallel_size) == (2, 3, 1)
    stated = Deployment(model="llama-3.1-8b", gpu="h100", gpus=6, data_parallel_size=6)
    assert as_launched(stated, catalog) is stated
    assert fit(d, catalog).parallel == fit(Deployment(model="llama-3.1-8b", gpu="h100", gpus=6), catalog).parallel


def test_speed_validation_shows_rates_as_rates_and_times_in_ms():
    def rows(kind: str, metric: str) -> list[str]:
        out = subprocess.run([INFERPLAN, "validate", "--speed", "--kind", kind], capture_output=True, text=True,
                             env={**os.environ, "COLUMNS": "250"}, check=True).stdout
        return [line for line in out.splitlines() if metric in line]
    prefill, ttft = rows("prefill", "prefill_tokens_per_s"), rows("prefill", "ttft_s")
    assert prefill and not any(" ms " in line for line in prefill)
    assert ttft and all(" ms " in line for line in ttft)


def test_a_smaller_format_on_paper_is_not_offered_where_it_holds_the_same_weights():
    # mlx-mxfp4-q4 is 4.25 bits a weight for its MXFP4 experts; a dense model has none, so in it Llama 3.1
    # 70B is as large as in mlx-4bit, and no smaller weights follow from choosing it
    from inferplan.memory.suggest import fit_or_suggest

    d = Deployment(model="llama-3.1-70b", gpu="apple-m4-max", engine="mlx", quantization="mlx-4bit",
                   max_model_len=200_000)
    r = fit_or_suggest(d)
    assert not r.fits
    for s in r.suggestions:
        if "quantization" in s.changes:
            assert fit(Deployment(**{**d.model_dump(exclude_unset=True), **s.changes})).weights_bytes < r.weights_bytes
    assert all(s.changes.get("quantization") != "mlx-mxfp4-q4" for s in r.suggestions)


@pytest.mark.parametrize("args", [("--quantizations", "q4km"), ("--engine", "llamacpp", "--quantizations", "fp8")])
def test_fits_where_no_cell_can_be_planned_shows_the_grid_and_why(args):
    r = runner.invoke(app, ["fits", "--models", "llama-3.3-70b", "--gpus", "h100", *args], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "n/a" in r.stdout and "does not load" in r.stdout and "llama-3.3-70b" in r.stdout


@pytest.mark.parametrize("explain", [(), ("--explain",)])
def test_plan_in_euros_prints_every_money_figure_in_euros(explain):
    scenario = Path(__file__).parent.parent / "examples" / "chat-seats-h100.yaml"
    r = runner.invoke(app, ["plan", str(scenario), "--draws", "200", "--currency", "eur", *explain], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    bands = r.stdout[r.stdout.index("draws"):]
    assert "€" in bands and "$" not in bands


def test_fit_at_a_one_token_context_says_one_token():
    out = runner.invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-model-len", "1"],
                        env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "at 1 token: fits" in text and "sequences of 1 token," in text and "1 tokens" not in text
