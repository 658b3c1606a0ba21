"""The compiled catalogue is read only while everything it was built from is unchanged."""

import shutil

import pytest

from inferplan.catalog import compiled
from inferplan.catalog.loader import DATA_DIR, load_files


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERPLAN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("INFERPLAN_NO_CACHE", raising=False)
    copy = tmp_path / "data"
    shutil.copytree(DATA_DIR, copy)
    return copy


def loader(data_dir, builds):
    def build():
        builds.append(1)
        return load_files(list(data_dir.glob("**/*.yaml")), data_dir=data_dir)
    return build


def h100_bandwidth(catalog):
    return catalog.accelerators.records["h100-sxm"].memory_bandwidth_bytes_per_s.value


def test_a_second_start_reads_the_compiled_copy_and_an_edited_file_builds_anew(data):
    builds = []
    first = compiled.load_compiled(data, loader(data, builds))
    again = compiled.load_compiled(data, loader(data, builds))
    assert len(builds) == 1 and h100_bandwidth(again) == h100_bandwidth(first)
    assert len(list(compiled.cache_dir().glob("catalog-*.pickle"))) == 1

    card = data / "accelerators_nvidia.yaml"
    stated = "memory_bandwidth_bytes_per_s: {value: 3.35, unit: TB/s"
    assert stated in card.read_text() and h100_bandwidth(first) == 3.35e12
    card.write_text(card.read_text().replace(stated, stated.replace("3.35", "3.0"), 1))
    edited = compiled.load_compiled(data, loader(data, builds))
    assert len(builds) == 2 and h100_bandwidth(edited) == 3e12


def test_a_changed_schema_changes_the_key(data, tmp_path, monkeypatch):
    before = compiled.catalog_key(data)
    code = tmp_path / "catalog_code"
    shutil.copytree(compiled.CATALOG_CODE, code, ignore=shutil.ignore_patterns("__pycache__", "data"))
    monkeypatch.setattr(compiled, "CATALOG_CODE", code)
    assert compiled.catalog_key(data) == before
    (code / "schema.py").write_text((code / "schema.py").read_text() + "\nEXTRA = 1\n")
    assert compiled.catalog_key(data) != before


def test_an_unreadable_compiled_copy_is_built_again(data):
    builds = []
    compiled.load_compiled(data, loader(data, builds))
    (path,) = compiled.cache_dir().glob("catalog-*.pickle")
    path.write_bytes(path.read_bytes()[:100])
    catalog = compiled.load_compiled(data, loader(data, builds))
    assert len(builds) == 2 and h100_bandwidth(catalog) > 0
    assert compiled.load_compiled(data, loader(data, builds)) and len(builds) == 2


def test_no_cache_builds_every_time_and_writes_nothing(data, monkeypatch):
    monkeypatch.setenv("INFERPLAN_NO_CACHE", "1")
    builds = []
    compiled.load_compiled(data, loader(data, builds))
    compiled.load_compiled(data, loader(data, builds))
    assert len(builds) == 2 and not compiled.cache_dir().exists()


def test_the_catalogue_carries_each_cards_imported_config_and_a_plan_reads_no_json(monkeypatch):
    import pickle

    from inferplan.catalog import models
    from inferplan.catalog.hf_import import architecture_from_config, read_config
    from inferplan.catalog.loader import load_catalog

    catalog = pickle.loads(pickle.dumps(load_catalog()))  # as a compiled copy reads it
    cards = [m for m in catalog.models if m.config]
    assert len(catalog.architectures) == len({m.config for m in cards}) > 40
    card = catalog.model("llama-3.1-8b")
    assert catalog.architectures[card.config] == architecture_from_config(read_config(DATA_DIR / card.config))

    def no_json(path):
        raise AssertionError(f"read {path}")

    monkeypatch.setattr(models, "_card_architecture", no_json)
    assert models.spec_from_card(catalog, card).architecture.num_layers == 32


def test_a_copy_another_process_drops_while_this_one_prunes_is_passed_over(data, monkeypatch):
    """Processes share the cache folder: a copy listed for pruning and gone before it is read (another
    process dropped it) costs nothing, and the catalogue still loads."""
    folder = compiled.cache_dir()
    folder.mkdir(parents=True)
    gone = folder / "catalog-gone.pickle"
    gone.write_bytes(b"")
    listed = type(folder).glob

    def glob_then_drop(self, pattern):
        found = list(listed(self, pattern))
        if self == folder:
            gone.unlink(missing_ok=True)  # dropped between the listing and its stat
        return iter(found)

    monkeypatch.setattr(type(folder), "glob", glob_then_drop)
    builds = []
    assert h100_bandwidth(compiled.load_compiled(data, loader(data, builds))) == 3.35e12 and builds == [1]
