"""SGLang --cpu-offload-gb: whole GiB of each GPU's decoder-layer weights in host RAM, copied to the GPU
in every forward pass (sglang/srt/utils/offloader.py OffloaderV1), planned, priced and launched as the
engine does it."""

import pytest

from inferplan.deploy import launch_command
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.performance.serving import estimate

D = dict(model="qwen3-8b", gpu="rtx-4090", engine="sglang", max_model_len=4096)
W = Workload(input_len=512, output_len=128, concurrency=1)


def test_sglang_takes_cpu_offload_gb_and_keeps_that_much_of_each_gpus_weights_in_host_ram():
    plain = fit(Deployment(**D))
    offloaded = fit(Deployment(**D, cpu_offload_gb=4, host_memory_gb=64))
    assert plain.weights_bytes_per_gpu - offloaded.weights_bytes_per_gpu == pytest.approx(4 * 2**30)
    assert offloaded.host_memory_bytes_used == pytest.approx(4 * 2**30)


def test_sglang_cpu_offload_copies_the_weights_over_pcie_every_step():
    plain = estimate(Deployment(**D), W, use_profiles=False)
    streamed = estimate(Deployment(**D, cpu_offload_gb=4, host_memory_gb=64), W, use_profiles=False)
    # 4 GiB over PCIe 4.0 x16 at 80 %: about 0.17 s a step, no prefetch hides it
    assert streamed.output_tokens_per_s_per_user < 7 < plain.output_tokens_per_s_per_user


def test_sglang_launch_carries_cpu_offload_gb_as_the_integer_its_parser_takes(catalog):
    argv = launch_command(Deployment(**D, cpu_offload_gb=4.0, host_memory_gb=64), catalog).argv
    assert argv[argv.index("--cpu-offload-gb") + 1] == "4"
    with pytest.raises(UnsupportedSettingError) as err:
        launch_command(Deployment(**D, cpu_offload_gb=4.5, host_memory_gb=64), catalog)
    assert err.value.field == "cpu_offload_gb"
