"""The shipped catalogue itself: sourced, dated, consistent, cross-referenced."""

import datetime as dt
from collections import Counter
from pathlib import Path

import pytest
import yaml

from inferplan.catalog.hf_import import architecture_from_config, read_config
from inferplan.catalog.loader import DATA_DIR, SECTIONS, load_files
from inferplan.catalog.registry import normalise_name
from inferplan.catalog.provenance import iter_sourced
from inferplan.errors import CatalogError

SEEDS = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"


def all_records(catalog):
    for key in SECTIONS:
        for record in getattr(catalog, key):
            yield key, record


def test_catalogue_has_the_issue_scope(catalog):
    assert len(catalog.accelerators) >= 40
    assert len(catalog.systems) >= 18
    assert len(catalog.models) >= 40
    for required in ("h100-sxm", "b200", "gb10", "mi300x", "gaudi3", "rtx-5090", "ryzen-ai-max-395"):
        assert required in catalog.accelerators
    for required in ("hgx-h100", "gb300-nvl72", "vera-rubin-nvl72", "kyber-nvl144", "tinybox-green-v2"):
        assert required in catalog.systems
    for required in ("llama-3.1-8b", "deepseek-v3", "gpt-oss-120b", "qwen3-next-80b-a3b", "minimax-m3"):
        assert required in catalog.models


def test_every_number_is_sourced_and_dated(catalog):
    count = 0
    for key, record in all_records(catalog):
        for path, q in iter_sourced(record):
            count += 1
            source = catalog.sources.get(q.source)
            assert source is not None, f"{key}:{record.id}.{path} names unknown source {q.source}"
            assert (q.checked or source.checked) <= dt.date.today(), f"{key}:{record.id}.{path} checked in the future"
            assert source.url or source.seed
    assert count > 500
    future = [s.id for s in catalog.sources.values() if s.checked and s.checked > dt.date.today()]
    assert not future, f"sources checked after today: {future}"


def test_seed_sources_name_real_seed_files(catalog):
    if not SEEDS.is_dir():
        pytest.skip("shared/seeds not beside the checkout")
    for source in catalog.sources.values():
        if source.seed:
            assert (SEEDS / source.seed).is_file(), f"{source.id}: no seed file {source.seed}"


def test_an_unsourced_number_fails_to_load(tmp_path):
    bad = tmp_path / "bad.yaml"
    good = yaml.safe_load((DATA_DIR / "accelerators_nvidia.yaml").read_text())
    record = dict(good["accelerators"][0])
    record["tdp_w"] = 700  # a bare number
    bad.write_text(yaml.safe_dump({"sources": good["sources"], "accelerators": [record]}))
    with pytest.raises(CatalogError, match="tdp_w"):
        load_files([bad])


def test_an_unknown_source_id_fails_to_load(tmp_path):
    good = yaml.safe_load((DATA_DIR / "accelerators_nvidia.yaml").read_text())
    record = dict(good["accelerators"][0])
    record.pop("scale_out", None)  # its network source is defined in systems.yaml, not loaded here
    record["tdp_w"] = {"value": 700, "unit": "W", "kind": "spec", "source": "nowhere"}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"sources": good["sources"], "accelerators": [record]}))
    with pytest.raises(CatalogError, match="unknown source 'nowhere'"):
        load_files([bad])


def _verdict_only_point(**measured) -> tuple[list, dict]:
    field = yaml.safe_load((DATA_DIR / "measurements" / "memory_field.yaml").read_text())
    point = next(p for p in field["memory_points"] if p["id"] == "f13-llama31-8b-l4-1k")
    return field["sources"], dict(point, measured=measured)


@pytest.mark.parametrize(("measured", "message"), [
    ({"fits": True}, "fits_source"),
    ({"fits": True, "fits_source": "nowhere"}, "unknown source 'nowhere'"),
])
def test_a_verdict_only_memory_point_needs_a_known_source(tmp_path, measured, message):
    sources, point = _verdict_only_point(**measured)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"sources": sources, "memory_points": [point]}))
    with pytest.raises(CatalogError, match=message):
        load_files([bad])


