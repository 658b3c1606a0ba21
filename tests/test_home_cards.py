"""The home cards a first-time user names resolve to the catalogue's part: the RTX 3060 is the 12 GB card
(192-bit GDDR6, 360 GB/s), and a mixture-of-experts model too big for it fits with experts in host RAM."""

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.units import GB


def test_rtx_3060_is_the_12_gb_card():
    card = load_catalog().accelerator("RTX 3060")
    assert card.id == "rtx-3060"
    assert card.memory_bytes.value == 12 * GB and card.memory_bandwidth_bytes_per_s.value == 360 * GB


def test_qwen3_30b_a3b_fits_a_3060_with_experts_in_host_ram():
    d = Deployment(model="qwen3-30b-a3b", gpu="RTX 3060", engine="llamacpp", quantization="gguf-q4_k_m",
                   max_model_len=32768, host_memory_gb=32)
    assert not fit(d).fits  # 17 GiB of Q4_K_M weights on a 12 GB card
    r = fit(d.model_copy(update={"n_cpu_moe": 30}))
    assert r.fits and r.host_memory_bytes_used < r.host_memory_budget_bytes
