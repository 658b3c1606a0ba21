"""Speculative decoding with a model's MTP layers: the memory each engine holds for them
(engine_mtp_rules.yaml, memory/mtp.py), carried by perf and search."""

import dataclasses

import pytest

from inferplan.catalog.architecture import LayerKind
from inferplan.catalog.loader import load_catalog
from inferplan.catalog.mtp_rules import mtp_rule
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit, plan_memory
from inferplan.memory.params import count_params
from inferplan.memory.resolve import resolve_model
from inferplan.memory.weights import weight_bytes
from inferplan.performance.context import ServingContext
from inferplan.validation.memory import deployment_for

CATALOG = load_catalog()
GIB = 2**30
# d18's settings: DeepSeek-V4-Flash on 2 H20 under vLLM 0.26.0 (vllm-project/vllm issue #51041)
V4 = dict(model="deepseek-v4-flash", gpu="h20", tensor_parallel_size=2, gpu_memory_utilization=0.95,
          max_model_len=121344, max_num_seqs=32, max_num_batched_tokens=8192, kv_cache_dtype="fp8",
          quantization="mixed-fp4-fp8", engine_version="0.26.0")


def _pair(**kw):
    return fit(Deployment(**kw), CATALOG), fit(Deployment(**kw, mtp_draft=True), CATALOG)


def test_vllm_loads_the_mtp_layers_before_sizing_the_pool():
    """vLLM V1 loads the drafter inside the load window the KV budget subtracts: the pool loses the MTP
    layer's share of the checkpoint, split over the tensor-parallel GPUs (the plain plan verifies the one
    draft token the MTP draft makes by default, so both capture the same CUDA graphs)."""
    plain = fit(Deployment(**V4, speculative_tokens=1), CATALOG)
    drafting = fit(Deployment(**V4, mtp_draft=True), CATALOG)
    spec = resolve_model(CATALOG, "deepseek-v4-flash")
    params = count_params(spec.architecture)
    ckpt = spec.checkpoint("mixed-fp4-fp8").size_bytes
    mtp_bytes = params.mtp * ckpt / (params.total + params.mtp)
    assert drafting.weights_bytes - plain.weights_bytes == pytest.approx(mtp_bytes, rel=1e-6)
    # per GPU: half of it; the H20's FP4 experts run on Marlin (engine_moe_kernels.yaml), which pads nothing here
    # (hidden 4096 and the TP share 1024 of the experts' 2048 are multiples of its 256 and 128) and keeps one scale copy
    on_gpu = drafting.weights_bytes_per_gpu - plain.weights_bytes_per_gpu
    assert on_gpu == pytest.approx(mtp_bytes / 2, rel=1e-6) and 1.7 * GIB < on_gpu < 2.0 * GIB
    lost = plain.kv_cache_bytes_per_gpu - drafting.kv_cache_bytes_per_gpu
    assert lost == pytest.approx(on_gpu, rel=0.02)


def test_deepseek_v4_mtp_layer_is_a_window_layer_in_the_pool():
    """compress_ratios lists one more entry than the 43 decoder layers: 0, a window-only layer; its KV
    joins the pool as one more sliding layer (a window's bytes, not a growing layer's)."""
    arch = resolve_model(CATALOG, "deepseek-v4-flash").architecture
    assert arch.mtp_layers == 1 and arch.mtp_layer_kinds == (LayerKind.SLIDING,)
    plain = plan_memory(Deployment(**V4), CATALOG).layout
    drafting = plan_memory(Deployment(**V4, mtp_draft=True), CATALOG).layout
    assert drafting.growing_bytes_per_token == plain.growing_bytes_per_token
    assert drafting.window_bytes_per_token > plain.window_bytes_per_token


def test_trtllm_gives_the_mtp_layer_its_own_kv_entries():
    """TensorRT-LLM's KV-cache manager appends num_nextn_predict_layers layers: DeepSeek-V3's 61 MLA
    layers become 62 per token, and the MTP weights load with the model."""
    plain, drafting = _pair(model="deepseek-v3", gpu="h200", tensor_parallel_size=8, engine="trtllm",
                            max_model_len=32768)
    assert drafting.kv_cache_bytes_per_token / plain.kv_cache_bytes_per_token == pytest.approx(62 / 61)
    assert drafting.weights_bytes_per_gpu > plain.weights_bytes_per_gpu


