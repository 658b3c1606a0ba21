"""The GGUF builds home users run a large MoE model from are catalogue builds: DeepSeek-R1's unsloth Q4_K_M,
Q8_0 and dynamic UD-Q2_K_XL and UD-IQ1_S files, DeepSeek-V3's Q4_K_M, Qwen3-235B-A22B-Instruct-2507's
UD-Q4_K_XL and IQ4_XS, Qwen3-Coder-480B-A35B's Q4_K_M, Qwen3-30B-A3B-Instruct-2507's Q4_K_M and Q8_0 and
ggml-org's Gemma 4 Q4_K_M and Q8_0 files (26B-A4B and 31B), and bartowski's GLM-4.5-Air Q8_0. Their sizes are the sizes llama-bench, the
loader or gguf-parser print for the files (DeepSeek's hold the main model without its multi-token-prediction
layers), else the files' bytes; fit offers KTransformers' LLAMAFILE method with them, deploy serves them, each
plans on one 24 GB card with llama.cpp's --n-cpu-moe (the dense 31B with --n-gpu-layers), and what runs on that
card plans DeepSeek-R1 from its smallest file."""

from pathlib import Path

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.deploy import launch_command
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.resolve import resolve_model
from inferplan.memory.suggest import fit_or_suggest
from inferplan.memory.weights import weight_bytes
from inferplan.performance.here import what_runs_on

CATALOG = load_catalog()
GIB = 2**30
R1_KT = dict(model="deepseek-r1", gpu="rtx-4090", engine="ktransformers", host_memory_gb=512)


@pytest.mark.parametrize(("model", "quant", "gib"), [("deepseek-r1", "gguf-q4_k_m", 376.65),
                                                    ("deepseek-r1", "gguf-q2_k", 211.03),
                                                    ("deepseek-r1", "gguf-q8_0", 664.29),
                                                    ("deepseek-r1", "gguf-iq1_s", 130.60),
                                                    ("deepseek-v3", "gguf-q4_k_m", 376.65)])
def test_a_deepseek_gguf_weighs_what_llama_bench_prints_with_no_mtp_layers_taken_out(model, quant, gib):
    """llama-bench prints 671.03 B parameters for these files: the MTP module is not in them, so the whole
    published size is the main model's (the FP8 checkpoint's MTP share is taken out of its size)."""
    w = weight_bytes(resolve_model(CATALOG, model), CATALOG.quantization(quant))
    assert w.total_bytes == pytest.approx(gib * GIB, rel=1e-9)
    assert any("holds none of the model's multi-token-prediction layers" in a for a in w.assumptions)
    fp8 = weight_bytes(resolve_model(CATALOG, model), CATALOG.quantization("fp8-block"))
    assert fp8.total_bytes < 688586727753 * 0.99


def test_an_mtp_draft_is_refused_on_a_build_without_mtp_layers():
    with pytest.raises(InvalidScenarioError) as e:
        weight_bytes(resolve_model(CATALOG, "deepseek-r1"), CATALOG.quantization("gguf-q4_k_m"), mtp_loaded=True)
    assert e.value.field == "mtp_draft"


def test_ktransformers_short_of_host_ram_is_offered_llamafile_beside_the_published_q4_k_m():
    """KTransformers' flagship case: DeepSeek-R1's FP8 experts do not fit 512 GiB of host RAM; the unsloth
    Q4_K_M GGUF's experts do, read by LLAMAFILE while the GPU part stays the original checkpoint."""
    r = fit_or_suggest(Deployment(**R1_KT), CATALOG)
    llamafile = [s for s in r.suggestions if s.changes.get("kt_method") == "LLAMAFILE"]
    assert llamafile and llamafile[0].changes["quantization"] == "gguf-q4_k_m"
    there = fit_or_suggest(Deployment(**R1_KT, **llamafile[0].changes), CATALOG)
    assert there.fits
    experts = weight_bytes(resolve_model(CATALOG, "deepseek-r1"), CATALOG.quantization("gguf-q4_k_m")).expert_bytes
    assert there.host_memory_bytes_used == pytest.approx(experts, rel=1e-9)
    assert 360 * GIB < experts < 376.65 * GIB