def test_every_memory_point_cites_a_source(catalog):
    unsourced = [p.id for p in catalog.memory_points
                 if p.measured.fits_source is None and not any(True for _ in iter_sourced(p.measured))]
    assert not unsourced, unsourced


@pytest.mark.parametrize("kind", ["accelerators", "systems", "models", "quantizations", "kv_cache_dtypes", "engines"])
def test_names_and_aliases_are_unique_within_a_kind(catalog, kind):
    names = Counter()
    for record in getattr(catalog, kind):
        own = {normalise_name(record.id), *(normalise_name(a) for a in getattr(record, "aliases", ()))}
        names.update(own)
    dupes = [n for n, c in names.items() if c > 1]
    assert not dupes, f"{kind}: names used twice: {dupes}"


def test_every_native_low_precision_format_has_a_compute_rate(catalog):
    needs = {"fp8": "fp8", "nvfp4": "fp4", "mxfp4": "fp4", "int8": "int8"}
    for accel in catalog.accelerators:
        assert "bf16" in accel.peak_flop_per_s or "fp16" in accel.peak_flop_per_s, accel.id
        for fmt in accel.native_formats:
            if fmt in needs and accel.status.value != "roadmap":
                assert needs[fmt] in accel.peak_flop_per_s, f"{accel.id}: native {fmt} without a {needs[fmt]} rate"


def test_every_system_memory_matches_its_gpus(catalog):
    for system in catalog.systems:
        accel = catalog.accelerators.records[system.accelerator]
        if system.memory_bytes is None:
            continue
        per_gpu = system.memory_bytes.value / system.accelerator_count
        assert per_gpu == pytest.approx(accel.memory_bytes.value, rel=0.12), system.id


def test_every_shipped_config_imports(catalog):
    for model in catalog.models:
        if model.config:
            arch = architecture_from_config(read_config(catalog.data_dir / model.config))
            assert arch.num_layers > 0 and arch.vocab_size > 0, model.id


def test_every_kv_proxy_has_a_config(catalog):
    for model in catalog.models:
        if model.kv_proxy:
            assert catalog.models.records[model.kv_proxy].config, model.id


def test_a_constant_fitted_on_an_unknown_point_fails_to_load(tmp_path):
    good = yaml.safe_load((DATA_DIR / "calibration.yaml").read_text())
    constant = dict(good["calibration"][0], fitted_on=["no-such-point"])
    bad = tmp_path / "bad.yaml"
    memory = DATA_DIR / "measurements" / "memory.yaml"
    bad.write_text(yaml.safe_dump({"sources": good.get("sources", []), "calibration": [constant]}))
    with pytest.raises(CatalogError, match="fitted on unknown point 'no-such-point'"):
        load_files([memory, bad])


@pytest.mark.slow  # four loads of the whole catalogue; the test below checks the same rules on the loaded one
def test_an_engine_build_must_date_a_measured_build_from_a_known_source(tmp_path):
    shipped = [p for p in DATA_DIR.glob("**/*.yaml") if p.name != "engine_builds.yaml"]
    vllm = yaml.safe_load((DATA_DIR / "measurements" / "speed_vllm.yaml").read_text())
    version = vllm["speed_points"][0]["engine_version"]
    build = {"engine": "vllm", "engine_version": version, "date": "2025-10", "basis": "release", "source": "eb-test"}
    source = {"id": "eb-test", "title": "a release page", "url": "https://example.org", "checked": "2026-11-30"}
    ok = tmp_path / "ok.yaml"
    ok.write_text(yaml.safe_dump({"sources": [source], "engine_builds": [build]}))
    assert load_files([*shipped, ok]).engine_build("vllm", version).year == pytest.approx(2025 + 9.5 / 12)
    for bad_build, message in ((dict(build, engine_version="v0.0.0-never-measured"), "no speed point names"),
                               (dict(build, source="nowhere"), "unknown source 'nowhere'"),
                               (dict(build, date="2025-13"), "date")):
        bad = tmp_path / "bad.yaml"
        bad.write_text(yaml.safe_dump({"sources": [source], "engine_builds": [bad_build]}))
        with pytest.raises(CatalogError, match=message):
            load_files([*shipped, bad])


