import shutil
from pathlib import Path

import pytest

from inferplan.catalog.loader import DATA_DIR, load_catalog


def pytest_addoption(parser):
    parser.addoption("--refit", action="store_true",
                     help="also run the full speed refit (minutes of CPU; the fit stamp stands in for it otherwise)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: refits, cross-validation, browser and fuzz tests; "
                                       "the fast tier is pytest -m 'not slow'")
    config.addinivalue_line("markers", "refit: the full speed refit, run only with --refit")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--refit"):
        return
    skip = pytest.mark.skip(reason="the full speed refit runs with --refit; tests/test_fit_stamp.py checks the stamp")
    for item in items:
        if "refit" in item.keywords:
            item.add_marker(skip)


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


@pytest.fixture(autouse=True)
def _no_user_database(tmp_path, monkeypatch):
    """Commands that read the user's stored measurements (perf, frontier) read an empty data
    directory in tests, never the machine's own."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
