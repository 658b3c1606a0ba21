"""fit names the hosts an instance wider than one host spans, from the same split deploy writes a command per host
from."""

from __future__ import annotations

from inferplan.deploy.command import launch_command
from inferplan.inputs.deployment import Deployment
from inferplan.memory.suggest import fit_or_suggest

TP16 = Deployment(model="llama-3.3-70b", gpu="h100-sxm", tensor_parallel_size=16)


def test_fit_at_tp16_on_h100_says_it_spans_two_hosts(catalog):
    fit = fit_or_suggest(TP16, catalog)
    assert fit.fits
    assert fit.hosts_note is not None and "2 hosts, 8 GPUs each" in fit.hosts_note
    assert launch_command(TP16, catalog).hosts == 2  # the hosts deploy writes commands for


def test_fit_within_one_host_names_no_hosts(catalog):
    assert fit_or_suggest(TP16.model_copy(update={"tensor_parallel_size": 8}), catalog).hosts_note is None


def test_two_one_gpu_hosts_are_named_in_the_singular_per_host(catalog):
    # two 48 GB Macs for a 70B Q4_K_M: each host is one GPU, said "1 GPU", not "1 GPUs"
    d = Deployment(model="llama-3.3-70b", gpu="M4 Pro 48GB", engine="llamacpp", quantization="q4_k_m",
                   max_model_len=8192, pipeline_parallel_size=2)
    note = fit_or_suggest(d, catalog).hosts_note
    assert note is not None and "(1 GPU): it needs 2 hosts, 1 GPU each" in note


def test_one_gpu_data_parallel_ranks_are_named_in_the_singular(catalog):
    # two 48 GB Macs, one 8B rank each: "2 data-parallel ranks of 1 GPU", not "of 1 GPUs"
    d = Deployment(model="llama-3.1-8b", gpu="M4 Pro 48GB", gpus=2, data_parallel_size=2)
    note = fit_or_suggest(d, catalog).hosts_note
    assert note is not None and "2 data-parallel ranks of 1 GPU (" in note
