"""Qwen3-Next's multi-token-prediction layer: its config.json states no count, the engines build one
(vLLM qwen3_next_mtp.py, SGLang NEXTN), so the importer plans one and an MTP draft of it plans."""

import pytest
from typer.testing import CliRunner

from inferplan.catalog.hf_import import architecture_from_config, read_config
from inferplan.catalog.loader import load_catalog
from inferplan.deploy.command import Speculative, launch_command
from inferplan.errors import ConfigImportError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.params import count_params
from inferplan.memory.resolve import resolve_model
from inferplan.shells.cli import app

CATALOG = load_catalog()
MODEL = "qwen3-next-80b-a3b"


def _config() -> dict:
    return read_config(CATALOG.data_dir / CATALOG.models.records[MODEL].config)


def test_the_config_states_no_mtp_key_and_the_importer_plans_the_one_layer_engines_build():
    cfg = _config()
    assert "num_nextn_predict_layers" not in cfg and "mtp_num_hidden_layers" not in cfg
    assert architecture_from_config(cfg).mtp_layers == 1


def test_a_stated_count_wins_and_a_bad_one_names_its_key():
    assert architecture_from_config({**_config(), "num_nextn_predict_layers": 0}).mtp_layers == 0
    assert architecture_from_config({**_config(), "mtp_num_hidden_layers": 2}).mtp_layers == 2
    with pytest.raises(ConfigImportError) as exc:
        architecture_from_config({**_config(), "mtp_num_hidden_layers": "one"})
    assert exc.value.field == "mtp_num_hidden_layers"


def test_parameters_count_the_gated_attention_and_the_mtp_layer_apart():
    """The main model matches the card's count (q_proj twice as wide in the 12 gated full-attention
    layers); the MTP layer, one gated full-attention layer with its 512 experts, is counted apart."""
    params = count_params(resolve_model(CATALOG, MODEL).architecture)
    card = CATALOG.models.records[MODEL].total_params.value
    assert params.total == pytest.approx(card, rel=1e-5)
    assert params.mtp / 1e9 == pytest.approx(1.65, abs=0.01)
    assert (params.total + params.mtp) / 1e9 == pytest.approx(81.3, abs=0.05)


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_an_mtp_draft_loads_the_mtp_layer_once(engine):
    d = Deployment(model=MODEL, gpu="h100-sxm", tensor_parallel_size=4, engine=engine)
    plain = fit(d, CATALOG)
    drafting = fit(d.model_copy(update={"mtp_draft": True, "speculative_tokens": 3}), CATALOG)
    mtp = count_params(resolve_model(CATALOG, MODEL).architecture).mtp * 2  # BF16
    assert drafting.weights_bytes - plain.weights_bytes == pytest.approx(mtp, rel=1e-3)
    assert drafting.weights_bytes_per_gpu - plain.weights_bytes_per_gpu == pytest.approx(mtp / 4, rel=1e-3)
    assert drafting.kv_cache_bytes_per_gpu < plain.kv_cache_bytes_per_gpu


def test_the_perf_command_plans_the_sglang_nextn_draft():
    result = CliRunner().invoke(app, [
        "perf", "--model", MODEL, "--gpu", "h100-sxm", "--gpus", "4", "--tensor-parallel-size", "4",
        "--engine", "sglang", "--speculative-method", "mtp", "--speculative-tokens", "3"])
    assert result.exit_code == 0, result.output
    assert "tok/s per user" in result.output


@pytest.mark.parametrize(("engine", "words"), [("vllm", ['"method":"mtp"', '"num_speculative_tokens":2']),
                                               ("sglang", ["NEXTN"])])
def test_deploy_launches_the_mtp_draft(engine, words):
    d = Deployment(model=MODEL, gpu="h100-sxm", tensor_parallel_size=4, engine=engine)
    text = " ".join(launch_command(d, CATALOG, speculative=Speculative(method="mtp", tokens=2)).argv)
    assert all(w in text.replace(" ", "") for w in words), text


def test_a_model_type_without_the_key_is_still_refused_naming_it():
    with pytest.raises(InvalidScenarioError) as exc:
        fit(Deployment(model="llama-3.1-8b", gpu="h100", mtp_draft=True), CATALOG)
    assert exc.value.field == "mtp_draft" and "num_nextn_predict_layers" in str(exc.value)
    assert MODEL in exc.value.allowed


def test_the_importer_keeps_which_key_states_the_count():
    assert architecture_from_config(_config()).mtp_layers_key is None
    assert architecture_from_config({**_config(), "num_nextn_predict_layers": 1}).mtp_layers_key == "num_nextn_predict_layers"
    assert resolve_model(CATALOG, "qwen3.5-397b-a17b").architecture.mtp_layers_key == "mtp_num_hidden_layers"


