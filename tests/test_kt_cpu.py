"""KTransformers' CPU expert paths (catalog/data/kt_cpu_paths.yaml, performance/kt_cpu.py): the
kernel figures against the benchmarks they were read from, the NUMA layout, Expert Deferral, and the
speed points wired to the release they ran."""

import pytest

from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import plan_memory
from inferplan.memory.fit import fit
from inferplan.memory.kt_host import KtHost, kt_path
from inferplan.performance.kt_cpu import kt_cpu
from inferplan.performance.serving import estimate
from inferplan.validation.speed import point_scenario

# the llamafile operator benchmark: DeepSeek-Coder-V2 experts, 6 of 160 per token, 3 x 5120 x 1536 weights each
EXPERT_WEIGHTS = 3 * 5120 * 1536
SOCKET_BYTES_PER_S = 8 * 8 * 4800e6  # one Xeon Gold 6454S: 8 channels of DDR5-4800
DSV3 = dict(model="deepseek-v3", gpu="rtx-4090", engine="ktransformers", quantization="gguf-q4_k_m",
            kt_num_gpu_experts=0, host_memory_gb=1024, host_memory_bandwidth_gb_per_s=614.4, max_model_len=2048)
DECODE = Workload(input_len=969, output_len=300, concurrency=1)


def test_the_llamafile_decode_efficiency_is_the_benchmarks_q4_k_m_stream(catalog):
    """Golden: 6 experts x 3 x 5120 x 1536 weights x 0.6484 bytes (Q4_K gate/up, Q6_K down) in ~520 us
    is 176.5 GB/s, 0.575 of one socket's 307.2 GB/s."""
    path = catalog.kt_cpu_paths.records["v0-2-llamafile"]
    streamed = 6 * EXPERT_WEIGHTS * 0.648437 / 520e-6
    assert path.decode_read_efficiency.value == pytest.approx(streamed / SOCKET_BYTES_PER_S, rel=0.01)


@pytest.mark.parametrize("qlen, layer_ms", [(32, 13.9), (64, 20.3), (128, 29.6), (256, 50.6), (512, 85.9)])
def test_the_llamafile_prefill_curve_is_the_benchmarks_layer_times(catalog, qlen, layer_ms):
    """Golden: qlen tokens x 2 x 6 experts x 3 x 5120 x 1536 FLOPs per layer time, at qlen x 6 / 160 tokens per expert."""
    points = {round(p.tokens_per_expert, 3): p.flop_per_s.value for p in catalog.kt_cpu_paths.records["v0-2-llamafile"].prefill_flop_per_s}
    assert points[round(qlen * 6 / 160, 3)] == pytest.approx(qlen * 2 * 6 * EXPERT_WEIGHTS / (layer_ms * 1e-3), rel=0.01)


def test_the_amx_int8_rate_is_the_bf16_curve_scaled_by_the_published_peaks(catalog):
    path = catalog.kt_cpu_paths.records["kt-kernel-amx"]
    assert path.prefill_rate_scale.value == pytest.approx(35 / 21, rel=0.001)
    assert path.prefill_flop_per_s[-1].flop_per_s.value == pytest.approx(21.3e12)


def test_the_rate_follows_tokens_per_expert_and_the_sockets(catalog):
    """DeepSeek-V3 routes 8 of 256 experts: 1,024 tokens give each 32, where the AMX curve reads 5.9 TFLOPS BF16."""
    bf16 = kt_path(catalog, "v0.3-preview", "AMXBF16", "bf16")
    one = kt_cpu(KtHost(bf16, 1, 8 / 256), catalog, 307.2e9)
    two = kt_cpu(KtHost(bf16, 2, 8 / 256), catalog, 614.4e9)
    assert one.flop_per_s(1024) == pytest.approx(5.9e12)
    assert two.flop_per_s(1024) == pytest.approx(2 * 5.9e12)
    assert one.flop_per_s(64 * 1024) == pytest.approx(21.3e12)  # held beyond the last point
    assert 3.0e12 < one.flop_per_s(768) < 5.9e12  # 24 tokens per expert, between the 16 and 32 points


