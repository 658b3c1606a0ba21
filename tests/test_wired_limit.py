"""A Mac's GPU memory limit: a stated iogpu.wired_limit_mb is the GPU's working set, refused where it
cannot apply, and ``fit`` offers the raised limit (leaving macOS its assumed reserve) where it holds the model."""

import pytest

from inferplan.deploy.command import launch_command
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.suggest import fit_or_suggest
from inferplan.memory.wired_suggest import raised_wired_limit_mb
from inferplan.units import GiB

MAC_70B = dict(model="llama-3.3-70b", gpu="apple-m4-max-64gb", engine="llama.cpp", quantization="gguf-q4_k_m")


def test_stated_wired_limit_is_the_working_set_llama_cpp_sizes_against(catalog):
    default = fit(Deployment(**MAC_70B, max_model_len=16384), catalog)
    raised = fit(Deployment(**MAC_70B, max_model_len=16384, wired_limit_mb=57344), catalog)
    assert default.gpu_memory_bytes == pytest.approx(48 * GiB)  # 3/4 of 64 GiB by default
    assert raised.gpu_memory_bytes == pytest.approx(56 * GiB)


def test_stated_wired_limit_lifts_mlx_cap_to_the_whole_limit(catalog):
    d = dict(model="qwen3-8b", gpu="apple-m4-max-64gb", engine="mlx", max_model_len=32768)
    assert fit(Deployment(**d), catalog).usable_bytes_per_gpu == pytest.approx(48 * GiB)
    assert fit(Deployment(**d, wired_limit_mb=57344), catalog).usable_bytes_per_gpu == pytest.approx(56 * GiB)


def test_fit_offers_the_raised_limit_with_its_sysctl_command(catalog):
    found = fit_or_suggest(Deployment(**MAC_70B, max_model_len=40960), catalog).suggestions
    wired = [s for s in found if s.kind == "wired_limit"]
    assert wired and wired[0].changes == {"wired_limit_mb": 57344}  # 64 GiB less oMLX's 8 GiB reserve
    assert "sudo sysctl iogpu.wired_limit_mb=57344" in wired[0].summary
    assert fit(Deployment(**MAC_70B, max_model_len=40960, wired_limit_mb=57344), catalog).fits


def test_raised_limit_with_the_longest_context_it_holds(catalog):
    found = fit_or_suggest(Deployment(**MAC_70B), catalog).suggestions  # the model's 131,072 tokens
    wired = next(s for s in found if s.kind == "wired_limit")
    shorter = next(s for s in found if s.kind == "context")
    assert wired.changes["wired_limit_mb"] == 57344
    assert wired.changes["max_model_len"] > shorter.changes["max_model_len"]  # more context than the default limit


def test_no_raised_limit_where_the_reserve_leaves_less_than_the_default(catalog):
    assert raised_wired_limit_mb(catalog, catalog.accelerator("apple-m1-8gb")) == 4096  # 8 GiB less 4 GiB
    found = fit_or_suggest(Deployment(model="llama-3.1-8b", gpu="apple-m1-8gb", engine="llama.cpp"), catalog)
    assert not [s for s in found.suggestions if s.kind == "wired_limit"]  # 4 GiB is below the 5.3 GiB default (2/3 of 8)


def test_no_raised_limit_equal_to_the_default_under_vllm_s_fraction(catalog):
    """A 24 GB Mac's raised limit (16,384 MiB) is its default working set: vLLM's fraction lowers what it uses,
    not the limit macOS sets, so it is no gain and is not offered."""
    d = Deployment(model="qwen3-14b", quantization="mlx-4bit", max_model_len=40960, gpu="M4 Pro 24GB", engine="vllm")
    assert raised_wired_limit_mb(catalog, catalog.accelerator("M4 Pro 24GB")) == 16384
    assert not fit(d, catalog).fits
    assert not [s for s in fit_or_suggest(d, catalog).suggestions if s.kind == "wired_limit"]

@pytest.mark.parametrize("gpu, limit, allowed", [("h100", 5000, "leave it out off Apple silicon"),
                                                 ("apple-m4-max-64gb", 65536, "1 to 65,535")])
def test_wired_limit_refused_naming_the_field(catalog, gpu, limit, allowed):
    with pytest.raises(InvalidScenarioError) as err:
        fit(Deployment(model="llama-3.1-8b", gpu=gpu, wired_limit_mb=limit), catalog)
    assert err.value.field == "wired_limit_mb" and err.value.allowed == allowed


@pytest.mark.parametrize("d", [dict(model="llama3.3:70b"), MAC_70B])
def test_launch_script_raises_the_limit_the_plan_assumes(catalog, d):
    cmd = launch_command(Deployment(**{**d, "gpu": "apple-m4-max-64gb"}, max_model_len=40960, wired_limit_mb=57344),
                         catalog)
    assert cmd.script.splitlines()[0] == "sudo sysctl iogpu.wired_limit_mb=57344"
    assert any("57,344 MiB" in n for n in cmd.notes)
    plain = launch_command(Deployment(**{**d, "gpu": "apple-m4-max-64gb"}, max_model_len=16384), catalog)
    assert "sysctl" not in plain.script


def test_every_host_of_a_multi_host_launch_raises_its_own_limit(catalog):
    """Each Mac of a launch spread over hosts sets its own GPU limit, an RPC worker too: in its block of the
    script and in its host command."""
    d = Deployment(model="llama-3.3-70b", quantization="gguf-q4_k_m", engine="llama.cpp", gpu="M4 Pro 24GB", gpus=3,
                   pipeline_parallel_size=3, wired_limit_mb=16384)
    launch = launch_command(d, catalog)
    step = "sudo sysctl iogpu.wired_limit_mb=16384"
    assert len(launch.host_commands) == 3
    assert all(step in host.before and step in host.script.splitlines() for host in launch.host_commands)
    blocks = launch.script.split("# host ")[1:]
    assert len(blocks) == 3 and all(step in block.splitlines() for block in blocks)
    assert launch.script.count(step) == 3
