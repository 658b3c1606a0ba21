"""A launch whose one instance needs more GPUs than a host holds says it spans hosts."""

from inferplan.catalog.loader import load_catalog
from inferplan.deploy.command import launch_command
from inferplan.inputs.deployment import Deployment

CATALOG = load_catalog()


def _notes(**kw) -> str:
    return " ".join(launch_command(Deployment(model="qwen3-8b", **kw), CATALOG).notes)


def test_an_instance_past_one_host_says_it_spans_hosts_and_one_within_does_not():
    assert "spans 2 hosts" in _notes(gpu="h100-sxm", gpus=16, tensor_parallel_size=8, pipeline_parallel_size=2)  # 8-GPU hosts
    assert "spans 2 hosts" in _notes(system="hgx-h100", gpus=16, tensor_parallel_size=8, pipeline_parallel_size=2)
    assert "spans" not in _notes(gpu="h100-sxm", gpus=8)
    assert "spans" not in _notes(system="hgx-h100", gpus=16, tensor_parallel_size=8)  # two copies of one host each