def test_one_copy_on_two_sockets_reads_at_one_sockets_bandwidth(catalog):
    """single-copy (v0.3-preview): the far socket's threads read the near socket's memory; replicate
    (v0.2 USE_NUMA=1) and shard (kt-kernel) keep every read local."""
    def read(release, method):
        return kt_cpu(KtHost(kt_path(catalog, release, method, "int8-w8a8"), 2, 8 / 256), catalog, 614.4e9).read_bytes_per_s
    assert read("v0.2", None) == pytest.approx(614.4e9 * 0.575)
    assert read("v0.3-preview", "AMXINT8") == pytest.approx(614.4e9 / 2 * 0.6)
    assert read("kt-kernel", "AMXINT4") == pytest.approx(614.4e9 * 0.6)


def test_without_expert_deferral_the_cpu_time_adds_to_the_gpus():
    """v0.2 runs the experts after the GPU's part of each layer; kt-kernel's LLAMAFILE method reads
    them at the same rate but alongside it, so v0.2's decode step is the longer by the GPU's part."""
    old = estimate(Deployment(**DSV3, kt_release="v0.2", host_sockets=2), DECODE, use_profiles=False)
    new = estimate(Deployment(**DSV3, kt_release="kt-kernel", kt_method="LLAMAFILE", host_sockets=2), DECODE,
                   use_profiles=False)
    mp = plan_memory(Deployment(**DSV3))
    cpu_s = mp.offload.host_expert_bytes * 8 / 256 / (614.4e9 * 0.575)  # the GGUF file's experts
    assert new.tpot_s == pytest.approx(cpu_s, rel=0.01)
    assert old.tpot_s > new.tpot_s * 1.05


def test_kt_kernel_picks_the_method_its_launch_command_gives_the_weight_format(catalog):
    """engine_flags.yaml: GGUF files run on LLAMAFILE, INT8 on AMXINT8; a release without kt-kernel's
    launcher takes its own default."""
    def path(release, quantization):
        return kt_path(catalog, release, None, quantization).id
    assert path(None, "gguf-q4_k_m") == "kt-kernel-llamafile"
    assert path(None, "int8-w8a8") == "kt-kernel-amx"
    assert path(None, "bf16") == "kt-kernel-native"
    assert path("v0.3-preview", "gguf-q4_k_m") == "v0-3-preview-amxint8"


def test_a_copy_per_numa_node_holds_the_experts_once_per_socket():
    """v0.2 built with USE_NUMA=1 keeps a copy on each node (the tutorial: 382 GB DRAM on one socket,
    1 TB on two); kt-kernel's shards and a single socket hold one."""
    experts = plan_memory(Deployment(**DSV3)).offload.host_expert_bytes  # the GGUF file's
    assert fit(Deployment(**DSV3, kt_release="v0.2", host_sockets=2)).host_memory_bytes_used == pytest.approx(2 * experts)
    assert fit(Deployment(**DSV3, kt_release="v0.2")).host_memory_bytes_used == pytest.approx(experts)
    assert fit(Deployment(**DSV3, host_sockets=2)).host_memory_bytes_used == pytest.approx(experts)
    assert not fit(Deployment(**{**DSV3, "host_memory_gb": 600}, kt_release="v0.2", host_sockets=2)).fits


def test_an_undescribed_release_or_method_is_refused_naming_the_field():
    with pytest.raises(InvalidScenarioError) as e:
        estimate(Deployment(**DSV3, kt_release="v9"), DECODE, use_profiles=False)
    assert e.value.field == "kt_release" and "v0.2" in e.value.allowed
    with pytest.raises(InvalidScenarioError) as e:
        estimate(Deployment(**DSV3, kt_release="v0.2", kt_method="AMXINT8"), DECODE, use_profiles=False)
    assert e.value.field == "kt_method" and e.value.allowed == "LLAMAFILE"


