"""What runs on my GPUs? answers on every catalogued accelerator: no GPU kind or count makes the view fail
(a 500 on the page's first question); and a row whose weight offload also shortens its context (SGLang's
``--cpu-offload-gb`` on a 16 GB card) runs and states the offload's context."""

from __future__ import annotations

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.performance.here import what_runs_on
from inferplan.report.homelab_view import homelab_view

CATALOG = load_catalog()


def test_an_offload_that_shortens_the_context_runs_at_that_context():
    r = what_runs_on("rtx-4080", 1, CATALOG, engine="sglang", quantizations=["nvfp4"])
    shortened = {m.model: m.offload.changes["max_model_len"] for m in r.models
                 if m.offload is not None and "max_model_len" in m.offload.changes}
    assert shortened  # the view raised TypeError: two values for max_model_len
    rows = {row.model: row for row in homelab_view(r, CATALOG).rows}
    for model, tokens in shortened.items():
        assert rows[model].context == f"{tokens:,} tokens", model
        assert f"--context-length {tokens} " in rows[model].command, model


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app
    return TestClient(create_app(tmp_path_factory.mktemp("homelab") / "h.db"), raise_server_exceptions=False)


@pytest.mark.slow
@pytest.mark.parametrize("gpus", [1, 2])
@pytest.mark.parametrize("gpu", sorted(CATALOG.accelerators.records))
def test_every_accelerator_gets_an_answer(client, gpu, gpus):
    r = client.post("/api/views/homelab", json={"gpu": gpu, "gpus": gpus})
    assert r.status_code in (200, 422), r.text[:300]
    if r.status_code == 200:
        assert r.json()["rows"]
