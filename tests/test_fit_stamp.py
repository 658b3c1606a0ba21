"""The fit stamp stands in for the minutes-long speed refit between refits: these tests show that
it is current and that it covers every input of the fit (``pytest --refit`` runs the refit)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inferplan.catalog.loader import DATA_DIR
from inferplan.validation.fit_stamp import (GENERATED_NAME, SRC_DIR, code_files, inputs_sha256, stale_reasons,
                                            stamped)

REFIT = "python -m inferplan.validation.calibrate_speed --write"


def test_the_shipped_speed_constants_are_stamped_with_the_present_inputs():
    reasons = stale_reasons(DATA_DIR)
    assert not reasons, f"{'; '.join(reasons)}: refit with `{REFIT}` (minutes) and commit the result"


def test_every_module_a_prediction_loads_is_hashed():
    """Predict every shipped speed point in a fresh interpreter: each inferplan module it loaded,
    lazily imported ones too, must be among those whose code the stamp hashes."""
    probe = ("import json, sys\n"
             "from inferplan.catalog.loader import load_catalog\n"
             "from inferplan.validation.calibrate_speed import prepare, objective\n"
             "from inferplan.validation.speed import validate_speed\n"
             "catalog = load_catalog()\n"
             "validate_speed(catalog)\n"
             "points = prepare(catalog, 'fit')[0]\n"
             "print(json.dumps(sorted(m.__file__ for n, m in sys.modules.items()\n"
             "                        if n.startswith('inferplan') and getattr(m, '__file__', None))))\n")
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                       check=True).stdout)
    hashed = {str(p) for p in code_files()}
    assert len(loaded) > 20
    assert not [f for f in loaded if str(Path(f).resolve()) not in hashed]


def test_the_store_modules_are_no_input_of_the_fit():
    """The store sits above the layers a prediction loads: none of its modules is hashed."""
    store = {"store.py", "store_schema.py", "store_runs.py"}
    assert store <= {p.name for p in SRC_DIR.glob("store*.py")}
    assert not [p for p in code_files() if p.name in store]


@pytest.fixture
def tree(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    src = tmp_path / "inferplan"
    shutil.copytree(SRC_DIR, src, ignore=shutil.ignore_patterns("__pycache__", "static"))
    generated = data / GENERATED_NAME  # stamped for the copy, so these tests hold while the tree awaits a refit
    generated.write_text(stamped(generated.read_text(), inputs_sha256(data, src)))
    return data, src


def test_a_changed_measurement_or_model_code_changes_the_inputs_hash(tree):
    data, src = tree
    before = inputs_sha256(data, src)
    assert not stale_reasons(data, src)

    point = data / "measurements" / "speed_vllm.yaml"
    point.write_text(point.read_text().replace("value: 291.53", "value: 291.54", 1))
    after_data = inputs_sha256(data, src)
    assert after_data != before
    assert stale_reasons(data, src)

    serving = src / "performance" / "serving.py"
    serving.write_text(serving.read_text() + "\nEXTRA_SECONDS = 1.0\n")
    assert inputs_sha256(data, src) != after_data


def test_a_comment_or_docstring_edit_keeps_the_hash(tree):
    data, src = tree
    before = inputs_sha256(data, src)
    serving = src / "performance" / "serving.py"
    text = serving.read_text()
    first_def = text.index("\ndef ")
    serving.write_text(text[:first_def] + "\n# a comment only\n" + text[first_def:])
    assert inputs_sha256(data, src) == before


def test_a_hand_edited_constant_is_caught(tree):
    data, src = tree
    generated = data / GENERATED_NAME
    text = generated.read_text()
    generated.write_text(text.replace("value: 0.", "value: 0.1", 1))
    assert any("edited" in r for r in stale_reasons(data, src))


def test_an_unstamped_file_is_caught_and_restamping_is_idempotent(tree):
    data, src = tree
    generated = data / GENERATED_NAME
    text = generated.read_text()
    assert stamped(text, inputs_sha256(data, src)) == text
    generated.write_text("".join(line for line in text.splitlines(keepends=True) if "fit-stamp" not in line))
    assert any("no" in r for r in stale_reasons(data, src))


def test_the_track_record_written_from_the_fit_is_no_input_of_it(tree):
    data, src = tree
    before = inputs_sha256(data, src)
    record = data / "speed_accuracy.yaml"
    record.write_text(record.read_text().replace("median_abs_error: 0.", "median_abs_error: 0.9", 1))
    assert inputs_sha256(data, src) == before and not stale_reasons(data, src)
