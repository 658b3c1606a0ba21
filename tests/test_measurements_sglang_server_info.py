"""SGLang's bench_serving saves the server's ``/server_info`` (its resolved arguments and release) beside each run:
the import reads the model, release, tensor, pipeline and data parallel sizes, weight format and CUDA graphs from it where
the user states none,
and refuses a file whose lines are runs of several servers."""

import json
from pathlib import Path

import pytest

from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.measurements.formats import guess_format, parse
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.memory.precision import kv_cache_dtype_of
from inferplan.memory.resolve import resolve_model
from inferplan.performance.run_record import run_deployment

DATA = Path(__file__).parent / "data" / "measurements"
LINES = [json.loads(line) for line in (DATA / "sglang_bench_serving.jsonl").read_text().splitlines()]
# the keys of /server_info that are read, as ServerArgs.resolved_dict and the http server write them
SERVER = {"model_path": "/models/Qwen3-8B", "tp_size": 2, "pp_size": 1, "quantization": "fp8", "kv_cache_dtype": "auto",
          "version": "0.5.3", "internal_states": [{"avg_spec_accept_length": None}]}


def _file(*servers: dict | None) -> bytes:
    return "".join(json.dumps({**line, "server_info": s}) + "\n" for line, s in zip(LINES, servers)).encode()


def test_an_sglang_run_takes_its_deployment_from_the_saved_server_info(catalog):
    (run,) = read_runs(catalog, [("sglang.jsonl", _file(SERVER, SERVER, SERVER))], RunProvenance(gpu="h100", gpus=2))
    assert (run.model, run.engine, run.engine_version) == ("qwen3-8b", "sglang", "0.5.3")
    assert (run.tensor_parallel_size, run.quantization) == (2, "fp8")


def test_what_the_user_states_wins_over_the_server_infos_names(catalog):
    # a server's folder, release text or weight format named otherwise: the user's naming stands
    given = RunProvenance(gpu="h100", model="llama-3.1-8b", engine_version="0.5.2", quantization="bf16")
    (run,) = read_runs(catalog, [("sglang.jsonl", _file(SERVER, None, SERVER))], given)
    assert (run.model, run.engine_version, run.tensor_parallel_size, run.quantization) == ("llama-3.1-8b", "0.5.2", 2, "bf16")


@pytest.mark.parametrize(("field", "key"), [("tensor_parallel_size", "tp_size"), ("pipeline_parallel_size", "pp_size")])
def test_a_stated_layout_the_server_reported_otherwise_is_refused_naming_both(catalog, field, key):
    with pytest.raises(InvalidScenarioError) as info:
        read_runs(catalog, [("sglang.jsonl", _file(SERVER, SERVER, SERVER))], RunProvenance(gpu="h100", **{field: 4}))
    assert info.value.field == field and str(info.value).startswith(f"sglang.jsonl: stated {field} 4, but the server "
                                                                    f"reported server_info.{key}")


def test_lines_of_several_servers_are_refused_naming_the_line_and_key():
    with pytest.raises(InvalidScenarioError) as info:
        parse(_file(SERVER, {**SERVER, "tp_size": 4}, SERVER).decode(), "sglang")
    assert info.value.field == "line 2: server_info.tp_size" and "several servers" in str(info.value)


def test_a_server_weight_format_the_catalogue_lacks_is_refused_naming_its_key(catalog):
    with pytest.raises(InvalidScenarioError) as info:
        read_runs(catalog, [("sglang.jsonl", _file(*[{**SERVER, "quantization": "qoq"}] * 3))], RunProvenance(gpu="h100", gpus=2))
    assert info.value.field == "server_info.quantization" and str(info.value).startswith("sglang.jsonl:")


# CUDA graphs off: the deprecated switch, and the resolved config SGLang 0.5.23's flags write (cuda_graph_hook.py)
GRAPHS_OFF = [{"disable_cuda_graph": True},
              {"disable_cuda_graph": False, "cuda_graph_config": {"decode": {"backend": "disabled"}, "prefill": {"backend": "disabled"}}}]


@pytest.mark.parametrize("graphs_off", GRAPHS_OFF)
def test_an_sglang_server_without_cuda_graphs_over_pipeline_stages_is_stored_as_launched(catalog, graphs_off):
    server = {**SERVER, "tp_size": 1, "pp_size": 2, **graphs_off}
    (run,) = read_runs(catalog, [("sglang.jsonl", _file(server, server, server))], RunProvenance(gpu="h100"))
    assert (run.gpus, run.tensor_parallel_size, run.pipeline_parallel_size, run.enforce_eager) == (2, 1, 2, True)
    (graphs,) = read_runs(catalog, [("sglang.jsonl", _file(SERVER, SERVER, SERVER))], RunProvenance(gpu="h100"))
    assert (graphs.gpus, graphs.pipeline_parallel_size, graphs.enforce_eager) == (2, 1, False)


def test_an_sglang_result_named_json_is_told_before_its_long_server_info():
    # bench_serving writes its arguments, then server_info (every server argument), then the figures
    line = {key: LINES[0][key] for key in ("backend", "dataset_name", "request_rate", "max_concurrency",
                                           "sharegpt_output_len", "random_input_len")}
    text = json.dumps({**line, "server_info": {**SERVER, **{f"arg_{i}": "x" * 40 for i in range(200)}}, **LINES[0]})
    assert guess_format("result.json", text) == "sglang"


