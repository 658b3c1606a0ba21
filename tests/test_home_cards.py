"""The home set-ups a first-time user names resolve to what the catalogue plans: the RTX 3060 is the 12 GB card
(192-bit GDDR6, 360 GB/s), and a mixture-of-experts model too big for it fits with experts in host RAM; Ollama
named as an engine is refused saying it is planned through one of its tags (catalog/ollama.py)."""

import pytest
from typer.testing import CliRunner

from inferplan.catalog.loader import load_catalog
from inferplan.economics.scenario import Scenario
from inferplan.errors import CatalogError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.scenario import check_references
from inferplan.shells.cli import app
from inferplan.units import GB


def test_rtx_3060_is_the_12_gb_card():
    card = load_catalog().accelerator("RTX 3060")
    assert card.id == "rtx-3060"
    assert card.memory_bytes.value == 12 * GB and card.memory_bandwidth_bytes_per_s.value == 360 * GB


def test_rtx_3060_tensor_rates_are_at_its_own_boost_clock():
    # 28 SMs at NVIDIA's 1.78 GHz boost, not the RTX 3060 Ti's 1,665 MHz: 512 FLOP (FP32 accumulate) and 2,048 INT8
    # ops per SM per clock
    rates = load_catalog().accelerator("RTX 3060").peak_flop_per_s
    assert rates["bf16"].value == pytest.approx(28 * 512 * 1.78e9, rel=0.002) and rates["bf16"].kind == "derived"
    assert rates["int8"].value == pytest.approx(28 * 2048 * 1.78e9, rel=0.002)


def test_qwen3_30b_a3b_fits_a_3060_with_experts_in_host_ram():
    d = Deployment(model="qwen3-30b-a3b", gpu="RTX 3060", engine="llamacpp", quantization="gguf-q4_k_m",
                   max_model_len=32768, host_memory_gb=32)
    assert not fit(d).fits  # 17 GiB of Q4_K_M weights on a 12 GB card
    r = fit(d.model_copy(update={"n_cpu_moe": 30}))
    assert r.fits and r.host_memory_bytes_used < r.host_memory_budget_bytes


def test_ollama_named_as_an_engine_says_how_it_is_planned():
    # Ollama runs llama.cpp with a tag's build: the refusal says to name a tag as the model, not "no engine 'ollama'"
    with pytest.raises(CatalogError) as refused:
        load_catalog().engine("Ollama")
    assert refused.value.field == "engine" and "no engine named" not in str(refused.value)
    assert "it runs llama.cpp" in str(refused.value) and "llama3.1:8b" in str(refused.value)
    done = CliRunner().invoke(app, ["fit", "--model", "qwen3-32b", "--gpu", "rtx-4090", "--engine", "ollama"])
    assert done.exit_code == 2 and "--engine: Ollama is not an engine here" in done.stderr
    unknown = CliRunner().invoke(app, ["fit", "--model", "qwen3-32b", "--gpu", "rtx-4090", "--engine", "olama"])
    assert "no engine named 'olama'" in unknown.stderr


def test_llamacpp_fit_offers_more_slots_only_where_more_fit():
    # a 70B at Q4_K_M on a 64 GB M4 Max at 16k: one slot fits, so no "1 fit: --max-num-seqs 1"; at 8k two do
    args = ["fit", "--model", "llama-3.3-70b", "--gpu", "M4 Max 64GB", "-q", "q4_k_m", "--max-model-len"]
    one = " ".join(CliRunner().invoke(app, [*args, "16k"], env={"COLUMNS": "200"}).stdout.split())
    assert "the --parallel slots it is started with" in one and "fit: --max-num-seqs" not in one, one
    two = " ".join(CliRunner().invoke(app, [*args, "4k"], env={"COLUMNS": "200"}).stdout.split())
    assert "the --parallel slots it is started with; " in two and " fit: --max-num-seqs " in two, two


def test_a_mac_named_without_its_memory_says_which_size_is_planned():
    # "M4 Max" is sold with 36 to 128 GB: the plan says it took the largest, and how to name another
    unsized = fit(Deployment(model="llama-3.3-70b", gpu="M4 Max", quantization="gguf-q4_k_m", max_model_len=8192))
    assert "Apple M4 Max: planned at its largest configuration, 128 GB" in unsized.layout_note
    assert "apple-m4-max-36gb" in unsized.layout_note
    sized = fit(Deployment(model="llama-3.3-70b", gpu="M4 Max 64GB", quantization="gguf-q4_k_m", max_model_len=8192))
    assert sized.layout_note is None
    shown = CliRunner().invoke(app, ["perf", "--model", "llama-3.3-70b", "--gpu", "M4 Max", "-q", "q4_k_m",
                                     "--max-model-len", "8192"], env={"COLUMNS": "200"}).stdout
    assert "planned at its largest configuration, 128 GB" in shown


def test_llamacpp_fit_shows_the_kv_cache_it_allocates_beside_the_room():
    # llama-server allocates the cache of --ctx-size, not all the memory the weights leave: two 3090s holding a 70B
    # at Q4_K_M allocate 1.25 GiB per GPU for 8,000 tokens, and 3.13 GiB is free for it
    r = fit(Deployment(model="llama-3.3-70b", gpu="rtx-3090", gpus=2, engine="llamacpp", quantization="gguf-q4_k_m",
                       max_model_len=8000))
    assert r.kv_cache_allocated_bytes_per_gpu < r.kv_cache_bytes_per_gpu
    out = " ".join(CliRunner().invoke(app, ["fit", "--model", "llama-3.3-70b", "--gpu", "rtx-3090", "--gpus", "2",
                                            "--engine", "llamacpp", "-q", "q4_k_m", "--max-model-len", "8000"],
                                      env={"COLUMNS": "200"}).stdout.split())
    assert "KV cache 1.25 GiB of 3.13 GiB free" in out, out


def test_gpus_lists_the_sizes_a_mac_is_sold_in_and_how_to_name_one():
    out = CliRunner().invoke(app, ["gpus"], env={"COLUMNS": "200"}).stdout
    (m4_max,) = [line for line in out.splitlines() if "apple-m4-max " in line]
    assert "36–128 GB" in m4_max
    note = " ".join(out.split()).split("memory as a range: ")[1]
    named = note.split("name one as '")[1].split("'")[0]  # the example name it gives plans that size
    assert fit(Deployment(model="qwen3-8b", gpu=named, max_model_len=4096)).accelerator.endswith("gb")


def test_ollama_named_as_an_engine_offers_the_models_own_tag_first():
    # Qwen3-32B is Ollama's qwen3:32b: the refusal names it before other models' tags
    done = CliRunner().invoke(app, ["fit", "--model", "qwen3-32b", "--gpu", "rtx-4090", "--engine", "ollama"],
                              env={"COLUMNS": "300"})
    assert done.exit_code == 2 and "as the model (qwen3:32b, " in " ".join(done.stderr.split()), done.stderr
    s = Scenario.model_validate({"name": "home", "model": "qwen3-32b", "engine": "ollama",
                                 "platform": {"gpu": "rtx-4090", "gpus": 1}})
    with pytest.raises(InvalidScenarioError) as refused:
        check_references(s, load_catalog())
    assert refused.value.field == "engine" and "as the model (qwen3:32b, " in str(refused.value)