@pytest.mark.parametrize(("release", "reserve_gib"), [("0.5.9", 2), ("0.5.13", 4)])
def test_sglang_keeps_room_outside_its_default_fraction_for_the_draft(release, reserve_gib):
    """Through 0.5.13 SGLang's draft worker allocates its weights and pool after the target's: the target's
    pool keeps its size for a stated fraction, and the default fraction reserves 2 GiB more (4 GiB from
    0.5.10; server_args.py)."""
    v3 = dict(model="deepseek-v3", gpu="h200", tensor_parallel_size=8, engine="sglang", max_model_len=32768,
              engine_version=release)
    stated, stated_mtp = _pair(**v3, gpu_memory_utilization=0.85)
    assert stated_mtp.kv_cache_bytes_per_gpu == stated.kv_cache_bytes_per_gpu
    assert stated_mtp.weights_bytes_per_gpu == stated.weights_bytes_per_gpu
    plain = plan_memory(Deployment(**v3), CATALOG)
    drafting = plan_memory(Deployment(**v3, mtp_draft=True), CATALOG)
    assert mtp_rule(CATALOG, "sglang", release).fraction_reserve_bytes.value == reserve_gib * GIB
    drop = (plain.settings.memory_fraction - drafting.settings.memory_fraction) * plain.result.gpu_memory_bytes
    assert drop == pytest.approx(reserve_gib * GIB, abs=0.001 * plain.result.gpu_memory_bytes)  # 3 decimals


@pytest.mark.parametrize("release", ["0.5.9", "0.5.13"])
def test_sglang_through_0513_notes_the_mtp_layers_loaded_outside_the_fraction(release):
    """The draft worker loads the MTP layers after the target's pool is sized: the weights note says they load
    outside the fraction, as the draft note does, not that they are not loaded (which it says without a draft)."""
    v3 = dict(model="deepseek-v3", gpu="h200", tensor_parallel_size=8, engine="sglang", max_model_len=32768,
              engine_version=release)
    plain, drafting = _pair(**v3)
    weights = [n for n in drafting.assumptions if n.startswith("multi-token-prediction layers")]
    assert len(weights) == 1 and "outside the fraction" in weights[0] and "not loaded" not in weights[0]
    assert any("MTP speculative decoding on sglang" in n and "outside the fraction" in n for n in drafting.assumptions)
    assert any("not loaded without speculative decoding" in n for n in plain.assumptions)


def test_sglang_from_0514_holds_the_mtp_draft_inside_its_fraction():
    """From 0.5.14 SGLang loads the draft before sizing the target's pool and adds the MTP layers to its
    cell size (pool_configurator.py): the pool loses the MTP layer's weights and holds fewer tokens, the
    default fraction keeps nothing more, and no headroom check outside the fraction applies."""
    v3 = dict(model="deepseek-v3", gpu="h200", tensor_parallel_size=8, engine="sglang", max_model_len=32768,
              engine_version="0.5.21", gpu_memory_utilization=0.98)
    plain, drafting = _pair(**v3)  # 0.98: refused at 0.5.9 (the test below), planned here
    assert drafting.weights_bytes_per_gpu > plain.weights_bytes_per_gpu
    assert drafting.kv_cache_bytes_per_gpu < plain.kv_cache_bytes_per_gpu
    assert drafting.kv_cache_tokens < plain.kv_cache_tokens * 61 / 62 * 1.001  # 61 layers + the MTP layer's KV
    default = dict(v3, gpu_memory_utilization=None)
    assert plan_memory(Deployment(**default), CATALOG).settings.memory_fraction == \
        plan_memory(Deployment(**default, mtp_draft=True), CATALOG).settings.memory_fraction
    assert mtp_rule(CATALOG, "sglang").id == mtp_rule(CATALOG, "sglang", "0.5.21").id  # the current release


