"""An Ollama library tag names a model and selects its build: the card's checkpoint in the tag's quantization, on
llama.cpp (the engine Ollama's runner is), at the context Ollama gives the model on the GPUs planned. A stated
engine, weight format or context wins; a tag whose build the card lacks is refused naming the tags it lists; and a
card whose tag pulls a build it does not list does not load."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.loader import DATA_DIR, load_catalog, load_files
from inferplan.errors import CatalogError, UnknownModelError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.hardware import with_default_engine
from inferplan.memory.suggest import fit_or_suggest
from inferplan.search.request import SearchRequest
from inferplan.search.space import build_space
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

CATALOG = load_catalog()
TAGS = [(t.tag, card.id, t.quantization) for card in CATALOG.models for t in card.ollama_tags]


def test_the_tags_people_type_select_the_build_ollama_pulls():
    builds = {tag: (model, quant) for tag, model, quant in TAGS}
    assert builds["qwen3:32b"] == ("qwen3-32b", "gguf-q4_k_m")
    assert builds["qwen3:32b-q8_0"] == ("qwen3-32b", "gguf-q8_0")
    assert builds["llama3.1:8b-instruct-q8_0"] == ("llama-3.1-8b", "gguf-q8_0")
    assert builds["gpt-oss:20b"] == ("gpt-oss-20b", "mxfp4")  # Ollama's MXFP4 blob in OpenAI's layout
    assert builds["deepseek-r1:671b"] == ("deepseek-r1", "gguf-q4_k_m")
    assert {"llama3.1:8b", "qwen3:8b", "qwen3:14b", "qwen3:30b-a3b", "gemma3:27b", "mistral-small3.2:24b",
            "gpt-oss:120b", "llama3.3:70b", "qwen3-coder:30b"} <= set(builds)


@pytest.mark.parametrize(("tag", "model", "quant"), TAGS)
def test_a_tag_plans_its_build_on_llama_cpp(tag, model, quant):
    assert CATALOG.model(tag).id == model
    d = with_default_engine(Deployment(model=tag, gpu="h100"), CATALOG)
    assert (d.engine, d.quantization) == ("llamacpp", quant)


def test_a_stated_engine_or_weight_format_wins():
    vllm = fit_or_suggest(Deployment(model="qwen3:32b", gpu="h100", engine="vllm"), CATALOG)
    assert (vllm.engine, vllm.quantization) == ("vllm", "bf16")
    assert vllm.build_note.startswith("qwen3:32b names Ollama's GGUF Q4_K_M build") and "planned as stated: vllm" in vllm.build_note
    q8 = fit_or_suggest(Deployment(model="qwen3:32b", gpu="h100", quantization="gguf-q8_0"), CATALOG)
    assert (q8.engine, q8.quantization) == ("llamacpp", "gguf-q8_0")
    fp8 = fit_or_suggest(Deployment(model="qwen3:32b", gpu="h100", quantization="fp8-block"), CATALOG)
    assert fp8.engine == "vllm"  # llama.cpp does not load it: the hardware's own engine
    named_engine = with_default_engine(Deployment(model="qwen3:32b", gpu="h100", engine="llamacpp"), CATALOG)
    assert named_engine.quantization == "gguf-q4_k_m"


@pytest.mark.parametrize(("tag", "gpu", "gpus", "tokens"), [
    ("qwen3:32b", "rtx-4090", 1, 32768),  # 24 GiB: Ollama's 32k tier
    ("llama3.1:8b", "rtx-4070", 1, 4096),  # 12 GiB: below 23 GiB
    ("qwen3:32b", "h100", 1, 40960),  # 256k tier, capped at the model's trained context
    ("qwen3:32b", "rtx-4090", 2, 40960),  # the VRAM of every GPU counts: 2 x 24 GiB is past 47 GiB
    ("qwen3:8b", "l4", 1, 4096),  # ECC on: 22.03 GiB reported, below 23 GiB
    ("qwen3:8b", "l40s", 1, 32768),  # ECC on: 44.53 GiB reported, below 47 GiB
])
def test_the_context_is_the_one_ollama_gives_the_model_on_those_gpus(tag, gpu, gpus, tokens):
    d = with_default_engine(Deployment(model=tag, gpu=gpu, gpus=gpus), CATALOG)
    assert d.max_model_len == tokens
    stated = with_default_engine(Deployment(model=tag, gpu=gpu, gpus=gpus, max_model_len=2048), CATALOG)
    assert stated.max_model_len == 2048
    other = with_default_engine(Deployment(model=tag, gpu=gpu, gpus=gpus, engine="vllm"), CATALOG)
    assert other.max_model_len is None  # not Ollama's build: the model's own context, as for any name


def test_a_tag_whose_build_the_card_lacks_is_refused_naming_the_tags():
    with pytest.raises(UnknownModelError) as exc:
        CATALOG.model("qwen3:32b-fp16")
    assert exc.value.field == "model" and "qwen3:32b-q8_0" in exc.value.allowed
    out = CliRunner().invoke(app, ["fit", "--model", "qwen3:32b-fp16", "--gpu", "rtx-4090"], env={"COLUMNS": "250"})
    assert out.exit_code == 2 and "--model" in out.output and "allowed: qwen3:32b, qwen3:32b-q4_K_M" in out.output
    with pytest.raises(UnknownModelError):  # a name no card has tags for is unknown as before
        CATALOG.model("nosuchmodel:7b")


def _load_with(tmp_path, old: str, new: str):
    """The shipped catalogue with one card's text changed."""
    paths = []
    for path in sorted(DATA_DIR.rglob("*.yaml")):
        if path.parent.name == "hf_configs":
            continue
        text = path.read_text(encoding="utf-8")
        if old in text:
            text = text.replace(old, new, 1)
            path = tmp_path / path.name
            path.write_text(text, encoding="utf-8")
        paths.append(path)
    return load_files(paths, DATA_DIR)


