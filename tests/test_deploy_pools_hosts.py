"""Separate pools whose instances are wider than one host: each instance written as its per-host commands (the
engine's ``multi_host`` record), its role's flags on every host, on hosts of its own, and the router pointed at each
instance's first host; under ``--format k8s`` a LeaderWorkerSet per pool."""

from __future__ import annotations

import re
import shlex

import pytest
import yaml

from inferplan.deploy.command import engine_flags
from inferplan.deploy.pools import pools_launch
from inferplan.deploy.pools_plan import PrefillLayout, pools_plan
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment

TRAY_GPUS = 4  # a GB200 NVL72 compute tray: one OS host
# DeepSeek-V3 wide expert parallelism on one GB200 NVL72: a 16-GPU prefill and a 32-GPU decode instance
DECODE = dict(model="deepseek-v3", system="gb200-nvl72", tensor_parallel_size=1, data_parallel_size=32,
              enable_expert_parallel=True)
LAYOUT = PrefillLayout(prefill_instances=1, prefill_tensor_parallel_size=1, prefill_data_parallel_size=16,
                       prefill_enable_expert_parallel=True, replicas=1)


def _options(argv: tuple[str, ...]) -> list[str]:
    return [a for a in argv if a.startswith("-") and not a.lstrip("-").replace(".", "").isdigit()]


def _value(argv: tuple[str, ...], flag: str) -> str:
    assert argv.count(flag) == 1, (flag, argv)
    return argv[argv.index(flag) + 1]


def _hosts(launch):
    """Each host's (role, argv) in order, from the pools' host groups."""
    return [argv for _, argv in sorted((h, (w.role, w.host_commands[g.part].argv)) for g in launch.hosts
                                       for w in g.workers for h in g.host_indices if g.part is not None)]


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_each_pool_instance_runs_one_command_per_tray_in_the_engines_flags_with_its_role(catalog, engine):
    launch = pools_plan(Deployment(engine=engine, **DECODE), LAYOUT, catalog).launch
    flags = engine_flags(catalog, engine)
    hosts = _hosts(launch)
    assert [role for role, _ in hosts] == ["prefill"] * 4 + ["decode"] * 8  # 16 and 32 GPUs on 4-GPU trays
    assert [(g.first_host, g.last_host) for g in launch.hosts] == [(i, i) for i in range(12)]
    role_flag = next(iter(flags.disaggregation.roles["prefill"])) if not flags.disaggregation.json_flag \
        else flags.disaggregation.json_flag
    for role, argv in hosts:
        assert set(_options(argv[len(flags.launcher):])) <= set(flags.accepted), argv
        assert role_flag in argv  # the role on every host of the instance
        assert ("--port" in argv) == (argv is hosts[0][1] or argv is hosts[4][1])  # only each instance's head serves
    assert len(launch.workers) == 2


def test_sglang_pool_hosts_join_their_own_instances_head(catalog):
    launch = pools_plan(Deployment(engine="sglang", **DECODE), LAYOUT, catalog).launch
    hosts = _hosts(launch)
    for i, (role, argv) in enumerate(hosts):
        rank, size = (i, 4) if role == "prefill" else (i - 4, 8)
        assert _value(argv, "--disaggregation-mode") == role
        assert (_value(argv, "--nnodes"), _value(argv, "--node-rank")) == (str(size), str(rank))
        assert _value(argv, "--dist-init-addr") == "$HEAD_IP:20000"  # set on each host to its instance's first
        assert _value(argv, "--tp-size") == _value(argv, "--ep-size") == str(4 * size)  # DP attention over the trays
    script = launch.script
    assert "set HEAD_IP to the address of this instance's first host" in script and '"$HEAD_IP:20000"' in script
    assert "# on the decode instance's first host (its head): HOST4:" in script.splitlines()
    assert " ".join(launch.router).count("http://HOST0:") == 1 and "http://HOST4:" in " ".join(launch.router)
    assert "CUDA_VISIBLE_DEVICES" not in script  # each instance takes its trays whole