def test_the_llamafile_launch_serves_the_original_and_names_the_gguf_repo_for_the_weight_path():
    cmd = launch_command(Deployment(**R1_KT, quantization="gguf-q4_k_m", kt_method="LLAMAFILE", max_model_len=16384),
                         CATALOG)
    argv = list(cmd.argv)
    assert argv[argv.index("--model-path") + 1] == "deepseek-ai/DeepSeek-R1"
    assert argv[argv.index("--kt-weight-path") + 1] == "<GGUF directory>"
    assert any("unsloth/DeepSeek-R1-GGUF" in n and "DeepSeek-R1-Q4_K_M-00001-of-00009.gguf" in n for n in cmd.notes)


@pytest.mark.parametrize(("model", "quant", "repo_tag"), [
    ("deepseek-r1", "q2_k", "unsloth/DeepSeek-R1-GGUF:UD-Q2_K_XL"),
    ("deepseek-r1", "q4_k_m", "unsloth/DeepSeek-R1-GGUF:Q4_K_M"),
    ("deepseek-r1", "q8_0", "unsloth/DeepSeek-R1-GGUF:Q8_0"),
    ("deepseek-r1", "iq1_s", "unsloth/DeepSeek-R1-GGUF:UD-IQ1_S"),
    ("deepseek-v3", "q4_k_m", "unsloth/DeepSeek-V3-GGUF:Q4_K_M")])
def test_llama_server_fetches_the_published_file_with_experts_in_host_ram(model, quant, repo_tag):
    d = Deployment(model=model, gpu="rtx-4090", engine="llamacpp", quantization=quant, n_cpu_moe=61,
                   host_memory_gb=768, max_model_len=16384)
    argv = launch_command(d, CATALOG).argv
    assert argv[argv.index("--hf-repo") + 1] == repo_tag
    assert fit_or_suggest(d, CATALOG).fits


def test_what_runs_on_one_4090_plans_deepseek_r1_from_its_smallest_gguf_with_experts_in_host_ram():
    """The dynamic 1.58-bit file keeps the most on the GPU and streams the fewest expert bytes per token."""
    row = next(m for m in what_runs_on("rtx-4090", 1, CATALOG, host_memory_gb=256).models if m.model == "deepseek-r1")
    assert row.quantization == "gguf-iq1_s"
    assert row.offload is not None and row.offload.flag.startswith("llama.cpp --n-cpu-moe")
    assert row.offload.host_memory_bytes_needed < 256 * GIB


def test_glm_4_5_air_runs_unsloths_q4_k_m_at_its_llama_bench_size_less_the_mtp_layer():
    """The file holds GLM-4.5-Air's MTP layer, which llama.cpp does not run: its share is taken out."""
    spec = resolve_model(CATALOG, "glm-4.5-air")
    w = weight_bytes(spec, CATALOG.quantization("gguf-q4_k_m"))
    # the MTP layer's own embedding and head copies go with it: the main model's 106.85 B of the file's
    # 110.47 B (llama-bench) are loaded
    assert spec.checkpoint("gguf-q4_k_m").mtp_extra_parameters == pytest.approx(1.24e9)
    assert w.total_bytes == pytest.approx(67.96 * GIB * 106.852245504e9 / 110.47e9, rel=1e-3)
    d = Deployment(model="glm-4.5-air", gpu="rtx-4090", engine="llamacpp", quantization="q4_k_m", n_cpu_moe=40,
                   host_memory_gb=96, max_model_len=32768)
    argv = launch_command(d, CATALOG).argv
    assert argv[argv.index("--hf-repo") + 1] == "unsloth/GLM-4.5-Air-GGUF:Q4_K_M"
    assert fit_or_suggest(d, CATALOG).fits


def test_qwen3_30b_a3b_q4_k_m_is_sized_by_its_published_file_not_the_formats_mean_bits():
    w = weight_bytes(resolve_model(CATALOG, "qwen3-30b-a3b"), CATALOG.quantization("gguf-q4_k_m"))
    assert w.total_bytes == pytest.approx(18.6e9, rel=1e-9)


