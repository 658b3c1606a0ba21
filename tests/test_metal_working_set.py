"""macOS's default GPU limit on a Mac is a sourced rule by memory size (metal_working_set.yaml): two thirds
of unified memory up to 32 GiB, three quarters above, each band resting on printed
recommendedMaxWorkingSetSize figures; llama.cpp and MLX size against it where no measured working set is."""

import json

import pytest
from typer.testing import CliRunner

from inferplan.catalog.metal_schema import metal_working_set
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.suggest import fit_or_suggest
from inferplan.shells.cli import app
from inferplan.units import GiB


@pytest.mark.parametrize("memory_gib, share", [(8, 2 / 3), (16, 2 / 3), (24, 2 / 3), (32, 2 / 3), (36, 0.75),
                                               (48, 0.75), (64, 0.75), (192, 0.75), (512, 0.75)])
def test_each_mac_size_falls_in_one_band(catalog, memory_gib, share):
    assert metal_working_set(catalog.metal_working_sets, memory_gib).share.value == pytest.approx(share, abs=1e-5)


def test_every_band_rests_on_figures_at_its_share(catalog):
    """Each printed figure, read in its build's unit (MiB in 2023, 10^6 bytes from 2024), is the band's share
    to within 0.01; the 128 GB M5 Max's is above it and is carried as that Mac's measured working set."""
    m5_max = catalog.accelerator("apple-m5-max").memory_reported_bytes
    for band in catalog.metal_working_sets:
        assert band.figures and band.share.kind.value == "measured"
        for figure in band.figures:
            if figure.chip == "M5 Max":
                assert m5_max is not None and m5_max.value == pytest.approx(figure.working_set_bytes.value)
                continue
            printed = figure.working_set_bytes.value / (figure.memory_gib * GiB)
            assert abs(printed - band.share.value) < 0.01, (band.id, figure.chip, printed)


@pytest.mark.parametrize("engine", ["llama.cpp", "mlx"])
def test_a_24_gib_mac_gives_the_gpu_two_thirds(catalog, engine):
    r = fit(Deployment(model="qwen3-8b", gpu="apple-m4-pro-24gb", engine=engine, max_model_len=4096), catalog)
    assert r.usable_bytes_per_gpu == pytest.approx(16 * GiB)


def test_qwen3_30b_a3b_does_not_fit_the_default_limit_of_a_24gb_m4_pro():
    out = CliRunner().invoke(app, ["fit", "--model", "qwen3:30b-a3b", "--gpu", "M4 Pro 24GB", "--json"])
    result = json.loads(out.stdout)
    assert result["usable_bytes_per_gpu"] == pytest.approx(16 * GiB)  # 2/3 of 24 GiB; 3/4 would be 18
    assert not result["fits"]  # 17.3 GiB of weights


def test_the_raised_limit_is_offered_above_the_two_thirds_default_of_a_32gb_mac(catalog):
    """24,576 MiB (32 GiB less macOS's 8 GiB) gives the GPU more than its 21.3 GiB default: offered, and it holds
    the model (at three quarters the default would be those 24 GiB already, and nothing would be offered)."""
    d = Deployment(model="qwen3-32b", gpu="M1 Max 32GB", engine="llama.cpp", quantization="gguf-q5_k_m",
                   max_model_len=4096)
    assert not fit(d, catalog).fits
    wired = [s for s in fit_or_suggest(d, catalog).suggestions if s.kind == "wired_limit"]
    assert wired and wired[0].changes == {"wired_limit_mb": 24576}


def test_the_wired_limit_flag_states_the_bands_default(catalog):
    """--wired-limit-mb's help gives the default the bands give: two thirds up to the first band's edge, three
    quarters above."""
    from inferplan.shells.cli_flags import FLAGS

    help_text = FLAGS["wired_limit_mb"][1].help
    low, high = sorted(catalog.metal_working_sets, key=lambda band: band.above_gib)
    assert (low.share.value, high.share.value) == pytest.approx((2 / 3, 0.75), abs=1e-5)
    assert f"two thirds of memory up to {low.up_to_gib:g} GiB, three quarters above" in help_text