def test_vllm_pool_hosts_start_their_share_of_the_data_parallel_ranks(catalog):
    launch = pools_plan(Deployment(engine="vllm", **DECODE), LAYOUT, catalog).launch
    for i, (role, argv) in enumerate(_hosts(launch)):
        rank = i if role == "prefill" else i - 4
        assert _value(argv, "--data-parallel-size-local") == str(TRAY_GPUS)
        assert _value(argv, "--data-parallel-address") == "$HEAD_IP"
        assert ("--headless" in argv) == (rank > 0)
        if rank:
            assert _value(argv, "--data-parallel-start-rank") == str(rank * TRAY_GPUS)
        assert f'"kv_role":"kv_{"producer" if role == "prefill" else "consumer"}"' in _value(argv, "--kv-transfer-config")
    assert launch.script.count('VLLM_NIXL_SIDE_CHANNEL_HOST="$HOST_IP"') == 12  # every host is told its own address


def test_an_instance_wider_than_a_host_starts_on_hosts_of_its_own(catalog):
    """Two one-host TP8 prefill instances on HGX H100 hosts (the same lines, one group), then a TP16 decode instance on hosts 2 and 3."""
    d = Deployment(model="qwen3-32b", gpu="h100-sxm", quantization="fp8-block", engine="sglang", max_model_len=8192)
    launch = pools_launch(catalog, d.model_copy(update={"tensor_parallel_size": 8}),
                          d.model_copy(update={"tensor_parallel_size": 16}), prefill_instances=2, host_gpus=8)
    assert [(g.first_host, g.last_host, g.part) for g in launch.hosts] == [(0, 1, None), (2, 2, 0), (3, 3, 1)]
    assert "http://HOST2:" in " ".join(launch.router)


def test_the_k8s_pools_are_leader_worker_sets_of_one_pod_per_tray(catalog):
    plan = pools_plan(Deployment(engine="sglang", **DECODE), LAYOUT, catalog, output_format="k8s")
    docs = list(yaml.safe_load_all(plan.manifest))
    groups = {d["metadata"]["name"]: d for d in docs if d["kind"] == "LeaderWorkerSet"}
    assert sorted(g["spec"]["leaderWorkerTemplate"]["size"] for g in groups.values()) == [4, 8]
    gpus = 0
    for group in groups.values():
        template = group["spec"]["leaderWorkerTemplate"]
        for pod in ("leaderTemplate", "workerTemplate"):
            container = template[pod]["spec"]["containers"][0]
            assert container["resources"]["limits"]["nvidia.com/gpu"] == TRAY_GPUS
            assert "--disaggregation-mode" in container["args"]
        gpus += group["spec"]["replicas"] * template["size"] * TRAY_GPUS
    assert gpus == plan.gpus == 48
    services = [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] in groups]
    assert all(s["spec"]["selector"]["role"] == "leader" for s in services)  # the router reaches each leader
    router = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-router"))
    args = " ".join(router["spec"]["template"]["spec"]["containers"][0]["args"])
    assert all(re.search(rf"http://{name}:", args) for name in groups)


def test_k8s_refuses_several_sglang_prefill_instances_over_hosts_the_router_names_pod_by_pod(catalog):
    layout = LAYOUT.model_copy(update={"prefill_instances": 2})
    with pytest.raises(UnsupportedSettingError) as err:
        pools_plan(Deployment(engine="sglang", **DECODE), layout, catalog, output_format="k8s")
    assert err.value.field == "format"


def test_a_pool_instance_no_multi_host_launch_starts_names_no_gpu_its_host_lacks(catalog):
    """TensorRT-LLM writes no multi-host launch: its TP8 workers on GB200 trays keep one-host commands, with the note,
    pinned to no GPU a 4-GPU tray lacks and on hosts of their own."""
    d = Deployment(model="qwen3-8b", gpu="gb200", gpus=8, tensor_parallel_size=8, engine="trtllm")
    launch = pools_launch(catalog, d, d)
    assert all("CUDA_VISIBLE_DEVICES" not in w.env for w in launch.workers)
    assert [g.first_host for g in launch.hosts] == [0, 2]
    assert any("no multi-host launch for trtllm" in n for n in launch.notes)


