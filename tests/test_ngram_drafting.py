"""N-gram drafting on a model that ships MTP layers is planned as n-gram drafting, not MTP: the deployment
names its method (``speculative_method``), so the memory holds no draft weights or KV, the drafts cost no
GPU time and their acceptance is the one stated (none is assumed: it is the workload's, and left out it is refused
naming ``acceptance_rate``); MTP is added only where MTP is the method, stated or the default where no other is named."""

import pytest
from pydantic import ValidationError

from inferplan.catalog.loader import load_catalog
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.mtp import with_mtp_draft, with_speculative
from inferplan.performance.context import ServingContext
from inferplan.performance.drafts import with_drafts
from inferplan.performance.serving import estimate_at

GLM = Deployment(model="glm-4.5-air", gpu="h100-sxm", gpus=4)


def _context(method: str | None, tokens: int = 3, rate: float | None = None) -> ServingContext:
    catalog = load_catalog()
    if method == "ngram" and rate is None:
        rate = 0.7  # the rate MTP is priced at here, stated
    w = Workload(input_len=1024, output_len=256, speculative_tokens=tokens, acceptance_rate=rate if tokens else None)
    return ServingContext(catalog, with_drafts(catalog, GLM, w, method), w)


def test_ngram_and_mtp_answers_differ_in_memory_and_speed():
    ngram, mtp = _context("ngram"), _context("mtp")
    assert not ngram.d.mtp_draft and mtp.d.mtp_draft
    assert ngram.max_concurrency() > mtp.max_concurrency()
    assert estimate_at(ngram, 1).output_tokens_per_s_per_user > estimate_at(mtp, 1).output_tokens_per_s_per_user
    assert _context(None).max_concurrency() == mtp.max_concurrency()  # no method named: MTP, as before


def test_ngram_holds_what_a_plan_without_speculative_decoding_holds():
    ngram, plain = _context("ngram"), _context(None, tokens=0)
    assert ngram.max_concurrency() == plain.max_concurrency()
    assert ngram.mp.result.kv_cache_tokens == plain.mp.result.kv_cache_tokens
    assert ngram.mp.result.weights_bytes == plain.mp.result.weights_bytes


def test_ngram_drafts_cost_no_gpu_time_at_the_stated_acceptance():
    ngram = _context("ngram", rate=0.55)
    assert (ngram.acceptance.rate, ngram.acceptance.basis) == (0.55, "stated")
    text = " ".join(estimate_at(ngram, 1).assumptions)
    assert "n-gram drafts cost no GPU time" in text


def test_ngram_without_a_stated_acceptance_is_refused_naming_the_field():
    catalog = load_catalog()
    w = Workload(input_len=1024, output_len=256, speculative_tokens=3)
    with pytest.raises(InferplanError) as e:
        ServingContext(catalog, with_drafts(catalog, GLM, w, "ngram"), w)
    assert e.value.field == "acceptance_rate" and "no default" in str(e.value)
    assert ServingContext(catalog, with_drafts(catalog, GLM, w, "mtp"), w).acceptance.assumed  # MTP keeps its default


def test_the_speed_model_adds_mtp_only_where_mtp_is_the_method():
    catalog = load_catalog()
    assert with_mtp_draft(catalog, GLM, 3).mtp_draft  # named by no method: the default
    assert with_mtp_draft(catalog, GLM.model_copy(update={"speculative_method": "mtp"}), 3).mtp_draft
    for method in ("ngram", "draft_model", "eagle3"):
        assert not with_mtp_draft(catalog, GLM.model_copy(update={"speculative_method": method}), 3).mtp_draft


def test_the_method_the_deployment_states_is_planned_and_a_different_one_refused():
    catalog = load_catalog()
    stated = GLM.model_copy(update={"speculative_method": "ngram"})
    d = with_speculative(catalog, stated, 3, None)
    assert (d.speculative_method, d.mtp_draft, d.speculative_tokens) == ("ngram", False, 3)
    with pytest.raises(InferplanError) as e:
        with_speculative(catalog, stated, 3, "mtp")
    assert e.value.field == "speculative_method" and "ngram" in e.value.allowed


def test_a_draft_of_another_method_is_refused_naming_the_method():
    with pytest.raises(ValidationError) as e:
        Deployment(model="glm-4.5-air", gpu="h100", mtp_draft=True, speculative_method="ngram")
    error = e.value.errors()[0]
    assert error["loc"] == ("speculative_method",) and error["ctx"]["allowed"] == "mtp with mtp_draft, or leave mtp_draft out"
    assert Deployment(model="glm-4.5-air", gpu="h100", mtp_draft=True, speculative_method="mtp").mtp_draft


def test_deploy_launches_the_method_the_deployment_names():
    import json

    from inferplan.deploy import Speculative, launch_command

    catalog = load_catalog()
    d = Deployment(model="glm-4.5-air", gpu="h100-sxm", gpus=4, engine="vllm", speculative_method="ngram")
    argv = launch_command(d, catalog, speculative=Speculative(tokens=3)).argv
    config = json.loads(argv[argv.index("--speculative-config") + 1])
    assert config == {"method": "ngram", "num_speculative_tokens": 3}
    as_before = launch_command(d.model_copy(update={"speculative_method": None}), catalog, speculative=Speculative(tokens=3)).argv
    assert json.loads(as_before[as_before.index("--speculative-config") + 1])["method"] == "mtp"  # no method: MTP
    with pytest.raises(InferplanError) as e:
        launch_command(d, catalog, speculative=Speculative(tokens=3, method="mtp"))
    assert e.value.field == "speculative_method"


def test_perf_refuses_ngram_without_a_stated_acceptance_naming_the_field_in_each_shell():
    import json

    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from inferplan.shells.api import create_app
    from inferplan.shells.cli import app

    args = ["perf", "--model", "llama-3.1-8b", "--gpu", "h100", "--speculative-tokens", "3", "--speculative-method", "ngram"]
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 2 and json.loads(r.stdout)["error"]["field"] == "--acceptance-rate"
    assert CliRunner().invoke(app, [*args, "--acceptance-rate", "0.5"]).exit_code == 0
    client, d = TestClient(create_app()), {"model": "llama-3.1-8b", "gpu": "h100", "speculative_method": "ngram"}
    refused = client.post("/api/perf", json={"deployment": d, "workload": {"speculative_tokens": 3}})
    assert refused.status_code == 422 and refused.json()["error"]["field"] == "workload.acceptance_rate"
    assert client.post("/api/perf", json={"deployment": d, "workload": {"speculative_tokens": 3, "acceptance_rate": 0.5}}).status_code == 200
