"""A stated memory configuration of a chip sold in several (catalog/memory_config.py): "M4 Max 64GB"
plans the M4 Max record with 64 GB, names it, and every command resolves the id it answers with."""

import pytest
from pydantic import ValidationError

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.schema import Accelerator
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
    assert accel.memory_bytes.value == 64e9 and accel.memory_bytes.source == "ox-hfjs-hardware"
    assert accel.memory_bandwidth_bytes_per_s == base.memory_bandwidth_bytes_per_s
    assert CATALOG.accelerator(accel.id) == accel  # what an answer names resolves again


def test_a_sized_name_is_resolved_once_per_catalogue():
    """The catalogue keeps what a sized name resolved to: a plan looks its accelerator up many times."""
    assert CATALOG.accelerator("M4 Max 48GB") is CATALOG.accelerator("M4 Max 48GB")
    assert CATALOG.accelerator("apple-m4-max-48gb", "gpus") is CATALOG.accelerator("apple-m4-max-48gb")


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


@pytest.mark.parametrize("name", ["M4 Max 256GB", "M4 Max 16GB", "M4 Max 64.5GB", "apple-m4-max-96gb"])
def test_a_size_the_chip_is_not_sold_in_is_refused_naming_the_sizes_it_is(name):
    with pytest.raises(UnknownHardwareError) as e:
        CATALOG.accelerator(name)
    assert e.value.field == "gpu" and e.value.allowed == "apple-m4-max-36gb, -48gb, -64gb, -128gb"


def test_each_chip_line_has_its_own_sizes():
    """M3 Ultra starts at 96 GB; M3 Pro is sold with 18 GB, which no M4 Max is."""
    with pytest.raises(UnknownHardwareError) as e:
        CATALOG.accelerator("M3 Ultra 64GB")
    assert e.value.allowed == "apple-m3-ultra-96gb, -256gb, -512gb"
    assert CATALOG.accelerator("M3 Pro 18GB").memory_bytes.value == 18e9


def test_a_configuration_sold_on_a_narrower_bus_plans_at_its_own_bandwidth():
    """The 36 GB M4 Max is the 14-core CPU / 32-core GPU bin at 410 GB/s, not the record's 546 GB/s."""
    small = CATALOG.accelerator("M4 Max 36GB")
    assert small.memory_bandwidth_bytes_per_s.value == 410e9
    assert small.memory_bandwidth_bytes_per_s.source == "ox-macworld-studio2025"
    assert CATALOG.accelerator("M4 Max 48GB").memory_bandwidth_bytes_per_s.value == 546e9


def test_a_smaller_configuration_drops_the_measured_working_set_of_the_largest():
    """apple-m5-max carries Metal's measured 107.52 GiB working set of the 128 GB machine: a 64 GB M5 Max
    gets llama.cpp's 75 % of its own memory, not the 128 GB machine's figure."""
    base = CATALOG.accelerator("apple-m5-max")
    assert base.memory_reported_bytes is not None
    sized = CATALOG.accelerator("M5 Max 64GB")
    assert sized.memory_reported_bytes is None
    total, _ = device_total_bytes(CATALOG, sized, CATALOG.engine("llamacpp"))
    assert total == pytest.approx(0.75 * 64 * GiB, rel=0.02)


def test_a_configuration_list_names_the_record_size_smallest_first():
    record = CATALOG.accelerator("apple-m4-max").model_dump()
    sizes = record["memory_configurations"]
    for bad in ([sizes[1], sizes[0], *sizes[2:]], sizes[:-1]):  # out of order; the record's own 128 GB missing
        with pytest.raises(ValidationError, match="memory_configurations"):
            Accelerator.model_validate({**record, "memory_configurations": bad})


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
                       CATALOG) for g in ("M4 Max 64GB", "apple-m4-max"))
    assert sized.activation_bytes_per_gpu == base.activation_bytes_per_gpu
