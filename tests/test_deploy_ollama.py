"""A deployment that runs an Ollama tag's build is launched with Ollama's commands: ``ollama serve`` with the
variables that carry the plan's settings (names from ollama.yaml's ``launch``), the tag pulled, a stated layer count
as a Modelfile's num_gpu; its manifest runs the ollama/ollama image. A stated engine or weight format keeps the
engine's own command."""

from __future__ import annotations

import shlex

import pytest
import yaml
from typer.testing import CliRunner

from inferplan.catalog.loader import DATA_DIR, load_catalog, load_files
from inferplan.deploy import kubernetes_manifest, launch_command, launch_plan
from inferplan.deploy.ollama_launch import MODELFILE
from inferplan.errors import CatalogError
from inferplan.inputs.deployment import Deployment
from inferplan.search.request import SearchRequest
from inferplan.search.run import search
from inferplan.shells.cli import app

CATALOG = load_catalog()
DATA = CATALOG.ollama_runners.records["ollama"].launch


def _server_env(script: str) -> tuple[dict[str, str], list[str]]:
    """The variables the script starts the server with (its exported address too) and the server's argv."""
    env: dict[str, str] = {}
    for line in script.splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            env.update(w.split("=", 1) for w in words[1:])
        elif line.endswith("&"):
            words = words[:-1] if words[-1] == "&" else words
            env.update(w.split("=", 1) for w in words if "=" in w)
            return env, [w for w in words if "=" not in w]
    raise AssertionError("no server started in the background")


def test_a_tags_build_is_started_by_ollama_with_the_plans_context_and_sequences():
    d = Deployment(model="qwen3:8b", gpu="rtx-4090", max_num_seqs=2)
    command = launch_command(d, CATALOG)
    env, argv = _server_env(command.script)
    assert argv == list(DATA.server) == list(command.argv) and command.runner == "ollama"
    assert env[DATA.env["max_model_len"]] == "32768"  # Ollama's context on 24 GiB, as planned
    assert env[DATA.env["max_num_seqs"]] == "2"
    assert env[DATA.host_env] == f"0.0.0.0:{DATA.default_port}" and command.port == DATA.default_port
    assert DATA.env["kv_cache_dtype"] not in env and MODELFILE not in command.script  # nothing stated for them
    assert command.then == ((*DATA.pull, "qwen3:8b"),) and shlex.join((*DATA.pull, "qwen3:8b")) in command.script
    assert "llama-server" not in command.script and "--hf-repo" not in command.script
    assert f"{shlex.join((*DATA.run, 'qwen3:8b'))}" in command.script and command.checkpoint == "qwen3:8b"


def test_an_unstated_sequence_cap_is_the_one_the_plan_assumes():
    env, _ = _server_env(launch_command(Deployment(model="qwen3:8b", gpu="rtx-4090"), CATALOG).script)
    assert env[DATA.env["max_num_seqs"]] == "1"


def test_a_quantized_kv_cache_turns_flash_attention_on_and_stated_layers_go_to_a_modelfile():
    d = Deployment(model="qwen3:32b", gpu="rtx-4090", max_model_len=16384, kv_cache_dtype="q8_0", n_gpu_layers=40,
                   host_memory_gb=64)
    command = launch_command(d, CATALOG)
    env, _ = _server_env(command.script)
    assert env[DATA.env["kv_cache_dtype"]] == DATA.kv_cache_types["q8_0"]
    assert all(env[k] == v for k, v in DATA.kv_cache_env.items())
    (modelfile,) = command.files
    assert modelfile.path == MODELFILE and modelfile.text.splitlines() == [
        "FROM qwen3:32b", f"PARAMETER {DATA.modelfile_parameters['n_gpu_layers']} 40"]
    created = command.then[-1]
    assert created[:len(DATA.create)] == DATA.create and created[-2:] == (DATA.modelfile_flag, MODELFILE)
    assert command.checkpoint == created[len(DATA.create)] and command.checkpoint in command.notes[-1]
    assert command.script.index("cat > Modelfile") < command.script.index(shlex.join(created))
    assert any("n_gpu_layers 40 as PARAMETER num_gpu" in n for n in command.notes)