@pytest.mark.parametrize(("model", "quant", "gib"), [("qwen3-235b-a22b-2507", "gguf-q4_k_m", 125.098),
                                                    ("qwen3-235b-a22b-2507", "gguf-iq4_xs", 116.86),
                                                    ("qwen3-coder-480b-a35b", "gguf-q4_k_m", 270.13)])
def test_a_qwen3_moe_gguf_weighs_what_its_loader_or_llama_bench_prints(model, quant, gib):
    """Qwen3's MoE models have no multi-token-prediction layers: the whole printed size is loaded."""
    w = weight_bytes(resolve_model(CATALOG, model), CATALOG.quantization(quant))
    assert w.total_bytes == pytest.approx(gib * GIB, rel=1e-9)
    assert not any("multi-token-prediction" in a for a in w.assumptions)


@pytest.mark.parametrize(("model", "quant", "layers", "host_gb", "repo_tag"), [
    ("qwen3-235b-a22b-2507", "q4_k_m", 94, 160, "unsloth/Qwen3-235B-A22B-Instruct-2507-GGUF:UD-Q4_K_XL"),
    ("qwen3-235b-a22b-2507", "iq4_xs", 94, 160, "unsloth/Qwen3-235B-A22B-Instruct-2507-GGUF:IQ4_XS"),
    ("qwen3-coder-480b-a35b", "q4_k_m", 62, 320, "unsloth/Qwen3-Coder-480B-A35B-Instruct-GGUF:Q4_K_M"),
    ("deepseek-r1", "iq1_s", 61, 160, "unsloth/DeepSeek-R1-GGUF:UD-IQ1_S"),
    ("deepseek-r1", "q8_0", 61, 768, "unsloth/DeepSeek-R1-GGUF:Q8_0")])
def test_each_new_build_plans_on_one_24_gb_card_with_its_experts_in_host_ram(model, quant, layers, host_gb,
                                                                             repo_tag):
    """Every MoE layer's experts in host RAM (--n-cpu-moe): the rest fits a 24 GB card, the experts the stated
    host RAM, and llama-server fetches the catalogued file."""
    d = Deployment(model=model, gpu="rtx-4090", engine="llamacpp", quantization=quant, n_cpu_moe=layers,
                   host_memory_gb=host_gb, max_model_len=16384)
    r = fit_or_suggest(d, CATALOG)
    assert r.fits
    experts = weight_bytes(resolve_model(CATALOG, model), CATALOG.quantization(quant)).expert_bytes
    assert r.host_memory_bytes_used >= experts
    argv = launch_command(d, CATALOG).argv
    assert argv[argv.index("--hf-repo") + 1] == repo_tag
    assert argv[argv.index("--n-cpu-moe") + 1] == str(layers)


def test_the_iq1_s_format_is_llama_cpps_file_type_with_its_bits_as_data():
    """unsloth's UD-IQ1_S is a file of llama.cpp type IQ1_S: the format resolves by either name, takes the
    whole-model bits llama.cpp's quantize table measures (above the block's 1.5625) and loads on llama.cpp only."""
    q = CATALOG.quantization("gguf-iq1")
    assert q.id == "gguf-iq1_s" and CATALOG.quantization("iq1_s") is q
    assert 1.5625 < q.bits_per_weight.value < 2.5 and q.bits_per_weight.source == "q-llamacpp-quantize"
    assert q.engines == ("llamacpp",)
    with pytest.raises(InvalidScenarioError) as e:
        fit_or_suggest(Deployment(**R1_KT, quantization="gguf-iq1_s"), CATALOG)
    assert e.value.field == "quantization"


def test_the_offload_doc_lists_every_sized_gguf_build_of_a_moe_model():
    """docs/offload.md's table names each catalogued GGUF build of a mixture-of-experts model by its
    --hf-repo REPO:TAG, on a row that gives its catalogued size."""
    rows = [line for line in (Path(__file__).resolve().parents[1] / "docs" / "offload.md").read_text(
        encoding="utf-8").splitlines() if line.startswith("| ")]
    builds = [(card.id, c) for card in CATALOG.models for c in card.checkpoints
              if c.gguf_file and c.size_bytes and resolve_model(CATALOG, card.id).architecture.moe]
    assert len(builds) >= 17
    for model, c in builds:
        hf_repo = f"{c.repo}:{c.gguf_file.tag}" if c.gguf_file.tag else c.repo
        row = next((r for r in rows if f"`{hf_repo}`" in r), None)
        assert row is not None, (model, c.name)
        size = float(row.split("|")[4].split()[0])
        gib = c.size_bytes.value / GIB
        assert size == pytest.approx(gib, abs=0.006) or size == pytest.approx(c.size_bytes.value / 1e9, abs=0.06)


