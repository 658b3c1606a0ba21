"""Launch commands and Kubernetes manifests (inferplan.deploy) against the engine flag data."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import tempfile
import typing

import pytest
import yaml
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError

from inferplan.catalog.flag_parts_schema import Setting
from inferplan.catalog.flags_schema import EngineFlags
from inferplan.deploy import Speculative, kubernetes_manifest, launch_command
from inferplan.deploy.command import engine_flags
from inferplan.errors import InvalidScenarioError, UnsupportedSettingError
from inferplan.inputs.deployment import Deployment

ENGINES = ("vllm", "sglang", "trtllm", "llamacpp", "mlx", "ktransformers")

# one representative deployment per engine, with every setting the engine takes from its command line
REPRESENTATIVE = {
    "vllm": dict(gpu="H100", tensor_parallel_size=4, pipeline_parallel_size=2, kv_cache_dtype="fp8", quantization="fp8",
                 max_model_len=32768, gpu_memory_utilization=0.88, max_num_seqs=128, max_num_batched_tokens=8192),
    "sglang": dict(gpu="H100", tensor_parallel_size=4, pipeline_parallel_size=2, kv_cache_dtype="fp8", quantization="fp8",
                   max_model_len=32768, gpu_memory_utilization=0.85, max_num_seqs=128, max_num_batched_tokens=8192),
    "trtllm": dict(gpu="H100", tensor_parallel_size=4, pipeline_parallel_size=2, max_model_len=32768,  # a step takes
                   gpu_memory_utilization=0.9, max_num_seqs=128, max_num_batched_tokens=32768),  # the longest prompt
    "llamacpp": dict(gpu="RTX 4090", tensor_parallel_size=2, kv_cache_dtype="q8_0", quantization="gguf-q4_k_m",
                     max_model_len=16384, max_num_seqs=4, max_num_batched_tokens=2048, ubatch_size=512),
    "mlx": dict(gpu="M4 Max", max_num_seqs=8, max_num_batched_tokens=2048),
    "ktransformers": dict(gpu="RTX 4090", tensor_parallel_size=2, kv_cache_dtype="fp8", max_model_len=16384,
                          gpu_memory_utilization=0.85, max_num_seqs=4, max_num_batched_tokens=4096, kt_num_gpu_experts=8),
}
SPECULATIVE = {
    "vllm": Speculative(method="eagle3", tokens=3, draft_model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"),
    "sglang": Speculative(method="eagle3", tokens=3, draft_model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"),
    "llamacpp": Speculative(method="draft_model", tokens=5, draft_model="draft.gguf"),
    "mlx": Speculative(method="draft_model", tokens=2, draft_model="mlx-community/Llama-3.2-1B-Instruct-4bit"),
}


def _deployment(engine: str, **extra) -> Deployment:
    return Deployment(model="llama-3.1-8b", engine=engine, **{**REPRESENTATIVE[engine], **extra})


def _flags(argv: tuple[str, ...]) -> list[str]:
    """The option names of an argv (an option is a token that starts with '-' and is not a number)."""
    return [a for a in argv if a.startswith("-") and not a.lstrip("-").replace(".", "").isdigit()]


def _value(argv: tuple[str, ...], flag: str) -> str:
    assert argv.count(flag) == 1, f"{flag} appears {argv.count(flag)} times in {argv}"
    return argv[argv.index(flag) + 1]


@pytest.mark.parametrize("engine", ENGINES)
def test_every_emitted_flag_is_one_the_engine_accepts(catalog, engine):
    accepted = set(engine_flags(catalog, engine).accepted)
    command = launch_command(_deployment(engine), catalog, speculative=SPECULATIVE.get(engine))
    launcher = engine_flags(catalog, engine).launcher
    assert command.argv[: len(launcher)] == launcher
    emitted = _flags(command.argv[len(launcher):])
    assert emitted, "a representative deployment emits flags"
    assert [f for f in emitted if f not in accepted] == []


@pytest.mark.parametrize("engine", ENGINES)
def test_the_shell_text_is_the_argv(catalog, engine):
    command = launch_command(_deployment(engine), catalog, speculative=SPECULATIVE.get(engine))
    assert tuple(shlex.split(command.text)) == command.argv


@pytest.mark.parametrize("engine", ENGINES)
def test_every_flag_in_the_data_is_in_the_engines_accepted_list(catalog, engine):
    flags = engine_flags(catalog, engine)
    named = flags.named_flags()
    assert named and set(named) <= flags.accepts()
    for later in flags.accepted_later:  # a later release's flags are ones the record's own release lacks
        assert not set(later.flags) & set(flags.accepted)


def test_a_flag_outside_the_accepted_list_is_refused_on_load(catalog):
    raw = engine_flags(catalog, "vllm").model_dump(mode="json")
    raw["settings"]["max_num_seqs"]["flags"] = ["--max-num-sequences"]
    with pytest.raises(ValidationError, match="--max-num-sequences"):
        EngineFlags.model_validate(raw)


def test_every_engine_has_flags_and_every_setting_is_a_deployment_field(catalog):
    assert {f.engine for f in catalog.engine_flags} == set(catalog.engines.records) == set(ENGINES)
    # from the weight format; a path to fill in; a fixed engine setting the plan assumes; derived from the
    # layout (redundant expert copies, memory/expert_split.py)
    launch_only = {"host", "port", "kt_method", "kt_weight_path", "kt_max_deferred_experts_per_token", "redundant_experts"}
    assert set(typing.get_args(Setting)) - launch_only <= set(Deployment.model_fields)


def test_vllm_values(catalog):
    argv = launch_command(_deployment("vllm"), catalog).argv
    assert argv[:3] == ("vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct")
    assert _value(argv, "--tensor-parallel-size") == "4"
    assert _value(argv, "--pipeline-parallel-size") == "2"
    assert _value(argv, "--quantization") == "fp8"  # a 16-bit checkpoint quantized at load
    assert _value(argv, "--kv-cache-dtype") == "fp8"
    assert _value(argv, "--max-model-len") == "32768"
    assert _value(argv, "--gpu-memory-utilization") == "0.88"
    assert _value(argv, "--max-num-seqs") == "128"
    assert _value(argv, "--max-num-batched-tokens") == "8192"
    assert _value(argv, "--port") == "8000"


def test_only_a_16_bit_build_is_quantized_at_load(catalog):
    command = launch_command(Deployment(model="llama-3.1-8b", gpu="H100", quantization="fp8"), catalog)
    assert command.checkpoint == "meta-llama/Llama-3.1-8B-Instruct" and "(bf16) quantized to fp8 by vllm" in command.notes[0]
    block_fp8 = launch_command(Deployment(model="deepseek-v3", gpu="H200", quantization="fp8"), catalog)
    assert "--quantization" not in block_fp8.argv and block_fp8.checkpoint.startswith("<")


def test_vllm_reads_a_prequantized_checkpoint_and_needs_no_quantization_flag(catalog):
    d = Deployment(model="llama-3.1-8b", gpu="H100", quantization="nvfp4")
    command = launch_command(d, catalog)
    assert "--quantization" not in command.argv
    assert command.checkpoint.startswith("<") and command.notes  # no NVFP4 build catalogued: a named placeholder


def test_sglang_values(catalog):
    argv = launch_command(_deployment("sglang", enable_expert_parallel=True, data_parallel_size=2), catalog).argv
    assert argv[:5] == ("python3", "-m", "sglang.launch_server", "--model-path", "meta-llama/Llama-3.1-8B-Instruct")
    assert _value(argv, "--tp-size") == "8"  # DP attention: the data-parallel ranks are tensor-parallel ranks too
    assert _value(argv, "--pp-size") == "2"
    assert _value(argv, "--dp-size") == "2"
    assert "--enable-dp-attention" in argv
    assert _value(argv, "--ep-size") == "8"  # experts over all TP x DP ranks
    assert _value(argv, "--kv-cache-dtype") == "fp8_e4m3"
    assert _value(argv, "--context-length") == "32768"
    assert _value(argv, "--mem-fraction-static") == "0.85"
    assert _value(argv, "--max-running-requests") == "256"  # 128 per rank: the total over 2 DP-attention ranks
    assert _value(argv, "--chunked-prefill-size") == "8192"


def test_trtllm_values(catalog):
    argv = launch_command(_deployment("trtllm"), catalog).argv
    assert argv[:2] == ("trtllm-serve", "meta-llama/Llama-3.1-8B-Instruct")
    assert _value(argv, "--tp_size") == "4"
    assert _value(argv, "--pp_size") == "2"
    assert _value(argv, "--max_seq_len") == "32768"
    assert _value(argv, "--kv_cache_free_gpu_memory_fraction") == "0.9"
    assert _value(argv, "--max_batch_size") == "128"
    assert _value(argv, "--max_num_tokens") == "32768"


def test_llamacpp_values(catalog):
    argv = launch_command(_deployment("llamacpp"), catalog).argv
    assert _value(argv, "--hf-repo") == "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M"
    assert _value(argv, "--cache-type-k") == _value(argv, "--cache-type-v") == "q8_0"
    assert _value(argv, "--ctx-size") == "65536"  # shared by the 4 slots: 16,384 tokens each
    assert _value(argv, "--parallel") == "4"
    assert _value(argv, "--batch-size") == "2048"
    assert _value(argv, "--ubatch-size") == "512"
    assert _value(argv, "--split-mode") == "row"


def test_llamacpp_without_a_catalogued_gguf_names_a_placeholder_file(catalog):
    command = launch_command(Deployment(model="llama-3.1-8b", gpu="RTX 4090", engine="llamacpp"), catalog)
    assert command.argv[1:3] == ("-m", "<llama-3.1-8b-BF16.gguf>")
    assert "<llama-3.1-8b-BF16.gguf>" in command.notes[0]


def test_llamacpp_takes_an_unlisted_repo_as_gguf_files_of_the_planned_type(catalog):
    command = launch_command(Deployment(model="acme/Unlisted-7B-GGUF", gpu="RTX 4090", engine="llamacpp",
                                        quantization="gguf-q8_0"), catalog)
    assert _value(command.argv, "--hf-repo") == "acme/Unlisted-7B-GGUF:Q8_0"
    local = launch_command(Deployment(model="acme/unlisted.gguf", gpu="RTX 4090", engine="llamacpp"), catalog)
    assert _value(local.argv, "-m") == "acme/unlisted.gguf"
    with pytest.raises(UnsupportedSettingError) as err:
        launch_command(Deployment(model="llama-3.1-8b", gpu="RTX 4090", engine="llamacpp", quantization="nvfp4"), catalog)
    assert err.value.field == "quantization"


def test_a_model_outside_the_catalogue_is_served_as_named(catalog):
    command = launch_command(Deployment(model="acme/Unlisted-7B", gpu="H100"), catalog)
    assert command.argv[2] == "acme/Unlisted-7B" and "not in the catalogue" in command.notes[0]


def test_speculative_settings(catalog):
    vllm = launch_command(_deployment("vllm"), catalog, speculative=SPECULATIVE["vllm"]).argv
    assert json.loads(_value(vllm, "--speculative-config")) == {
        "method": "eagle3", "num_speculative_tokens": 3, "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}
    ngram = launch_command(_deployment("vllm"), catalog, speculative=Speculative(tokens=4)).argv
    assert json.loads(_value(ngram, "--speculative-config")) == {"method": "ngram", "num_speculative_tokens": 4}
    sglang = launch_command(_deployment("sglang"), catalog, speculative=SPECULATIVE["sglang"]).argv
    assert _value(sglang, "--speculative-algorithm") == "EAGLE3"
    assert _value(sglang, "--speculative-num-steps") == "3"
    assert _value(sglang, "--speculative-eagle-topk") == "1"
    assert _value(sglang, "--speculative-num-draft-tokens") == "4"
    sglang_ngram = launch_command(_deployment("sglang"), catalog, speculative=Speculative(tokens=8)).argv
    assert _value(sglang_ngram, "--speculative-algorithm") == "NGRAM"
    assert _value(sglang_ngram, "--speculative-num-draft-tokens") == "8"
    assert "--speculative-num-steps" not in sglang_ngram and "--speculative-eagle-topk" not in sglang_ngram
    llama = launch_command(_deployment("llamacpp"), catalog, speculative=SPECULATIVE["llamacpp"]).argv
    assert (_value(llama, "--spec-type"), _value(llama, "--spec-draft-n-max"), _value(llama, "--spec-draft-model")) == (
        "draft-simple", "5", "draft.gguf")


def test_disaggregation_roles(catalog):
    vllm = launch_command(_deployment("vllm"), catalog, role="prefill").argv
    assert json.loads(_value(vllm, "--kv-transfer-config")) == {"kv_connector": "NixlConnector", "kv_role": "kv_producer"}
    decode = launch_command(_deployment("vllm"), catalog, role="decode").argv
    assert json.loads(_value(decode, "--kv-transfer-config"))["kv_role"] == "kv_consumer"
    for role in ("prefill", "decode"):
        sglang = launch_command(_deployment("sglang"), catalog, role=role).argv
        assert _value(sglang, "--disaggregation-mode") == role
    trt = launch_command(_deployment("trtllm"), catalog, role="decode").argv
    assert _value(trt, "--server_role") == "generation"
    router = launch_command(_deployment("sglang"), catalog, role="decode").notes
    assert any("sglang_router.launch_router --pd-disaggregation" in note for note in router)
    assert "--disaggregation-mode" not in launch_command(_deployment("sglang"), catalog).argv


@pytest.mark.parametrize("engine, extra, kwargs, field", [
    ("llamacpp", {"enable_expert_parallel": True}, {}, "enable_expert_parallel"),
    ("llamacpp", {"gpu_memory_utilization": 0.9}, {}, "gpu_memory_utilization"),
    ("llamacpp", {}, {"role": "prefill"}, "role"),
    ("llamacpp", {"pipeline_parallel_size": 2}, {}, "pipeline_parallel_size"),
    ("trtllm", {"data_parallel_size": 2, "tensor_parallel_size": 2}, {}, "data_parallel_size"),
    ("trtllm", {"kv_cache_dtype": "bf16"}, {}, "kv_cache_dtype"),
    ("trtllm", {}, {"speculative": Speculative(method="ngram", tokens=3)}, "speculative.method"),
    ("mlx", {"tensor_parallel_size": 2}, {}, "tensor_parallel_size"),
    ("mlx", {"gpu_memory_utilization": 0.9}, {}, "gpu_memory_utilization"),
    ("sglang", {"kv_cache_dtype": "fp16"}, {}, "kv_cache_dtype"),
    ("vllm", {}, {"speculative": Speculative(method="draft_model", tokens=3)}, "speculative.draft_model"),
])
def test_a_setting_the_engine_lacks_is_a_named_error(catalog, engine, extra, kwargs, field):
    with pytest.raises(UnsupportedSettingError) as err:
        launch_command(_deployment(engine, **extra), catalog, **kwargs)
    assert err.value.field == field
    assert engine in str(err.value) or catalog.engine(engine).name in str(err.value)


def test_engine_takes_answers_what_a_search_may_vary(catalog):
    from inferplan.deploy import engine_takes

    assert engine_takes(catalog, "vllm", "enable_expert_parallel") and engine_takes(catalog, "sglang", "disaggregation")
    assert not engine_takes(catalog, "llamacpp", "enable_expert_parallel")
    assert not engine_takes(catalog, "mlx", "disaggregation") and not engine_takes(catalog, "mlx", "data_parallel_size")
    for setting in ("speculative", "data_parallel_size", "kv_cache_dtype"):  # in TensorRT-LLM's options file
        assert engine_takes(catalog, "trtllm", setting)
    for engine in ENGINES:  # what it says it takes, launch_command emits without an error
        if engine_takes(catalog, engine, "gpu_memory_utilization"):
            launch_command(_deployment(engine, gpu_memory_utilization=0.8), catalog)


def test_trtllm_takes_data_parallel_kv_dtype_and_mtp_from_its_options_file(catalog):
    d = Deployment(model="deepseek-r1", system="hgx-b200", engine="trtllm", quantization="fp8-block", max_model_len=8192,
                   kv_cache_dtype="fp8", tensor_parallel_size=1, data_parallel_size=8, enable_expert_parallel=True)
    cmd = launch_command(d, catalog, speculative=Speculative(method="mtp", tokens=3))  # prompts within max_num_tokens
    assert (_value(cmd.argv, "--tp_size"), _value(cmd.argv, "--ep_size")) == ("8", "8")  # attention DP across 8 ranks
    [options] = cmd.files
    assert _value(cmd.argv, "--extra_llm_api_options") == options.path == "extra_llm_api_options.yaml"
    assert yaml.safe_load(options.text) == {"enable_attention_dp": True, "kv_cache_config": {"dtype": "fp8"},
                                            "speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": 3}}
    flags = engine_flags(catalog, "trtllm").options_file
    assert set(yaml.safe_load(options.text)) <= set(flags.accepted_keys)
    written = subprocess.run(["sh", "-c", cmd.script.replace(cmd.text, "cat extra_llm_api_options.yaml")],
                             capture_output=True, text=True, cwd=tempfile.mkdtemp())
    assert written.returncode == 0 and written.stdout == options.text  # the script writes the file the command reads
    plain = launch_command(Deployment(model="llama-3.1-8b", gpu="h100", engine="trtllm", max_model_len=8192), catalog)
    assert plain.files == () and plain.script == plain.text and "--extra_llm_api_options" not in plain.argv
    docs = list(yaml.safe_load_all(kubernetes_manifest(d, catalog, speculative=Speculative(method="mtp", tokens=3))))
    assert [doc["kind"] for doc in docs] == ["ConfigMap", "Deployment", "Service"]
    pod = docs[1]["spec"]["template"]["spec"]
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "options")
    args = pod["containers"][0]["args"]
    assert args[args.index("--extra_llm_api_options") + 1] == f"{mount['mountPath']}/extra_llm_api_options.yaml"
    assert yaml.safe_load(docs[0]["data"]["extra_llm_api_options.yaml"]) == yaml.safe_load(options.text)
    assert next(v for v in pod["volumes"] if v["name"] == "options")["configMap"]["name"] == docs[0]["metadata"]["name"]


def _manifest(catalog, d: Deployment, **kwargs) -> tuple[dict, dict]:
    docs = list(yaml.safe_load_all(kubernetes_manifest(d, catalog, **kwargs)))
    assert [doc["kind"] for doc in docs] == ["Deployment", "Service"]
    assert [doc["apiVersion"] for doc in docs] == ["apps/v1", "v1"]
    return docs[0], docs[1]


@pytest.mark.parametrize("engine", ("vllm", "sglang", "trtllm", "llamacpp"))
def test_the_manifest_requests_the_instances_gpus_and_runs_the_same_command(catalog, engine):
    d = _deployment(engine, gpus=16) if engine != "llamacpp" else _deployment(engine, gpus=4)
    deployment, service = _manifest(catalog, d)
    per_pod = d.tensor_parallel_size * d.pipeline_parallel_size
    assert deployment["spec"]["replicas"] == d.gpus // per_pod
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["resources"]["requests"]["nvidia.com/gpu"] == per_pod
    assert container["resources"]["limits"]["nvidia.com/gpu"] == per_pod
    command = launch_command(d, catalog)
    flags = engine_flags(catalog, engine)
    assert container["command"] == list(flags.image_launcher or flags.launcher)
    assert container["args"] == list(command.argv[len(flags.launcher):])
    pinned = flags.release_images.get("nvidia")  # the planned release's image, where the record names one per release
    assert container["image"] == (pinned.replace("{release}", command.engine_version) if pinned and command.engine_version
                                  else flags.images["nvidia"])
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory" and shm["emptyDir"]["sizeLimit"].endswith("Gi")
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    assert service["spec"]["ports"][0]["port"] == container["ports"][0]["containerPort"] == command.port
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


def test_llamacpp_runs_the_server_binary_where_its_image_keeps_it(catalog):
    deployment, _ = _manifest(catalog, _deployment("llamacpp"))
    assert deployment["spec"]["template"]["spec"]["containers"][0]["command"] == ["/app/llama-server"]


def test_amd_gpus_are_requested_as_amd_resources(catalog):
    deployment, _ = _manifest(catalog, Deployment(model="llama-3.1-8b", gpu="MI300X", tensor_parallel_size=2))
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"amd.com/gpu": 2}
    assert container["image"].startswith("rocm/vllm")


def test_a_manifest_for_hardware_without_an_image_is_a_named_error(catalog):
    with pytest.raises(UnsupportedSettingError) as err:
        kubernetes_manifest(_deployment("mlx"), catalog)
    assert err.value.field == "format"


def test_gpus_that_are_not_whole_instances_are_refused(catalog):
    with pytest.raises(InvalidScenarioError) as err:
        kubernetes_manifest(Deployment(model="llama-3.1-8b", system="hgx-h200", tensor_parallel_size=16), catalog)
    assert err.value.field == "gpus"
    deployment, _ = _manifest(catalog, Deployment(model="llama-3.1-8b", system="hgx-h200", tensor_parallel_size=2))
    assert deployment["spec"]["replicas"] == 4  # the system's 8 GPUs as four 2-GPU instances


def test_a_disaggregated_role_gets_its_own_name(catalog):
    prefill, _ = _manifest(catalog, _deployment("sglang"), role="prefill")
    decode, _ = _manifest(catalog, _deployment("sglang"), role="decode")
    assert prefill["metadata"]["name"].endswith("-prefill") and decode["metadata"]["name"].endswith("-decode")


def _cluster_reachable() -> bool:
    """kubectl's client-side dry run still asks an API server for the kinds' mappings."""
    if shutil.which("kubectl") is None:
        return False
    probe = subprocess.run(["kubectl", "version", "--request-timeout=2s"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.slow
def test_kubectl_accepts_the_manifest(catalog, tmp_path):
    if not _cluster_reachable():
        pytest.skip("kubectl and a reachable API server are needed for kubectl apply --dry-run=client")
    path = tmp_path / "manifest.yaml"
    path.write_text(kubernetes_manifest(_deployment("vllm", gpus=16), catalog))
    result = subprocess.run(["kubectl", "apply", "--dry-run=client", "--validate=false", "-f", str(path)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


@settings(max_examples=40, deadline=None)
@given(engine=st.sampled_from(("vllm", "sglang", "trtllm")), tp=st.sampled_from([1, 2, 4, 8]),
       pp=st.sampled_from([1, 2]), seqs=st.integers(1, 4096), max_len=st.integers(256, 131072),
       util=st.floats(0.5, 0.99))
def test_any_plan_an_engine_takes_emits_only_accepted_flags(catalog, engine, tp, pp, seqs, max_len, util):
    d = Deployment(model="qwen3-30b-a3b", gpu="H200", engine=engine, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                   max_num_seqs=seqs, max_model_len=max_len, gpu_memory_utilization=util, enable_expert_parallel=tp > 1)
    flags = engine_flags(catalog, engine)
    command = launch_command(d, catalog)
    engine_argvs = [command.argv, *(h.argv for h in command.host_commands if h.argv[:len(flags.launcher)] == flags.launcher)]
    for argv in engine_argvs:  # a flag only a later release takes (--nnodes) names that release
        assert set(_flags(argv[len(flags.launcher):])) <= set(flags.accepts())
    assert tuple(shlex.split(command.text)) == command.argv


def test_deploy_imports_only_the_layers_below_it():
    import ast
    from pathlib import Path

    import inferplan.deploy

    above = ("inferplan.shells", "inferplan.report", "inferplan.store", "inferplan.search", "inferplan.scenario")
    for path in Path(inferplan.deploy.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if n.startswith(above)], f"{path.name} imports {names}"


def test_gpus_alone_launch_the_layout_fit_plans(catalog):
    """--gpus without parallel sizes: fit plans one instance across them; the launch command says the same."""
    from inferplan.memory.fit import fit

    d = Deployment(model="qwen3-32b", gpu="rtx-4090", gpus=2, quantization="int4-awq")
    planned = fit(d, catalog).parallel
    argv = launch_command(d, catalog).argv
    assert planned.tensor_parallel_size == 2
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"


@pytest.mark.parametrize("engine", ["vllm", "trtllm"])
def test_mtp_drafts_need_a_model_that_ships_mtp_layers(catalog, engine):
    """Llama 3.1 has no multi-token-prediction layers: an MTP launch command would fail at start-up."""
    from inferplan.deploy import Speculative, launch_command
    from inferplan.memory.fit import fit

    mtp = Speculative(method="mtp", tokens=2)
    with pytest.raises(InvalidScenarioError) as refused:
        launch_command(Deployment(model="llama-3.1-8b", gpu="h100-sxm", engine=engine), catalog, speculative=mtp)
    with pytest.raises(InvalidScenarioError) as by_fit:  # the memory layer's one refusal
        fit(Deployment(model="llama-3.1-8b", gpu="h100-sxm", engine=engine, mtp_draft=True), catalog)
    assert refused.value.field == by_fit.value.field == "mtp_draft" and str(refused.value) == str(by_fit.value)
    ships = launch_command(Deployment(model="deepseek-r1", gpu="h200", gpus=8, engine=engine), catalog, speculative=mtp)
    assert "mtp" in ships.script.lower()


@pytest.mark.parametrize(("model", "gpus", "engine", "drafts_with_mtp"), [
    ("deepseek-r1", 8, "vllm", True),  # ships MTP layers, and vLLM drafts with them
    ("deepseek-r1", 8, "sglang", True),
    ("llama-3.1-8b", 1, "vllm", False),  # no MTP layers: the other method
    ("llama-3.1-8b", 1, "sglang", False),
])
def test_a_draft_without_a_method_is_the_one_perf_plans(catalog, model, gpus, engine, drafts_with_mtp):
    """Speculative decoding with no method stated: deploy drafts as perf plans it for the same
    speculative tokens (MTP where the model has MTP layers and the engine drafts with them, else ngram)."""
    from inferplan.inputs.workload import Workload
    from inferplan.performance.context import ServingContext

    d = Deployment(model=model, gpu="h200", gpus=gpus, engine=engine)
    argv = launch_command(d, catalog, speculative=Speculative(tokens=2)).argv
    explicit = Speculative(method="mtp" if drafts_with_mtp else "ngram", tokens=2)
    assert argv == launch_command(d, catalog, speculative=explicit).argv
    rate = None if drafts_with_mtp else 0.5  # ngram has no default acceptance rate
    perf = ServingContext(catalog, d, Workload(input_len=1024, output_len=256, concurrency=1, speculative_tokens=2,
                                               acceptance_rate=rate))
    assert perf.d.mtp_draft is drafts_with_mtp
    assert perf.d.speculative_method == (None if drafts_with_mtp else "ngram")


def test_a_converted_format_says_how_to_make_the_checkpoint():
    """A format the engine's tools make (engines.yaml ``converts_with``) names those tools in the
    placeholder's note; a published build needs no such note."""
    gguf = launch_command(Deployment(model="qwen3-4b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m",
                                     max_model_len=8192))
    assert any("convert_hf_to_gguf.py and llama-quantize" in n for n in gguf.notes), gguf.notes
    mlx = launch_command(Deployment(model="qwen3-32b", gpu="m4-max", engine="mlx", quantization="mlx-4bit"))
    assert any("mlx_lm.convert -q" in n for n in mlx.notes), mlx.notes
    published = launch_command(Deployment(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp",
                                          quantization="gguf-q4_k_m", max_model_len=8192))
    assert not any("convert" in n for n in published.notes), published.notes