def test_an_engine_build_of_the_loaded_catalogue_must_date_a_measured_build_from_a_known_source(catalog):
    from dataclasses import replace

    from pydantic import ValidationError

    from inferplan.catalog.points_schema import EngineBuild
    from inferplan.catalog.references import check_references
    from inferplan.catalog.registry import Registry

    version = next(p.engine_version for p in catalog.speed_points if p.engine == "vllm")
    source = next(iter(catalog.sources))
    build = EngineBuild(engine="vllm", engine_version=version, date="2025-10", basis="release", source=source)
    assert build.year == pytest.approx(2025 + 9.5 / 12)
    for bad_build, message in ((build.model_copy(update={"engine_version": "v0.0.0-never-measured"}), "no speed point names"),
                               (build.model_copy(update={"source": "nowhere"}), "unknown source 'nowhere'")):
        with pytest.raises(CatalogError, match=message):
            check_references(replace(catalog, engine_builds=Registry("engine_builds", {bad_build.id: bad_build})))
    with pytest.raises(ValidationError, match="date"):
        EngineBuild.model_validate({**build.model_dump(), "date": "2025-13"})


def test_no_data_string_is_cut_short_by_an_unquoted_hash():
    # YAML reads " #" as the start of a comment: "main branch at PR #43232 (June 2026)" loaded as
    # "main branch at PR" until the engine builds were dated. Free-text values that cite an issue or
    # PR must be quoted.
    import re

    cut = re.compile(r"^\s*-?\s*[a-z_]+: [^'\"\[{|>#][^#]*\s#\d")
    offenders = [f"{path.name}:{i}" for path in DATA_DIR.glob("**/*.yaml")
                 for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if cut.match(line)]
    assert not offenders, offenders


@pytest.mark.parametrize("rule", ["runs_on", "kv_cache_dtypes", "context_beyond_model", "embeddings_on_host",
                                  "pp_kv_room", "pp_batch_limits", "expert_parallel", "pads_gemm_rows",
                                  "reads_page_cache_as_used", "converts_to"])
def test_an_engine_rule_needs_a_known_source(tmp_path, rule):
    good = yaml.safe_load((DATA_DIR / "engines.yaml").read_text())
    stated = next(e for e in good["engines"] if e.get(rule) not in (None, False, [], ()))
    for source, match in ((None, f"{rule} needs a {rule}_source"), ("nowhere", "unknown source 'nowhere'")):
        record = dict(stated, **{f"{rule}_source": source})
        bad = tmp_path / "engines.yaml"
        bad.write_text(yaml.safe_dump({"sources": good["sources"], "engines": [record]}))
        with pytest.raises(CatalogError, match=match):
            load_files([bad, DATA_DIR / "quantizations.yaml"])  # the KV-cache dtypes an engine names


def test_a_calibration_family_needs_known_sources(tmp_path):
    good = yaml.safe_load((DATA_DIR / "engines.yaml").read_text())
    record = next(e for e in good["engines"] if e.get("calibration_families"))
    record["calibration_families"] = [dict(record["calibration_families"][0], sources=["nowhere"])]
    bad = tmp_path / "engines.yaml"
    bad.write_text(yaml.safe_dump({"sources": good["sources"], "engines": [record]}))
    with pytest.raises(CatalogError, match="unknown source 'nowhere'"):
        load_files([bad, DATA_DIR / "quantizations.yaml"])
