import shutil
from pathlib import Path

import pytest

from inferplan.catalog.loader import DATA_DIR, load_catalog


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture(scope="session")
def sketch_catalog(tmp_path_factory):
    """The shipped catalogue plus tests/data/sketch_models.yaml: a card on a borrowed KV layout
    (kv_proxy) and one without an architecture."""
    data = tmp_path_factory.mktemp("catalog") / "data"
    shutil.copytree(DATA_DIR, data)
    shutil.copy(Path(__file__).parent / "data" / "sketch_models.yaml", data / "models" / "sketch_models.yaml")
    return load_catalog(data)
