"""A stated memory configuration of a chip sold in several (catalog/memory_config.py): "M4 Max 64GB"
plans the M4 Max record with 64 GB, names it, and every command resolves the id it answers with."""

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.errors import UnknownHardwareError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.engine_budget import device_total_bytes
from inferplan.units import GiB

CATALOG = load_catalog()


@pytest.mark.parametrize("name", ["M4 Max 64GB", "apple-m4-max-64gb", "Apple M4 Max 64 GB", "m4 max:64gb"])
def test_a_sized_name_plans_the_record_with_that_memory(name):
    accel = CATALOG.accelerator(name)
    base = CATALOG.accelerator("apple-m4-max")
    assert accel.id == "apple-m4-max-64gb" and accel.configuration_of == base.id == accel.record_id
    assert accel.memory_bytes.value == 64e9 and accel.memory_bytes.kind == "assumed"
    assert accel.memory_bandwidth_bytes_per_s == base.memory_bandwidth_bytes_per_s
    assert CATALOG.accelerator(accel.id) == accel  # what an answer names resolves again


def test_the_largest_configuration_is_the_record_itself():
    assert CATALOG.accelerator("M4 Max 128GB") is CATALOG.accelerator("apple-m4-max")


def test_a_64gb_mac_holds_less_than_the_128gb_record_and_says_so():
    """The finding behind the rule: a 64 GB M4 Max was told Llama-3.3-70B 4-bit fits at full context."""
    small = fit(Deployment(model="llama-3.3-70b", gpu="M4 Max 64GB", engine="mlx", quantization="mlx-4bit"), CATALOG)
    large = fit(Deployment(model="llama-3.3-70b", gpu="apple-m4-max", engine="mlx", quantization="mlx-4bit"), CATALOG)
    assert large.fits and not small.fits
    assert small.accelerator == "apple-m4-max-64gb"
    total, _ = device_total_bytes(CATALOG, CATALOG.accelerator("M4 Max 64GB"), CATALOG.engine("llamacpp"))
    assert total == pytest.approx(0.75 * 64 * GiB, rel=0.02)  # llama.cpp's Metal working set of 64 GiB


def test_a_size_beyond_the_largest_configuration_is_refused_naming_the_range():
    with pytest.raises(UnknownHardwareError) as e:
        CATALOG.accelerator("M4 Max 256GB")
    assert e.value.field == "gpu" and "8 to 128" in e.value.allowed


def test_a_part_sold_in_one_configuration_takes_no_size():
    """Discrete cards' memory sizes are separate catalogue parts (a100-40gb, a100-80gb)."""
    with pytest.raises(UnknownHardwareError) as e:
        CATALOG.accelerator("RTX 4090 48GB")
    assert "no accelerator named" in str(e.value)
    assert not CATALOG.accelerator("rtx-4090").memory_configurable
    assert not CATALOG.accelerator("gb10").memory_configurable


def test_id_keyed_engine_data_follows_the_record():
    """MLX's command-buffer limits are listed by record id: a configuration takes its record's, so its
    prefill working set is the record's (the M4 Max's limits differ from the default's)."""
    sized, base = (fit(Deployment(model="qwen3-8b", gpu=g, engine="mlx", quantization="mlx-4bit", max_model_len=8192),
                       CATALOG) for g in ("M4 Max 96GB", "apple-m4-max"))
    assert sized.activation_bytes_per_gpu == base.activation_bytes_per_gpu