def test_a_tag_pulling_a_build_the_card_does_not_list_does_not_load(tmp_path):
    line = '{tag: "gemma3:27b-it-q4_K_M", quantization: gguf-q4_k_m'
    with pytest.raises(CatalogError, match="gemma3:27b-it-q8_0.*no checkpoint of the card"):
        _load_with(tmp_path, line, '{tag: "gemma3:27b-it-q8_0", quantization: gguf-q8_0')


def test_an_alias_spelt_as_a_tag_is_refused(tmp_path):
    with pytest.raises(CatalogError, match="spelt as an Ollama tag"):
        _load_with(tmp_path, "aliases: [google/gemma-3-27b-it,", 'aliases: ["gemma3:4b", google/gemma-3-27b-it,')


def test_fit_names_the_build_and_context_the_tag_selected():
    out = CliRunner().invoke(app, ["fit", "--model", "qwen3:32b", "--gpu", "rtx-4090"], env={"COLUMNS": "250"}).output
    first = out.splitlines()[0]
    assert "(llamacpp, gguf-q4_k_m," in first and "at 32,768 tokens" in first
    assert ("build: qwen3:32b is Ollama's GGUF Q4_K_M build of Qwen3 32B, planned on llama.cpp (llama-server), at "
            "32,768 tokens, the context Ollama gives it on these GPUs") in out
    assert "bf16" not in out


def test_the_build_line_says_where_the_plan_runs_the_tag_unlike_ollama():
    """Ollama states no --n-gpu-layers (llama-server's --fit places the layers) and loads a vision model's projector:
    the plan, every layer on the GPU and the text model alone unless the projector's size is known, says so rather
    than claim it runs as Ollama does."""
    def note(model, **stated):
        return fit_or_suggest(Deployment(model=model, gpu="rtx-4090", **stated), CATALOG).build_note
    qwen = note("qwen3:32b")
    assert "as Ollama runs it" not in qwen and "with the layers where llama-server --fit places them, Ollama stating " \
        "no --n-gpu-layers (a 1 GiB margin kept free on each GPU)" in qwen and "text only" not in qwen
    assert "with every layer on the GPU, where llama-server --fit keeps them" in note("qwen3:8b")
    assert "with every layer on the GPU, where Ollama leaves their placement to llama-server's --fit" in \
        note("qwen3:32b", host_memory_gb=4)  # too little host RAM for any split --fit tries
    assert "with the layers stated on the GPU" in note("qwen3:32b", n_gpu_layers=40, host_memory_gb=64)
    # Ollama's llm/llama_server.go allowlist: the projector counted where the tag states its size, else text only
    for tag in ("gemma3:27b", "gemma4:26b", "gemma4:31b", "mistral-small3.2:24b"):
        assert "the vision projector Ollama loads on the GPU counted there" in note(tag) and "text only" not in note(tag)


def test_a_refusal_at_ollamas_context_says_where_the_context_came_from():
    run = CliRunner().invoke  # 4 GiB of host RAM: too little for the layers --fit would move there
    perf = run(app, ["perf", "--model", "qwen3:32b", "--gpu", "rtx-4090", "--host-memory-gb", "4"], env={"COLUMNS": "250"})
    assert perf.exit_code == 2 and "at --max-model-len 32,768, the context Ollama gives qwen3:32b on these GPUs " \
        "(--max-model-len states another)" in perf.output
    sim = run(app, ["simulate", "--model", "qwen3:32b", "--gpu", "rtx-4090", "--request-rate", "0.01"], env={"COLUMNS": "250"})
    assert sim.exit_code == 0 and "the context Ollama gives it on these GPUs, with the layers where llama-server --fit " \
        "places them" in sim.output  # placed as in fit and perf (simulate takes no host RAM)
    same = run(app, ["perf", "--model", "qwen3-32b", "--gpu", "rtx-4090", "--engine", "llamacpp", "--quantization",
                     "gguf-q4_k_m", "--max-model-len", "32768"], env={"COLUMNS": "250"})
    assert same.exit_code == 2 and "at --max-model-len 32,768: the KV cache" in same.output and "Ollama" not in same.output


