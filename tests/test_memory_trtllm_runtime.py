"""TensorRT-LLM's TensorRT-engine runtime (0.5-0.21) sizes its KV cache from the device's free memory read
after the engine, the runtime buffers and the decoder exist: the CUDA context and the arrays sized for
max_batch_size slots x the vocabulary count. Pinned on the records that printed the figures; unwire the
data that states the mechanism and these tests fail."""

import shutil

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR, load_files
from inferplan.catalog.memory_rules import MemoryRule, memory_rule
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.units import GiB
from inferplan.validation.memory import check_point

RULES = DATA_DIR / "engine_memory_rules.yaml"
RULE_ID = "trtllm-engine-runtime"
LLAMA31_VOCAB = 128_256


def _check(catalog, point_id):
    return check_point(catalog.memory_points.records[point_id], catalog)


def _d22_deployment(**changes):
    """The RTX 5090 engine of d22: trtllm-build --max_batch_size 2048 --max_num_tokens 1024 --max_seq_len 2048."""
    base = dict(model="llama-3.1-8b", gpu="rtx-5090", engine="trtllm", engine_version="0.19.0", quantization="fp8",
                kv_cache_dtype="fp8", max_num_seqs=2048, max_num_batched_tokens=1024, max_model_len=2048,
                gpu_memory_utilization=0.9)
    return Deployment(**{**base, **changes})


@pytest.mark.parametrize(("release", "rule_id"), [
    ("0.5", RULE_ID), ("0.8", RULE_ID), ("0.19.0", RULE_ID), ("0.21.0", RULE_ID),
    ("1.0", "trtllm-free-fraction"), ("1.2.0", "trtllm-free-fraction"), (None, "trtllm-free-fraction")])
def test_engine_releases_take_the_engine_runtime_rule(catalog, release, rule_id):
    assert memory_rule(catalog, "trtllm", release).id == rule_id


def test_the_runtime_holds_four_fp32_arrays_per_slot_and_vocab_entry(catalog):
    """Engine logits output, the decoder's runtime logits, the penalty workspace and the top-k
    temporary log-probs: 16 bytes per (slot x vocab entry), read in the 0.19-era source."""
    rule = memory_rule(catalog, "trtllm", "0.19.0")
    assert rule.runtime_buffers.bytes_per_slot_vocab_entry == 16
    many, one = fit(_d22_deployment(), catalog), fit(_d22_deployment(max_num_seqs=1), catalog)
    assert many.overhead_bytes_per_gpu - one.overhead_bytes_per_gpu == pytest.approx(16 * 2047 * LLAMA31_VOCAB)


def test_the_cuda_context_counts_because_the_free_memory_is_read_device_wide(catalog):
    engine_runtime, pytorch = fit(_d22_deployment(), catalog), fit(_d22_deployment(engine_version="1.0"), catalog)
    held = catalog.constant("cuda-context-bytes-per-gpu") + 16 * 2048 * LLAMA31_VOCAB
    assert engine_runtime.overhead_bytes_per_gpu - pytorch.overhead_bytes_per_gpu == pytest.approx(held)
    assert any("CUDA context" in a for a in engine_runtime.assumptions)


def test_the_rtx5090_record_leaves_the_printed_free_memory(catalog):
    """d22 printed 'total: 31.84 GiB, available: 17.83 GiB' and 16.05 GiB of KV cache (0.9 of it)."""
    check = _check(catalog, "d22-llama31-8b-fp8-rtx5090-trtllm-0190")
    assert abs(check.kv_error) < 0.06
    assert check.predicted_kv_bytes / 0.9 / GiB == pytest.approx(17.83, rel=0.06)


@pytest.mark.parametrize(("point_id", "worst"), [
    ("d02-llama2-7b-a10-trtllm", 0.05), ("d07-llama2-7b-w8a8-a100-80gb-trtllm-v08", 0.005)])
def test_the_small_batch_records_hold(catalog, point_id, worst):
    """TensorRT-LLM 0.5 on an A10 (25 slots) and 0.8 on an A100 (one slot): the CUDA context is what they
    add; a 32,000-entry vocabulary over so few slots is megabytes."""
    assert abs(_check(catalog, point_id).kv_error) < worst


def _catalog_with_rule(tmp_path, **changes):
    data = yaml.safe_load(RULES.read_text())
    for rule in data["memory_rules"]:
        if rule["id"] == RULE_ID:
            rule.update(changes)
            for key in [k for k, v in changes.items() if v is None]:
                rule.pop(key)
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder)
    (folder / RULES.name).write_text(yaml.safe_dump(data, sort_keys=False))
    return load_files(sorted(folder.glob("**/*.yaml")), data_dir=folder)


def test_without_the_runtime_buffers_the_records_miss_again(tmp_path):
    unwired = _catalog_with_rule(tmp_path, runtime_buffers=None)
    assert _check(unwired, "d22-llama31-8b-fp8-rtx5090-trtllm-0190").kv_error > 0.25
    assert _check(unwired, "d02-llama2-7b-a10-trtllm").kv_error > 0.1


def test_runtime_buffers_outside_the_non_torch_memory_are_refused():
    rule = next(r for r in yaml.safe_load(RULES.read_text())["memory_rules"] if r["id"] == RULE_ID)
    with pytest.raises(ValueError, match="runtime_buffers are part of the non_torch memory"):
        MemoryRule.model_validate({**rule, "counted": ["weights", "activation_peak"],
                                   "activation": {"model": "generic", "forward_constant": "generic-activation-bytes-per-token-hidden"}})
