"""The memory configurations as the web page offers them (GET /api/views/memory-configurations,
report/memory_config_view.py): every size a chip is sold in, under the id that plans it, the default
the one its own id plans."""

import pytest
from fastapi.testclient import TestClient

from inferplan.catalog.loader import load_catalog
from inferplan.shells.api import create_app

CATALOG = load_catalog()


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("db") / "v.db"))


def test_every_configurable_chip_is_offered_with_each_size_under_an_id_that_plans_it(client):
    views = client.get("/api/views/memory-configurations").json()
    assert [v["accelerator"] for v in views] == [a.id for a in CATALOG.accelerators if a.memory_configurations]
    for view in views:
        base = CATALOG.accelerator(view["accelerator"])
        sizes = [CATALOG.accelerator(c["id"]).memory_bytes.value for c in view["configurations"]]
        assert sizes == [c.memory_bytes.value for c in base.memory_configurations]
        defaults = [c["id"] for c in view["configurations"] if c["default"]]
        assert defaults == [base.id]  # the size an unsized id plans: the record's
        assert all(c["sources"] for c in view["configurations"])


def test_the_m4_max_sizes_are_worded_with_their_bandwidth(client):
    m4 = next(v for v in client.get("/api/views/memory-configurations").json() if v["accelerator"] == "apple-m4-max")
    assert [(c["id"], c["name"], c["label"]) for c in m4["configurations"]] == [
        ("apple-m4-max-36gb", "Apple M4 Max 36 GB", "36 GB, 410 GB/s"),
        ("apple-m4-max-48gb", "Apple M4 Max 48 GB", "48 GB, 546 GB/s"),
        ("apple-m4-max-64gb", "Apple M4 Max 64 GB", "64 GB, 546 GB/s"),
        ("apple-m4-max", "Apple M4 Max 128 GB", "128 GB, 546 GB/s")]


def test_a_chip_sold_in_one_size_is_not_offered_sizes(client):
    ids = {v["accelerator"] for v in client.get("/api/views/memory-configurations").json()}
    assert "rtx-4090" not in ids and "h100" not in ids