# the files' bytes as ggml-org's LlamaBarn catalogue lists them (gguf-llamabarn-qwen3-30b-2507,
# g4-llamabarn-gemma-4-ggufs)
HOME_FILES = [("qwen3-30b-a3b-2507", "gguf-q4_k_m", 18556686752), ("qwen3-30b-a3b-2507", "gguf-q8_0", 32483932576),
              ("gemma-4-26b-a4b", "gguf-q4_k_m", 16796010720), ("gemma-4-26b-a4b", "gguf-q8_0", 26859854048),
              ("gemma-4-31b", "gguf-q4_k_m", 18687057376),
              ("gemma-4-31b", "gguf-q8_0", 32635669984)]


@pytest.mark.parametrize(("model", "quant", "size"), HOME_FILES)
def test_a_home_sized_gguf_weighs_its_files_bytes_and_says_what_the_file_leaves_out(model, quant, size):
    """A Gemma 4 file holds the text model alone: the vision projector is a file of its own, said so rather than
    counted as in the file; Qwen3's text-only files need no such note."""
    spec = resolve_model(CATALOG, model)
    w = weight_bytes(spec, CATALOG.quantization(quant))
    assert w.total_bytes == pytest.approx(size, rel=1e-9)
    separate = [a for a in w.assumptions if "vision projector (mmproj)" in a]
    assert bool(separate) == model.startswith("gemma")
    assert not any("includes the vision encoder" in a for a in w.assumptions)


@pytest.mark.parametrize(("model", "quant", "offload", "repo_tag"), [
    ("qwen3-30b-a3b-2507", "q4_k_m", {"n_cpu_moe": 48}, "unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF:Q4_K_M"),
    ("qwen3-30b-a3b-2507", "q8_0", {"n_cpu_moe": 48}, "ggml-org/Qwen3-30B-A3B-Instruct-2507-Q8_0-GGUF"),
    ("gemma-4-26b-a4b", "q4_k_m", {}, "ggml-org/gemma-4-26B-A4B-it-GGUF:Q4_K_M"),
    ("gemma-4-26b-a4b", "q8_0", {"n_cpu_moe": 30}, "ggml-org/gemma-4-26B-A4B-it-GGUF:Q8_0"),
    ("gemma-4-31b", "q4_k_m", {}, "ggml-org/gemma-4-31B-it-GGUF:Q4_K_M"),
    ("gemma-4-31b", "q8_0", {"n_gpu_layers": 40}, "ggml-org/gemma-4-31B-it-GGUF:Q8_0"),
    ("glm-4.5-air", "q8_0", {"n_cpu_moe": 46}, "bartowski/zai-org_GLM-4.5-Air-GGUF:Q8_0")])
def test_each_home_build_plans_on_one_24_gb_card(model, quant, offload, repo_tag):
    """The MoE files with every layer's experts in host RAM (the Gemma 26B-A4B Q4_K_M whole), the dense 31B whole
    (Q4_K_M) or with 40 of its 60
    layers on the GPU (Q8_0): each fits a 24 GB card and 128 GB of host RAM, and llama-server fetches the file."""
    d = Deployment(model=model, gpu="rtx-4090", engine="llamacpp", quantization=quant, host_memory_gb=128,
                   max_model_len=16384, **offload)
    r = fit_or_suggest(d, CATALOG)
    assert r.fits
    w = weight_bytes(resolve_model(CATALOG, model), CATALOG.quantization(quant))
    if "n_cpu_moe" in offload:
        assert r.host_memory_bytes_used >= w.expert_bytes > 0
    elif "n_gpu_layers" in offload:
        assert 0 < r.host_memory_bytes_used < w.total_bytes
    argv = launch_command(d, CATALOG).argv
    assert argv[argv.index("--hf-repo") + 1] == repo_tag
    # a file planned without its vision projector is launched without it: --hf-repo alone loads it too
    assert ("--no-mmproj" in argv) == model.startswith("gemma")