@pytest.mark.parametrize(("name", "listed"), [
    ("qwen3:30b", "qwen3:30b-a3b"),  # another size tag of a library the catalogue lists tags for
    ("qwen3", "qwen3:32b"),  # a bare library name: Ollama's latest tag
    ("mistral-small3.2", "mistral-small3.2:24b"),  # reads like the alias Mistral Small 3.2, spelt as Ollama's name
    ("gpt-oss", "gpt-oss:20b"),
])
def test_an_unlisted_tag_or_bare_name_of_a_listed_library_is_refused_naming_its_tags(name, listed):
    with pytest.raises(UnknownModelError) as exc:
        CATALOG.model(name)
    assert exc.value.field == "model" and listed in exc.value.allowed
    out = CliRunner().invoke(app, ["fit", "--model", name, "--gpu", "rtx-4090"], env={"COLUMNS": "250"})
    assert out.exit_code == 2 and "vllm" not in out.output and listed in out.output


@pytest.mark.parametrize(("name", "model"), [("Mistral Small 3.2", "mistral-small-3.2-24b"),
                                             ("deepseek-r1", "deepseek-r1"), ("Qwen/Qwen3-8B", "qwen3-8b")])
def test_a_catalogue_name_that_is_also_a_library_name_still_names_its_card(name, model):
    assert CATALOG.model(name).id == model


def test_perf_and_deploy_plan_the_tags_build():
    perf = CliRunner().invoke(app, ["perf", "--model", "qwen3:8b", "--gpu", "rtx-4090"], env={"COLUMNS": "250"}).output
    assert "(llamacpp, gguf-q4_k_m" in perf and "build: qwen3:8b is Ollama's GGUF Q4_K_M build" in perf
    deploy = CliRunner().invoke(app, ["deploy", "--model", "qwen3:8b", "--gpu", "rtx-4090"], env={"COLUMNS": "250"}).output
    assert "OLLAMA_CONTEXT_LENGTH=32768" in deploy and "ollama pull qwen3:8b" in deploy and "--hf-repo" not in deploy
    assert "note: qwen3:8b is Ollama's GGUF Q4_K_M build" in deploy


def test_the_api_answers_with_the_tags_build(tmp_path):
    client = TestClient(create_app(tmp_path / "test.db"))
    body = client.post("/api/fit", json={"model": "qwen3:14b", "gpu": "rtx-4090"}).json()
    assert (body["engine"], body["quantization"], body["max_model_len"]) == ("llamacpp", "gguf-q4_k_m", 32768)
    assert body["build_note"].startswith("qwen3:14b is Ollama's GGUF Q4_K_M build")
    refused = client.post("/api/fit", json={"model": "qwen3:14b-fp16", "gpu": "rtx-4090"})
    assert refused.status_code == 422 and "qwen3:14b-q4_K_M" in refused.text


def test_a_search_for_a_tag_searches_its_build_unless_the_request_names_others():
    req = SearchRequest(models=("qwen3:8b",), accelerators=("rtx-4090",), request_rate_per_s=1.0, input_len=1000,
                        output_len=100)
    cells = build_space(CATALOG, req, input_len=1000, output_len=100).cells
    assert cells and {(c.engine, c.quantization) for c in cells} == {("llamacpp", "gguf-q4_k_m")}
    named = req.model_copy(update={"engines": ("vllm",)})
    assert {c.engine for c in build_space(CATALOG, named, input_len=1000, output_len=100).cells} == {"vllm"}


@pytest.mark.parametrize(("tag", "gpu"), [("qwen3:32b", "rtx-4090"), ("llama3.3:70b", "rtx-4090")])
def test_every_offer_for_a_tag_fits_when_run_at_the_context_it_was_found_at(tag, gpu):
    """More GPUs raise Ollama's default context (2 x 24 GiB is its 256k tier): an offer keeps the context it fits at.
    4 GiB of host RAM: too little for the layers --fit would move there, so it does not fit as Ollama starts it."""
    d = Deployment(model=tag, gpu=gpu, host_memory_gb=4)
    r = fit_or_suggest(d, CATALOG)
    assert not r.fits and r.suggestions
    for s in r.suggestions:
        assert "max_model_len" in s.changes and fit(d.model_copy(update=s.changes), CATALOG).fits, s.summary