def test_vllm_without_stated_draft_tokens_is_refused_where_the_config_states_no_count():
    """vLLM 0.11.1 reads num_nextn_predict_layers for a qwen3_next draft (None here) and starts without
    num_speculative_tokens only when that count is stated; a stated count takes its default."""
    d = Deployment(model=MODEL, gpu="h100-sxm", tensor_parallel_size=4, engine="vllm", mtp_draft=True)
    with pytest.raises(InvalidScenarioError) as exc:
        fit(d, CATALOG)
    assert exc.value.field == "speculative_tokens" and "at least 1" in exc.value.allowed
    assert fit(d.model_copy(update={"speculative_tokens": 1}), CATALOG).kv_cache_bytes_per_gpu > 0
    stated = fit(Deployment(model="deepseek-v3", gpu="h200", tensor_parallel_size=8, engine="vllm", mtp_draft=True), CATALOG)
    assert any("num_nextn_predict_layers" in n for n in stated.assumptions)
    qwen35 = fit(Deployment(model="qwen3.5-397b-a17b", gpu="h200", tensor_parallel_size=8, engine="vllm", mtp_draft=True), CATALOG)
    default = [n for n in qwen35.assumptions if "no speculative_tokens stated" in n]
    assert default and "(mtp_num_hidden_layers)" in default[0] and "num_nextn_predict_layers" not in default[0]


def _sglang(model: str, version: str, **kw) -> Deployment:
    return Deployment(model=model, gpu="h100-sxm" if model == MODEL else "h200", engine="sglang", engine_version=version,
                      tensor_parallel_size=4 if model == MODEL else 8, max_model_len=32000, **kw)


@pytest.mark.parametrize("version", ["0.5.18", "0.5.23"])
def test_sglang_plans_the_nextn_draft_pool_the_launch_allocates(version):
    """deploy launches NEXTN with no draft path; SGLang then knows no MTP layer count for Qwen3NextForCausalLM
    (not in its auto-path list, no num_nextn_predict_layers in the config), so its pool holds the target's
    layers alone and the draft worker allocates a pool of its own outside the fraction."""
    d = _sglang(MODEL, version)
    argv = launch_command(d, CATALOG, speculative=Speculative(method="mtp", tokens=3)).argv
    assert "NEXTN" in argv and "--speculative-draft-model-path" not in argv
    drafting_d = d.model_copy(update={"mtp_draft": True, "speculative_tokens": 3})
    plain, drafting = fit(d, CATALOG), fit(drafting_d, CATALOG)
    assert drafting.kv_cache_bytes_per_token == plain.kv_cache_bytes_per_token
    outside = [n for n in drafting.assumptions if "draft pool of its own, outside the fraction" in n]
    assert outside and "competes with the memory the default fraction leaves for activations and CUDA graphs" in outside[0]
    full = {"gpu_memory_utilization": 0.98}  # leaves 1.6 GiB per GPU, under the 2.2M tokens x 1 KiB draft pool
    with pytest.raises(InvalidScenarioError) as exc:
        fit(drafting_d.model_copy(update=full), CATALOG)
    assert exc.value.field == "mtp_draft" and "outside the memory fraction" in str(exc.value)
    assert "needs 2.11 GiB" in str(exc.value)  # the target's tokens x the MTP layer's bytes per token per GPU
    assert "fraction (a draft pool of the target's tokens)" in str(exc.value)  # its weights are inside the fraction
    fit(d.model_copy(update=full), CATALOG)
    # 0.97 leaves 2.4 GiB: the 2.16M-token draft pool (2.06 GiB) fits; the state slots of the
    # hybrid pool's bytes do not scale it
    assert fit(drafting_d.model_copy(update={"gpu_memory_utilization": 0.97}), CATALOG).kv_cache_tokens > 2_000_000


@pytest.mark.parametrize(("model", "version", "in_pool"), [
    ("deepseek-v3", "0.5.18", True), ("deepseek-v3", "0.5.23", True),  # listed: SGLang sets the draft path
    ("nemotron-3-super", "0.5.18", False), ("nemotron-3-super", "0.5.23", True),  # from 0.5.20: the config's key
    ("qwen3.5-397b-a17b", "0.5.23", False),  # its count is mtp_num_hidden_layers, which SGLang's target does not read
])
def test_sglang_counts_the_mtp_layers_in_the_pool_where_it_knows_their_count(model, version, in_pool):
    d = _sglang(model, version)
    plain, drafting = fit(d, CATALOG), fit(d.model_copy(update={"mtp_draft": True, "speculative_tokens": 3}), CATALOG)
    assert (drafting.kv_cache_bytes_per_token > plain.kv_cache_bytes_per_token) is in_pool


def test_a_rule_counting_the_mtp_layers_for_some_models_needs_its_sources_and_the_other_plan():
    import dataclasses

    from inferplan.catalog.mtp_rules import check_mtp_rules
    from inferplan.catalog.registry import Registry
    from inferplan.errors import CatalogError

    for update in ({"kv_in_pool_sources": ()}, {"kv_outside_note": None}, {"kv_layers_in_pool": False}):
        rules = {r.id: r for r in CATALOG.mtp_rules}
        rules["mtp-sglang-in-fraction"] = rules["mtp-sglang-in-fraction"].model_copy(update=update)
        with pytest.raises(CatalogError) as exc:
            check_mtp_rules(dataclasses.replace(CATALOG, mtp_rules=Registry("mtp rules", rules)))
        assert exc.value.field == "mtp-sglang-in-fraction"