def test_fit_on_the_cli_plans_the_qwen3_2507_q8_0_with_its_experts_in_host_ram():
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    out = CliRunner().invoke(app, ["fit", "--model", "qwen3-30b-a3b-2507", "--gpu", "rtx-4090", "--engine", "llamacpp",
                                   "-q", "q8_0", "--n-cpu-moe", "48", "--host-memory-gb", "64",
                                   "--max-model-len", "16384", "--explain"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "at 16,384 tokens: fits" in out.output
    assert "published GGUF Q8_0 Instruct-2507 (ggml-org) checkpoint size" in out.output
    assert "host RAM: 29.02 GiB used of 60.00 GiB" in out.output


def test_glm_4_5_air_q8_0_weighs_its_quant_table_size_less_the_mtp_layer_with_its_copies():
    """bartowski's Q8_0 holds the MTP layer as unsloth's file of the same converter does: the layer and its
    embedding and head copies are taken out pro rata, leaving the main model's 106.85 B of 110.47 B."""
    spec = resolve_model(CATALOG, "glm-4.5-air")
    ckpt = spec.checkpoint("gguf-q8_0")
    assert ckpt.size_bytes == pytest.approx(117.46e9) and ckpt.mtp_extra_parameters == pytest.approx(1.24e9)
    w = weight_bytes(spec, CATALOG.quantization("gguf-q8_0"))
    assert w.total_bytes == pytest.approx(117.46e9 * 106.852245504e9 / 110.47e9, rel=1e-3)


def test_gemma_4_26b_q4_k_m_launches_ggml_orgs_file_and_fit_sizes_that_file_not_ollamas_blob():
    """Two builds of Q4_K_M: ggml-org's text-only file, which llama-server fetches, and Ollama's blob with the
    vision encoder inside (no repo to launch). The plan sizes and launches the first, at its bytes."""
    card = CATALOG.model("gemma-4-26b-a4b")
    q4 = [c for c in card.checkpoints if c.quantization == "gguf-q4_k_m"]
    assert [c.repo for c in q4] == ["ggml-org/gemma-4-26B-A4B-it-GGUF", None]
    assert q4[1].size_bytes.value == 18e9 and q4[1].vision_encoder
    d = Deployment(model="gemma-4-26b-a4b", gpu="rtx-4090", engine="llamacpp", quantization="q4_k_m")
    cmd = launch_command(d, CATALOG)
    argv = list(cmd.argv)
    assert "-m" not in argv and not any("<" in a for a in argv)
    assert argv[argv.index("--hf-repo") + 1] == "ggml-org/gemma-4-26B-A4B-it-GGUF:Q4_K_M"
    assert "--no-mmproj" in argv
    r = fit_or_suggest(d, CATALOG)
    assert r.fits
    assert r.weights_bytes == pytest.approx(16796010720, rel=1e-9)


def test_deepseek_v3_q2_k_weighs_its_published_file_not_the_formats_mean_bits():
    """The Q2_K record's 3.16 bits per weight is measured on Llama-3.1-8B, whose Q6_K output layer weighs more
    in a small model: DeepSeek-V3's Q2_K file is 244.1 GB (2.91 bits per weight), and fit plans that file."""
    spec = resolve_model(CATALOG, "deepseek-v3")
    w = weight_bytes(spec, CATALOG.quantization("gguf-q2_k"))
    assert w.total_bytes == pytest.approx(244.1e9, rel=1e-9)
    assert w.total_bytes * 8 / 671.03e9 == pytest.approx(2.91, abs=0.005)
    command = launch_command(Deployment(model="deepseek-v3", gpu="M3 Ultra 512GB", engine="llamacpp",
                                        quantization="q2_k", max_model_len=4096), CATALOG)
    assert "<DeepSeek-V3.Q2_K.gguf>" in command.argv and "--hf-repo" not in command.argv