def _pinned(launch) -> list[tuple[int, str | None]]:
    """Each group's first host and its first worker's visible devices (None: not pinned)."""
    return [(g.first_host, g.workers[0].env.get("CUDA_VISIBLE_DEVICES")) for g in launch.hosts]


def test_one_host_workers_beside_an_instance_over_hosts_keep_to_the_trays_gpus_with_no_host_size_stated(catalog):
    """No host size stated (a bare GB200, not the rack): two TP4 prefill workers each take a 4-GPU tray, not GPUs 4-7
    of the first, and the TP8 decode instance the next two trays."""
    d = Deployment(model="qwen3-8b", gpu="gb200", engine="sglang", tensor_parallel_size=8)
    layout = PrefillLayout(prefill_instances=2, prefill_tensor_parallel_size=4)
    launch = pools_plan(d, layout, catalog).launch
    assert _pinned(launch) == [(0, "0,1,2,3"), (2, None), (3, None)]
    assert launch.hosts[0].last_host == 1
    assert "http://HOST2:" in " ".join(launch.router)


def test_hosts_smaller_than_the_catalogues_split_an_instance_over_as_many_hosts_as_it_needs(catalog):
    """4-GPU hosts of H100s (the catalogue's host has 8): a TP16 decode instance runs over four of them, --nnodes 4."""
    d = Deployment(model="qwen3-32b", gpu="h100-sxm", engine="sglang", tensor_parallel_size=16, max_model_len=8192)
    layout = PrefillLayout(prefill_instances=1, prefill_tensor_parallel_size=4, host_gpus=4)
    launch = pools_plan(d, layout, catalog).launch
    hosts = _hosts(launch)
    assert [(g.first_host, g.part) for g in launch.hosts] == [(0, None), (1, 0), (2, 1), (3, 2), (4, 3)]
    assert {_value(argv, "--nnodes") for _, argv in hosts} == {"4"}
    assert [_value(argv, "--node-rank") for _, argv in hosts] == ["0", "1", "2", "3"]


def test_an_instance_over_trays_that_would_cross_a_racks_last_tray_starts_on_the_next_rack(catalog):
    """Three 16-GPU prefill instances take trays 0-11; the 32-GPU decode instance (8 trays) would cross the NVL72's
    18th tray, so it starts on the next rack's first, tray 18."""
    launch = pools_plan(Deployment(engine="sglang", **DECODE), LAYOUT.model_copy(update={"prefill_instances": 3}),
                        catalog).launch
    decode = [g.first_host for g in launch.hosts if g.workers[0].role == "decode"]
    assert decode == list(range(18, 26))
    assert "http://HOST18:" in " ".join(launch.router)


def test_a_pool_instances_note_names_its_first_host_not_host_0(catalog):
    launch = pools_plan(Deployment(engine="sglang", **DECODE), LAYOUT, catalog).launch
    spans = [n for n in launch.notes if "serves the API; every host runs its own lines" in n]
    assert spans and all("the instance's first host serves the API" in n for n in spans)
    assert not any("host 0 (the head)" in n for n in spans)


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_a_pool_scripts_engine_notes_name_the_instances_head_not_host_0(catalog, engine):
    """In a pools script HOST0 is the router's host; an instance's hosts join that instance's own first host."""
    launch = pools_plan(Deployment(engine=engine, **DECODE), LAYOUT, catalog).launch
    assert not any("host 0" in n.lower().replace("host0", "") for n in launch.notes), launch.notes
    assert any("the instance's head" in n or "the instance's first host" in n for n in launch.notes)