def test_sglang_refuses_an_mtp_draft_that_does_not_fit_outside_its_fraction():
    """Through 0.5.13 SGLang's EAGLE draft worker (NEXTN runs as EAGLE) loads the MTP layers and a draft
    pool of the target's tokens after its fraction is sized: at 0.98 of an H200 the 2.8 GiB left outside,
    less 0.5.9's 2 GiB draft reserve, cannot hold DeepSeek-V3's MTP layer per TP rank and its pool; at 0.9 it can."""
    kw = dict(model="deepseek-v3", gpu="h200", tensor_parallel_size=8, engine="sglang", mtp_draft=True,
              engine_version="0.5.9")
    fits = fit(Deployment(**kw, gpu_memory_utilization=0.9), CATALOG)
    spec = resolve_model(CATALOG, "deepseek-v3")
    mtp_per_gpu = weight_bytes(spec, CATALOG.quantization(fits.quantization), mtp_loaded=True).mtp_bytes / 8
    pool = fits.kv_cache_bytes_per_gpu / spec.architecture.num_layers  # MLA: one more layer of the same latent
    room = fits.gpu_memory_bytes * (1 - 0.9) - mtp_rule(CATALOG, "sglang", "0.5.9").fraction_reserve_bytes.value
    assert fits.fits and 1 * GIB < mtp_per_gpu + pool < room
    with pytest.raises(InvalidScenarioError) as exc:
        fit(Deployment(**kw, gpu_memory_utilization=0.98), CATALOG)
    assert exc.value.field == "mtp_draft" and "outside the memory fraction" in str(exc.value)
    assert "(its weights and a draft pool of the target's tokens)" in str(exc.value)  # both outside through 0.5.13
    fit(Deployment(**{**kw, "mtp_draft": False}, gpu_memory_utilization=0.98), CATALOG)  # no draft: no check


def test_an_mtp_draft_without_stated_tokens_captures_graphs_for_the_engines_default():
    """vLLM drafts num_nextn_predict_layers tokens when none are stated (config/speculative.py), so its
    CUDA-graph capture sizes count two-token decode queries for DeepSeek-V4's one MTP layer; without the
    rule's default the plan captured for one-token queries."""
    from inferplan.catalog.registry import Registry

    default = fit(Deployment(**V4, mtp_draft=True), CATALOG)
    stated = fit(Deployment(**V4, mtp_draft=True, speculative_tokens=1), CATALOG)
    assert default.cuda_graph_bytes_per_gpu == stated.cuda_graph_bytes_per_gpu > 0
    assert any("num_nextn_predict_layers" in n for n in default.assumptions)
    rules = {r.id: (r.model_copy(update={"default_draft_tokens": None}) if r.engine == "vllm" else r)
             for r in CATALOG.mtp_rules}
    unwired = fit(Deployment(**V4, mtp_draft=True), dataclasses.replace(CATALOG, mtp_rules=Registry("mtp rules", rules)))
    assert unwired.cuda_graph_bytes_per_gpu != default.cuda_graph_bytes_per_gpu


def test_parameters_times_bits_counts_the_mtp_layers_when_drafting():
    spec = dataclasses.replace(resolve_model(CATALOG, "deepseek-v3"), checkpoints=())
    quant = CATALOG.quantization("fp8")
    params = count_params(spec.architecture)
    plain, drafting = weight_bytes(spec, quant), weight_bytes(spec, quant, mtp_loaded=True)
    # the MTP layer at the mean bytes per parameter of the decoder layers it repeats
    layers = plain.total_bytes - plain.embedding_bytes - plain.head_bytes
    mtp = params.mtp * layers / (params.total - params.embedding - params.lm_head)
    assert drafting.total_bytes - plain.total_bytes == pytest.approx(mtp) == drafting.mtp_bytes
    assert plain.mtp_bytes == 0 and 0 < drafting.mtp_expert_bytes < mtp
    assert drafting.expert_bytes - plain.expert_bytes == pytest.approx(drafting.mtp_expert_bytes)


@pytest.mark.parametrize(("kw", "word"), [
    (dict(model="llama-3.1-8b", gpu="h100"), "multi-token-prediction"),
    (dict(model="deepseek-v3", gpu="h200", gpus=8, engine="llamacpp", quantization="gguf-q4_k_m"), "does not draft"),
    (dict(model="deepseek-v3", gpu="h200", tensor_parallel_size=8, engine_version="0.8.5 V0"), "PR #14067"),
])
def test_an_mtp_draft_without_mtp_layers_or_engine_names_the_field(kw, word):
    with pytest.raises(InvalidScenarioError) as exc:
        fit(Deployment(**kw, mtp_draft=True), CATALOG)
    assert exc.value.field == "mtp_draft" and word in str(exc.value)


