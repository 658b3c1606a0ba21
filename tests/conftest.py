import pytest

from inferplan.catalog.loader import load_catalog


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()