def test_settings_ollama_cannot_take_are_said():
    tp = launch_command(Deployment(model="qwen3:32b", gpu="rtx-4090", gpus=2, tensor_parallel_size=2), CATALOG)
    assert any(n.startswith("tensor_parallel_size 2: Ollama takes no setting") for n in tp.notes)
    kv = launch_command(Deployment(model="qwen3:8b", gpu="rtx-4090", kv_cache_dtype="bf16"), CATALOG)
    assert any(n.startswith("kv_cache_dtype bf16: Ollama's KV-cache types") for n in kv.notes)
    assert DATA.env["kv_cache_dtype"] not in _server_env(kv.script)[0]


def test_gpt_oss_tags_get_ollamas_launch():
    out = CliRunner().invoke(app, ["deploy", "--model", "gpt-oss:20b", "--gpu", "rtx-4090"], env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    assert "ollama pull gpt-oss:20b" in out.output and "ollama serve &" in out.output


@pytest.mark.parametrize(("stated", "launcher"), [
    ({"gpu": "h100", "engine": "vllm"}, "vllm serve"),  # another engine: its build of the model
    ({"gpu": "rtx-4090", "quantization": "gguf-q8_0", "gpus": 2}, "llama-server"),  # another weight format
])
def test_a_stated_engine_or_quantization_keeps_the_engines_command(stated, launcher):
    command = launch_command(Deployment(model="qwen3:32b", **stated), CATALOG)
    assert command.runner is None and command.script.startswith(launcher) and "ollama" not in command.script


def test_a_gguf_named_by_its_card_keeps_llama_server():
    d = Deployment(model="qwen3-32b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m", max_model_len=8192)
    assert launch_command(d, CATALOG).argv[0] == "llama-server"


def test_the_manifest_runs_ollamas_image_with_the_gpus_env_and_a_pull_at_start():
    d = Deployment(model="qwen3:32b", gpu="rtx-4090", gpus=2, n_gpu_layers=64, host_memory_gb=64)
    docs = list(yaml.safe_load_all(kubernetes_manifest(d, CATALOG)))
    assert [doc["kind"] for doc in docs] == ["Deployment", "Service"]
    pod = docs[0]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == DATA.images["nvidia"].replace("{release}", DATA.release)
    assert container["resources"]["requests"]["nvidia.com/gpu"] == container["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert [*container["command"], *container["args"]] == list(DATA.server)
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env[DATA.env["max_model_len"]] == "40960" and env[DATA.env["max_num_seqs"]] == "1"  # 48 GiB: capped at the model's
    start = container["lifecycle"]["postStart"]["exec"]["command"][-1]
    assert shlex.join((*DATA.pull, "qwen3:32b")) in start and "PARAMETER num_gpu 64" in start
    assert {"name": "models", "mountPath": DATA.models_dir} in container["volumeMounts"]
    assert docs[1]["spec"]["ports"][0]["port"] == container["ports"][0]["containerPort"] == DATA.default_port
    plan = launch_plan(d, CATALOG, output_format="k8s")
    assert plan.image == container["image"] and plan.command.runner == "ollama"


@pytest.mark.parametrize(("old", "new", "says"), [
    ("env_source: ollama-envconfig", "env_source: nosuch-source", "unknown sources nosuch-source"),
    ("kv_cache_types: {fp16: f16,", "kv_cache_types: {fp9: f16,", "unknown KV-cache dtypes fp9"),
])
def test_a_launch_record_naming_unknown_sources_or_kv_types_does_not_load(tmp_path, old, new, says):
    paths = []
    for path in sorted(DATA_DIR.rglob("*.yaml")):
        if path.name == "ollama.yaml":
            (tmp_path / path.name).write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
            path = tmp_path / path.name
        if path.parent.name != "hf_configs":
            paths.append(path)
    with pytest.raises(CatalogError, match=says):
        load_files(paths, DATA_DIR)


def test_a_search_for_a_tag_launches_its_build_with_ollama_and_another_format_with_llama_server():
    req = SearchRequest(models=("qwen3:8b",), accelerators=("rtx-4090",), request_rate_per_s=0.5, input_len=1000,
                        output_len=200)
    (tagged, *_) = search(req, CATALOG).results
    assert shlex.join((*DATA.pull, "qwen3:8b")) in tagged.deploy and "llama-server" not in tagged.deploy
    env, _ = _server_env(tagged.deploy)
    assert env[DATA.env["max_num_seqs"]] == str(tagged.max_num_seqs)
    (q8, *_) = search(req.model_copy(update={"quantizations": ("gguf-q8_0",)}), CATALOG).results
    assert q8.deploy.startswith("llama-server") and "ollama" not in q8.deploy


def test_a_split_placed_by_fit_is_said_and_left_to_ollama():
    """No layer count stated: Ollama leaves the placement to llama-server --fit, so the launch states no num_gpu and
    its notes carry the split the plan found, not "every layer on the GPU"."""
    command = launch_command(Deployment(model="qwen3:32b", gpu="rtx-4090"))
    assert command.files == () and "num_gpu" not in (command.script or "")
    assert any(n.startswith("Ollama (llama-server --fit) places the weights as -ngl") for n in command.notes)
    assert not any("with every layer on the GPU" in n for n in command.notes)


def test_stated_experts_in_host_ram_reach_llama_server_through_ollamas_environment():
    """Ollama passes its own environment on to llama-server, which reads --n-cpu-moe from LLAMA_ARG_N_CPU_MOE: the
    stated split runs (not --fit's), and a note says every model that server loads gets it."""
    d = Deployment(model="gpt-oss:120b", gpu="rtx-4090", n_cpu_moe=30, host_memory_gb=128)
    command = launch_command(d, CATALOG)
    env, argv = _server_env(command.script)
    assert DATA.engine_env["n_cpu_moe"] == "LLAMA_ARG_N_CPU_MOE" and env["LLAMA_ARG_N_CPU_MOE"] == "30"
    assert argv == list(DATA.server) and MODELFILE not in command.script
    assert any(n.startswith("n_cpu_moe 30 as LLAMA_ARG_N_CPU_MOE") and "every model that server loads" in n
               for n in command.notes)
    assert not any("Ollama takes no setting" in n for n in command.notes)
    (container,) = next(yaml.safe_load_all(kubernetes_manifest(d, CATALOG)))["spec"]["template"]["spec"]["containers"]
    assert {"name": "LLAMA_ARG_N_CPU_MOE", "value": "30"} in container["env"]


def test_the_image_is_the_newest_release_the_names_were_read_at():
    """The launch's names were read at fb307609 (v0.33.0-rc2); v0.32.15 is the newest release among its ancestors
    (v0.32.9 is not one) and builds llama-server from the same llama.cpp tag, b10488."""
    assert DATA.release == "0.32.15" and DATA.image("nvidia") == "ollama/ollama:0.32.15"
    note = CATALOG.sources[DATA.image_source].note
    assert "v0.32.15" in note and "b10488" in note and "v0.32.9 and v0.32.12" in note


def test_a_stated_split_on_unknown_host_ram_is_launched_with_the_ram_it_needs_said():
    """The -ngl --fit chooses, stated back without the host RAM: launched as the chosen one is, the RAM it needs said."""
    chosen = launch_command(Deployment(model="qwen3:32b", gpu="rtx-4090"), CATALOG)
    placed = next(n for n in chosen.notes if n.startswith("Ollama (llama-server --fit) places the weights as -ngl"))
    n = int(placed.split("-ngl ")[1].split(":")[0])
    stated = launch_command(Deployment(model="qwen3:32b", gpu="rtx-4090", n_gpu_layers=n), CATALOG)
    assert f"PARAMETER num_gpu {n}" in stated.script
    assert f"the split stated: {placed[placed.index('it needs'):]}" in stated.notes, stated.notes