def test_the_h20_records_plan_with_their_mtp_draft():
    """d18/d19 ran with MTP speculative decoding; their deployment carries it."""
    for rid in ("d18-deepseek-v4-flash-preview-tp2-h20-912k", "d19-deepseek-v4-flash-0731-tp2-h20-121k"):
        assert deployment_for(CATALOG.memory_points.records[rid]).mtp_draft


def test_perf_drafts_with_the_mtp_layers_of_an_mtp_model():
    """A workload with draft tokens on a model with MTP layers plans the memory of its MTP draft: the
    speed model's slots come from the smaller pool. A model without them is left as it is."""
    d = Deployment(model="deepseek-v3", gpu="h200", tensor_parallel_size=8)
    plain = ServingContext(CATALOG, d, Workload(input_len=2000, output_len=500))
    drafting = ServingContext(CATALOG, d, Workload(input_len=2000, output_len=500, speculative_tokens=1))
    assert drafting.d.mtp_draft and not plain.d.mtp_draft
    assert drafting.kv_limit < plain.kv_limit
    llama = ServingContext(CATALOG, Deployment(model="llama-3.1-8b", gpu="h100"),
                           Workload(input_len=2000, output_len=500, speculative_tokens=2, acceptance_rate=0.5))
    assert not llama.d.mtp_draft and llama.d.speculative_method == "ngram"


def test_search_mtp_candidates_carry_the_draft():
    from inferplan.search.request import SearchRequest
    from inferplan.search.space import build_space
    from inferplan.search.load import resolve_load

    req = SearchRequest(models=("deepseek-v3",), request_rate_per_s=1, input_len=1000, output_len=100,
                        systems=("hgx-h200",))
    rl = resolve_load(CATALOG, req)
    space = build_space(CATALOG, req, input_len=rl.input_len, output_len=rl.output_len)
    cells = [c for c in space.cells if c.speculative_tokens]
    assert cells, "the search offers MTP drafts for DeepSeek-V3 on vLLM"
    assert all(c.deployment(4096).mtp_draft for c in cells)
    assert not any(c.deployment(4096).mtp_draft for c in space.cells if not c.speculative_tokens)


def test_shells_name_the_field_of_a_bad_mtp_draft(tmp_path):
    """The CLI refuses with one line naming --mtp-draft (exit 2); /api/fit with 422 at body.mtp_draft, and
    takes the field to plan a draft."""
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from inferplan.shells.api import create_app
    from inferplan.shells.cli import app

    result = CliRunner().invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "h100", "--mtp-draft"])
    assert result.exit_code == 2 and "--mtp-draft" in result.output
    client = TestClient(create_app(tmp_path / "test.db"))
    bad = client.post("/api/fit", json={"model": "llama-3.1-8b", "gpu": "H100", "mtp_draft": True})
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "mtp_draft"]
    body = {k: v for k, v in V4.items()}
    plain = client.post("/api/fit", json=body).json()
    drafting = client.post("/api/fit", json={**body, "mtp_draft": True}).json()
    assert drafting["kv_cache_bytes_per_gpu"] < plain["kv_cache_bytes_per_gpu"]


def test_deploy_launches_the_layout_planned_with_the_mtp_draft():
    """DeepSeek-V4-Flash holds on one GB200 GPU, not with its MTP layer loaded: fit and perf plan copies
    of tensor parallel 2 for an MTP draft, and the command that starts it launches that instance."""
    from inferplan.deploy.command import Speculative, launch_command
    from inferplan.deploy.manifest import kubernetes_manifest

    # at vLLM 0.33's default fraction (0.92), beside the CUDA-graph estimate of 51 + 51 graphs at the default 1,024
    # sequences
    d = Deployment(model="deepseek-v4-flash", system="gb200-nvl72", engine_version="0.33.0")
    assert fit(d, CATALOG).parallel.tensor_parallel_size == 1
    assert fit(d.model_copy(update={"mtp_draft": True}), CATALOG).parallel.tensor_parallel_size == 2
    mtp = Speculative(method="mtp", tokens=1)
    argv = launch_command(d, CATALOG, speculative=mtp).argv
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
    assert "replicas: 36" in kubernetes_manifest(d, CATALOG, speculative=mtp)