def test_an_sglang_servers_data_parallel_replicas_count_their_gpus(catalog):
    # dp_size: the replicas of the model (sglang 0.5.23 arg_groups/fields/parallel.py); GPUs = dp x tp x pp
    server = {**SERVER, "tp_size": 1, "dp_size": 2, "attn_dp_size": 1, "enable_dp_attention": False}
    (run,) = read_runs(catalog, [("sglang.jsonl", _file(server, server, server))], RunProvenance(gpu="h100"))
    assert (run.gpus, run.tensor_parallel_size, run.data_parallel_size) == (2, 1, 2)
    with pytest.raises(InvalidScenarioError) as info:
        read_runs(catalog, [("sglang.jsonl", _file(server, server, server))], RunProvenance(gpu="h100", data_parallel_size=4))
    assert info.value.field == "data_parallel_size" and "server_info.dp_size" in str(info.value)


def test_an_older_sglang_servers_dp_size_under_dp_attention_adds_no_gpus(catalog):
    # before attn_dp_size, --dp N --enable-dp-attention split attention inside the TP group
    server = {**SERVER, "tp_size": 2, "dp_size": 2, "enable_dp_attention": True}
    (run,) = read_runs(catalog, [("sglang.jsonl", _file(server, server, server))], RunProvenance(gpu="h100"))
    assert (run.gpus, run.tensor_parallel_size, run.data_parallel_size) == (2, 2, None)


@pytest.mark.parametrize(("reported", "stored"), [("auto", None), ("fp8_e4m3", "fp8"), ("fp8_e5m2", "fp8"), ("bfloat16", "bf16")])
def test_an_sglang_servers_kv_cache_dtype_is_the_runs(catalog, reported, stored):
    # auto is the engine's default (the model's dtype, or the checkpoint's FP8 KV quantization), as the plan resolves it
    server = {**SERVER, "kv_cache_dtype": reported}
    (run,) = read_runs(catalog, [("sglang.jsonl", _file(server, server, server))], RunProvenance(gpu="h100"))
    assert run.kv_cache_dtype == stored
    assert run_deployment(run).kv_cache_dtype == (stored or "auto")


def test_the_kv_cache_dtype_the_server_reported_moves_the_comparisons_prediction(catalog):
    runs = [read_runs(catalog, [("sglang.jsonl", _file(*[{**SERVER, "kv_cache_dtype": kv}] * 3))], RunProvenance(gpu="h100"))[0]
            for kv in ("auto", "fp8_e4m3")]
    bf16, fp8 = (kv_cache_dtype_of(catalog, run_deployment(r), resolve_model(catalog, r.model)) for r in runs)
    assert (bf16.id, fp8.id) == ("bf16", "fp8")


def test_a_stated_kv_cache_dtype_the_server_reported_otherwise_is_refused_naming_both(catalog):
    server = {**SERVER, "kv_cache_dtype": "fp8_e4m3"}
    (run,) = read_runs(catalog, [("sglang.jsonl", _file(server, server, server))], RunProvenance(gpu="h100", kv_cache_dtype="fp8"))
    assert run.kv_cache_dtype == "fp8"
    with pytest.raises(InvalidScenarioError) as info:
        read_runs(catalog, [("sglang.jsonl", _file(server, server, server))], RunProvenance(gpu="h100", kv_cache_dtype="bf16"))
    assert info.value.field == "kv_cache_dtype"
    assert str(info.value).startswith("sglang.jsonl: stated kv_cache_dtype ")  # the file named once
    assert "server reported server_info.kv_cache_dtype fp8_e4m3 (fp8)" in str(info.value)


@pytest.mark.parametrize("stated", ["fp8", "bf16"])
def test_a_stated_kv_cache_dtype_beside_a_servers_auto_is_kept(catalog, stated):
    # auto states nothing (the engine's default): the user's statement wins, as a stated model or quantization does
    server = {**SERVER, "tp_size": 8}
    (run,) = read_runs(catalog, [("sglang.jsonl", _file(server, server, server))],
                       RunProvenance(gpu="b300", gpus=8, model="kimi-k3", quantization="mxfp4", kv_cache_dtype=stated))
    assert (run.model, run.kv_cache_dtype, run_deployment(run).kv_cache_dtype) == ("kimi-k3", stated, stated)


def test_a_server_kv_cache_dtype_the_catalogue_cannot_size_is_refused_naming_its_key(catalog):
    server = {**SERVER, "kv_cache_dtype": "nvfp4"}
    with pytest.raises(InvalidScenarioError) as info:
        read_runs(catalog, [("sglang.jsonl", _file(server, server, server))], RunProvenance(gpu="h100"))
    assert info.value.field == "server_info.kv_cache_dtype" and "fp8_e4m3" in info.value.allowed
    assert str(info.value).startswith("sglang.jsonl:")


def test_a_stated_kv_cache_dtype_of_no_name_is_refused_as_stated_not_as_the_files(catalog):
    server = {**SERVER, "kv_cache_dtype": "fp8_e4m3"}
    with pytest.raises(InferplanError) as info:
        read_runs(catalog, [("sglang.jsonl", _file(server, server, server))], RunProvenance(gpu="h100", kv_cache_dtype="fp9"))
    assert info.value.field == "kv_cache_dtype" and not str(info.value).startswith("sglang.jsonl")
