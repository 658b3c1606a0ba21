"""A Mac named by its product (``Mac mini 24GB``) is refused naming the Apple chips sold with that memory."""

import pytest

from inferplan.errors import UnknownHardwareError


def test_mac_product_name_refused_with_the_chips_of_that_size(catalog):
    with pytest.raises(UnknownHardwareError) as err:
        catalog.accelerator("Mac mini 24GB")
    assert err.value.field == "gpu" and "names a Mac, not its chip" in str(err.value)
    assert "'M4 Pro 24GB'" in err.value.allowed and "'M4 24GB'" in err.value.allowed
    assert "64GB" not in err.value.allowed  # only the chips sold with 24 GB


def test_mac_product_name_without_size_points_to_the_list(catalog):
    with pytest.raises(UnknownHardwareError) as err:
        catalog.accelerator("MacBook Pro")
    assert "catalog list accelerators" in err.value.allowed


def test_a_chip_named_with_its_size_still_resolves(catalog):
    assert catalog.accelerator("M4 Pro 24GB").id == "apple-m4-pro-24gb"


def test_mac_product_name_with_its_chip_resolves_to_the_chip(catalog):
    assert catalog.accelerator("Mac Studio M3 Ultra 96GB").id == catalog.accelerator("M3 Ultra 96GB").id
    assert catalog.accelerator("Mac mini M4 Pro 24GB").id == "apple-m4-pro-24gb"