def test_each_release_has_one_default_method_and_known_sources(catalog):
    releases = {p.release for p in catalog.kt_cpu_paths}
    for r in releases:
        assert sum(p.default_method for p in catalog.kt_cpu_paths if p.release == r) == 1
        assert kt_path(catalog, r, None, "int8-w8a8").release == r
    for p in catalog.kt_cpu_paths:
        assert p.expert_deferral_source in catalog.sources and p.numa_source in catalog.sources


def test_the_ktransformers_points_state_the_release_method_and_sockets_they_ran(catalog):
    points = [p for p in catalog.speed_points if p.engine == "ktransformers"]
    assert points
    for p in points:
        d, _ = point_scenario(p, catalog)
        assert (d.kt_release, d.kt_method, d.host_sockets) == (p.kt_release, p.kt_method, 2)
        assert p.kt_release in {"v0.2", "v0.3-preview"}


def test_the_launch_command_runs_the_method_the_plan_priced(catalog):
    from inferplan.deploy import launch_command
    from inferplan.errors import UnsupportedSettingError

    argv = launch_command(Deployment(**{**DSV3, "quantization": "fp8-block"}, kt_method="AMXINT4"), catalog).argv
    assert argv[argv.index("--kt-method") + 1] == "AMXINT4"
    argv = launch_command(Deployment(**DSV3), catalog).argv
    assert argv[argv.index("--kt-method") + 1] == kt_path(catalog, None, None, "gguf-q4_k_m").kt_methods[0] == "LLAMAFILE"
    with pytest.raises(UnsupportedSettingError) as e:
        launch_command(Deployment(**DSV3, kt_release="v0.2"), catalog)
    assert e.value.field == "kt_release"


# the V0.2 tutorial table (500-token prompt, 8 experts): decode tokens/s on one and on two sockets
V02_ROWS = [(1, 307.2, 382, 8.73), (2, 614.4, 1024, 12.208)]


def _implied_handover_s(catalog, sockets, bandwidth_gb_per_s, memory_gb, measured) -> float:
    """A V0.2 row's decode time less the planned step without the hand-over, over DeepSeek-V3's 58 MoE layers."""
    handover_s = catalog.kt_cpu_paths.records["v0-2-llamafile"].layer_handover_s.value
    d = Deployment(**{**DSV3, "host_memory_gb": memory_gb, "host_memory_bandwidth_gb_per_s": bandwidth_gb_per_s},
                   kt_release="v0.2", host_sockets=sockets)
    tpot_s = estimate(d, Workload(input_len=500, output_len=300, concurrency=1), use_profiles=False).tpot_s
    moe_layers = 58
    return (1 / measured - (tpot_s - moe_layers * handover_s)) / moe_layers


def test_the_v02_layer_handover_is_what_the_socket_table_leaves_per_moe_layer(catalog):
    """Golden: the stated per-layer time is the mean of what the two rows leave (0.180 and 0.218 ms against
    0.20), rounded to 0.01 ms; the remainder is about the same on one socket and on two, so it does not come
    from DRAM bandwidth. Fails when the hand-over is not priced (the implied time doubles), is priced per
    token instead of per layer, or the planned step changes without the time being derived again."""
    handover_s = catalog.kt_cpu_paths.records["v0-2-llamafile"].layer_handover_s.value
    implied = [_implied_handover_s(catalog, *row) for row in V02_ROWS]
    assert handover_s == pytest.approx(sum(implied) / len(implied), abs=0.005e-3)
    assert all(i == pytest.approx(handover_s, rel=0.15) for i in implied)


def test_only_a_path_that_states_a_handover_pays_one(catalog):
    """kt-kernel's Expert Deferral overlaps the hand-over with the GPU's work: its paths state none."""
    v02 = kt_cpu(KtHost(kt_path(catalog, "v0.2", None, "gguf-q4_k_m"), 2, 8 / 256), catalog, 614.4e9)
    assert v02.layer_handover_s == catalog.kt_cpu_paths.records["v0-2-llamafile"].layer_handover_s.value > 0
    for p in catalog.kt_cpu_paths:
        assert p.layer_handover_s is None or not p.expert_deferral