def test_a_pool_of_64_instances_over_4_trays_is_written_once_per_tray_of_an_instance(catalog):
    """64 decode instances of 16 GPUs (4 trays each) beside 16 prefill instances: every instance of a pool runs the
    same lines, so the script has one group per tray of an instance (8), not one per host (320), and each group's
    comment names the hosts it runs on, together every host once."""
    d = Deployment(engine="sglang", **{**DECODE, "data_parallel_size": 16})
    launch = pools_plan(d, LAYOUT.model_copy(update={"prefill_instances": 16, "replicas": 64}), catalog).launch
    assert [(g.workers[0].role, g.part, len(g.heads)) for g in launch.hosts] == \
        [("prefill", i, 16) for i in range(4)] + [("decode", i, 64) for i in range(4)]
    hosts = [h for g in launch.hosts for h in g.host_indices]
    assert len(hosts) == len(set(hosts)) == 80 * 4
    heads = [int(h) for h in re.findall(r"http://HOST(\d+):", " ".join(launch.router))]
    assert sorted(heads) == sorted(h for g in launch.hosts if g.part == 0 for h in g.host_indices)
    assert all(h // 18 == (h + 3) // 18 for h in heads)  # each instance inside one rack's 18 trays
    comments = [line for line in launch.script.splitlines() if line.startswith("# on each")]
    assert len(comments) == 8 and "(64 hosts):" in comments[-1]
    assert len(launch.script.splitlines()) < 40


def test_a_groups_hosts_are_written_as_evenly_spaced_runs_and_their_period():
    from inferplan.deploy.pools import host_list
    assert host_list((3,)) == "HOST3"
    assert host_list((0, 1, 2, 3)) == "HOST0–HOST3 (4 hosts)"
    assert host_list((0, 4, 8, 12, 18, 22, 26, 30, 36)) == "HOST0, HOST4 … HOST12, and the same every 18 hosts to HOST36 (9 hosts)"
    assert host_list((0, 4, 9)) == "HOST0, HOST4, HOST9 (3 hosts)"


def test_vllm_k8s_pools_over_trays_are_leader_worker_sets_whose_workers_take_their_first_rank_from_their_index(catalog):
    """vLLM's data-parallel ranks over hosts as LeaderWorkerSets: the leader serves, each worker pod runs --headless
    from rank LWS_WORKER_INDEX × 4 (a tray's ranks), worked out by its shell."""
    plan = pools_plan(Deployment(engine="vllm", **DECODE), LAYOUT, catalog, output_format="k8s")
    docs = list(yaml.safe_load_all(plan.manifest))
    groups = {d["metadata"]["name"]: d for d in docs if d["kind"] == "LeaderWorkerSet"}
    assert sorted(g["spec"]["leaderWorkerTemplate"]["size"] for g in groups.values()) == [4, 8]
    flags = engine_flags(catalog, "vllm")
    gpus = 0
    for group in groups.values():
        template = group["spec"]["leaderWorkerTemplate"]
        leader = template["leaderTemplate"]["spec"]["containers"][0]
        worker = template["workerTemplate"]["spec"]["containers"][0]
        assert leader["resources"]["limits"]["nvidia.com/gpu"] == worker["resources"]["limits"]["nvidia.com/gpu"] == 4
        assert "--headless" not in leader["args"] and leader["args"][leader["args"].index("--data-parallel-address") + 1] \
            == "$(LWS_LEADER_ADDRESS)"
        assert worker["command"] == ["/bin/sh", "-c"] and len(worker["args"]) == 1
        argv = shlex.split(worker["args"][0].replace("$((LWS_WORKER_INDEX * 4))", "8"))  # worker 2 of its group
        assert argv[:3] == ["exec", "vllm", "serve"] and _value(tuple(argv), "--data-parallel-start-rank") == "8"
        assert "--headless" in argv and set(_options(tuple(argv[3:]))) <= set(flags.accepted)
        gpus += group["spec"]["replicas"] * template["size"] * TRAY_GPUS
    assert gpus == plan.gpus == 48