@pytest.mark.parametrize("speculative", [None, {"method": "ngram", "tokens": 3}])
def test_deploy_refuses_an_mtp_draft_it_would_not_start(tmp_path, speculative):
    """A deployment with mtp_draft is planned with the MTP layers loaded; a command without the mtp
    method would not load them: /api/deploy answers 422 at the field instead of a command that differs
    from the plan."""
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    client = TestClient(create_app(tmp_path / "test.db"))
    body = {"deployment": {"model": "deepseek-r1", "system": "hgx-h200", "mtp_draft": True}, "speculative": speculative}
    bad = client.post("/api/deploy", json=body)
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "deployment.mtp_draft"
    ok = client.post("/api/deploy", json={**body, "speculative": {"method": "mtp", "tokens": 1}})
    assert ok.status_code == 200 and '"method":"mtp"' in ok.json()["command"]["text"]


def test_a_model_without_mtp_layers_is_told_the_catalogue_models_with_them():
    """The refusal's allowed names catalogue ids one can pass, each a model that ships MTP layers."""
    with pytest.raises(InvalidScenarioError) as exc:
        fit(Deployment(model="llama-3.1-8b", gpu="h100", mtp_draft=True), CATALOG)
    named = exc.value.allowed.split(": ", 1)[1].split(", ")
    assert "deepseek-v3" in named and "deepseek-v4-flash" in named and "llama-3.1-8b" not in named
    assert all(resolve_model(CATALOG, m).architecture.mtp_layers for m in named)


@pytest.mark.parametrize("model", ["nemotron-3-super", "nemotron-3-ultra"])
def test_nemotron_h_mtp_block_pattern_gives_its_attention_layer(model):
    """Nemotron-H's MTP block is an attention block and a MoE block (config.json's
    mtp_hybrid_override_pattern "*E", or mtp_layers_block_type [attention, moe]): drafting adds one
    full-attention layer's KV per token; the last decoder block (a MoE block) holds none."""
    arch = resolve_model(CATALOG, model).architecture
    assert arch.mtp_layer_kinds == (LayerKind.FULL,) and arch.layer_kinds[-1] is LayerKind.MLP
    kw = dict(model=model, gpu="b200", gpus=8, tensor_parallel_size=8, max_model_len=32768)
    plain = plan_memory(Deployment(**kw), CATALOG).layout
    drafting = plan_memory(Deployment(**kw, mtp_draft=True), CATALOG).layout
    full = sum(k is LayerKind.FULL for k in arch.layer_kinds)
    assert drafting.growing_bytes_per_token == pytest.approx(plain.growing_bytes_per_token * (full + 1) / full)


def test_a_bad_mtp_block_pattern_names_its_own_key():
    from inferplan.catalog.hf_layers import mtp_layer_kinds
    from inferplan.errors import ConfigImportError

    assert mtp_layer_kinds({"mtp_layers_block_type": ["attention", "moe"]}, 52, 2) == (LayerKind.FULL,) * 2
    with pytest.raises(ConfigImportError) as exc:
        mtp_layer_kinds({"mtp_hybrid_override_pattern": "*X"}, 88, 1)
    assert exc.value.field == "mtp_hybrid_override_pattern" and exc.value.allowed == "M * - E"


def test_an_engines_mtp_rules_cover_disjoint_releases():
    from inferplan.catalog.mtp_rules import check_mtp_rules
    from inferplan.catalog.registry import Registry
    from inferplan.errors import CatalogError

    rules = {r.id: r for r in CATALOG.mtp_rules}
    rules["mtp-sglang"] = rules["mtp-sglang"].model_copy(update={"last_release": "0.5.10"})
    with pytest.raises(CatalogError) as exc:
        check_mtp_rules(dataclasses.replace(CATALOG, mtp_rules=Registry("mtp rules", rules)))
    assert "overlap" in str(exc.value)
