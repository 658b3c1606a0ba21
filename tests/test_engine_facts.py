"""Engine facts read from engines.yaml, not keyed on engine ids in code: which engines the speed model prices
at the 16-bit rate (``priced_at_16_bit``), which back ends an engine has and where each runs (``backends``), and which
engine a deployment that names none is planned on (``default_on``)."""

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from inferplan.catalog.engine_schema import EngineBackend
from inferplan.catalog.loader import load_catalog
from inferplan.catalog.references import check_default_engines
from inferplan.catalog.schema_base import Software
from inferplan.errors import CatalogError, InvalidScenarioError
from inferplan.inputs.workload import Workload
from inferplan.memory.hardware import default_engine
from inferplan.performance.rates import attention_dtype, calibration_family, check_backend, compute_dtype, rates_for

CATALOG = load_catalog()
H100 = CATALOG.accelerator("h100-sxm")
M1 = CATALOG.accelerator("apple-m1-max")
MI300X = CATALOG.accelerator("mi300x")
FP8 = CATALOG.quantization("fp8")


@pytest.mark.parametrize("engine", ["llamacpp", "mlx"])
def test_engines_stated_16_bit_compute_fp8_weights_and_attend_in_16_bits(engine):
    record = CATALOG.engine(engine)
    assert record.priced_at_16_bit and record.priced_at_16_bit_source in CATALOG.sources
    dtype, note = compute_dtype(H100, FP8, record)
    assert dtype == "bf16" and "dequantizes fp8 weights" in note
    assert attention_dtype(H100, "fp8", record) == "bf16"


@pytest.mark.parametrize("engine", ["llamacpp", "mlx"])
def test_16_bit_pricing_is_a_stated_modelling_choice_from_a_pinned_source(engine):
    record = CATALOG.engine(engine)
    url = CATALOG.sources[record.priced_at_16_bit_source].url
    assert re.search(r"/blob/[0-9a-f]{40}/", url), url
    assert "modelling choice (assumed)" in record.priced_at_16_bit_note


def test_an_engine_not_stated_16_bit_runs_fp8_natively():
    vllm = CATALOG.engine("vllm")
    assert not vllm.priced_at_16_bit
    assert compute_dtype(H100, FP8, vllm) == ("fp8", None)
    assert attention_dtype(H100, "fp8", vllm) == "fp8"
    # the same record with the fact stated computes in 16 bits: the data, not the id, decides
    stated = vllm.model_copy(update={"priced_at_16_bit": True})
    assert compute_dtype(H100, FP8, stated)[0] == "bf16"


def test_llamacpp_back_ends_follow_the_catalogue():
    llamacpp = CATALOG.engine("llamacpp")
    assert llamacpp.backends_source in CATALOG.sources
    assert [llamacpp.default_backend(a.software) for a in (H100, M1, MI300X)] == ["cuda", "metal", "rocm"]
    assert llamacpp.backends_on(H100.software) == ("cuda", "vulkan")
    assert calibration_family(llamacpp, "vulkan", MI300X) == "llamacpp-vulkan"
    with pytest.raises(InvalidScenarioError) as err:
        check_backend(llamacpp, "metal", H100, (llamacpp,))
    assert err.value.field == "backend" and err.value.allowed == "cuda | vulkan"
    check_backend(llamacpp, "vulkan", H100, (llamacpp,))


def test_a_back_end_the_catalogue_lists_is_taken_and_one_it_does_not_is_refused_naming_those_it_does():
    llamacpp = CATALOG.engine("llamacpp")
    asked = Workload(backend="opencl").backend  # not a list in code: the engine's record decides
    with pytest.raises(InvalidScenarioError) as err:
        check_backend(llamacpp, asked, H100, (llamacpp,))
    assert err.value.field == "backend" and err.value.allowed == "cuda | vulkan"
    listed = llamacpp.model_copy(update={"backends": (*llamacpp.backends, EngineBackend(id="opencl", runs_on=("cuda",)))})
    check_backend(listed, asked, H100, (listed,))


def test_an_engine_without_back_ends_refuses_one_naming_those_that_have_them():
    with_backends = tuple(e for e in CATALOG.engines if e.backends)
    assert [e.id for e in with_backends] == ["llamacpp"]
    assert CATALOG.engine("vllm").default_backend(H100.software) is None
    with pytest.raises(InvalidScenarioError) as err:
        check_backend(CATALOG.engine("vllm"), "cuda", H100, with_backends)
    assert err.value.allowed == "leave it out, or engine llamacpp" and "only llama.cpp has" in str(err.value)
    assert err.value.names == ("engine",)  # the domain field: each shell says it its own way
    with pytest.raises(TypeError):  # the engines that have back ends are the caller's to give, never left out
        check_backend(CATALOG.engine("vllm"), "cuda", H100)
    with pytest.raises(InvalidScenarioError) as none:
        check_backend(CATALOG.engine("vllm"), "cuda", H100, ())
    assert str(none.value).startswith("none of the catalogue's engines has selectable back ends")
    assert none.value.allowed == "leave it out"
    from inferplan.shells.cli_common import flags_in  # a shell says the field the allowed text names, not the prose
    for e in (err.value, none.value):
        assert flags_in(str(e), {"engine": "--engine"}) == str(e)
    assert flags_in(err.value.allowed, {"engine": "--engine"}) == "leave it out, or --engine llamacpp"


def test_the_default_engine_by_software_stack_is_data():
    assert default_engine(CATALOG, M1) == "llamacpp"
    assert default_engine(CATALOG, H100) == "vllm" == default_engine(CATALOG, MI300X)
    mlx = CATALOG.engine("mlx").model_copy(update={"default_on": ("metal",)})
    llamacpp = CATALOG.engine("llamacpp").model_copy(update={"default_on": ("vulkan",)})
    moved = SimpleNamespace(engines=[e for e in CATALOG.engines if e.id not in ("mlx", "llamacpp")] + [mlx, llamacpp])
    assert default_engine(moved, M1) == "mlx"
    with pytest.raises(CatalogError, match="no engine is the default on metal"):
        default_engine(SimpleNamespace(engines=[e for e in CATALOG.engines if e.id != "llamacpp"]), M1)


def test_each_software_stack_has_exactly_one_default_engine_that_runs_there():
    check_default_engines(CATALOG)
    for software in Software:
        assert len([e for e in CATALOG.engines if software in e.default_on]) == 1, software
    twice = CATALOG.engine("mlx").model_copy(update={"default_on": ("metal",)})
    with pytest.raises(CatalogError, match="2 engines are the default on metal"):
        check_default_engines(SimpleNamespace(engines=[*CATALOG.engines, twice]))
    nowhere = CATALOG.engine("vllm").model_copy(update={"default_on": ("cuda", "rocm", "oneapi", "synapseai",
                                                                       "neuron", "vulkan")})
    others = [e for e in CATALOG.engines if e.id not in ("vllm", "llamacpp")]
    llamacpp = CATALOG.engine("llamacpp").model_copy(update={"default_on": ("metal",)})
    with pytest.raises(CatalogError, match="does not run"):
        check_default_engines(SimpleNamespace(engines=[*others, nowhere, llamacpp]))


def test_activations_move_in_the_catalogued_bytes_per_value():
    from dataclasses import replace

    from inferplan.inputs.deployment import Deployment
    from inferplan.memory.fit import plan_memory
    from inferplan.performance.phases import stage_hop_s
    from inferplan.performance.work import model_work

    record = CATALOG.calibration.records["activation-bytes"]
    assert record.value == 2 and set(record.sources) <= set(CATALOG.sources)
    work = model_work(plan_memory(Deployment(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=2, engine="vllm",
                                             pipeline_parallel_size=2), CATALOG), CATALOG)
    assert work.activation_bytes == 2 and work.moe_dispatch_bytes_per_token > 0
    rates = rates_for(CATALOG, H100, CATALOG.quantization("bf16"), "vllm", None)
    assert stage_hop_s(replace(work, activation_bytes=4), rates, 100) > stage_hop_s(work, rates, 100)


def test_a_catalogue_with_other_activation_bytes_moves_that_many_per_value():
    from inferplan.inputs.deployment import Deployment
    from inferplan.memory.fit import plan_memory
    from inferplan.performance.work import model_work
    from inferplan.validation.offload_fit import with_constant

    # DeepSeek-V4-Flash: routed experts dispatch their tokens' hidden states and hyper-connection seams
    # move the residual streams, both counted in the catalogue's bytes per activation value
    mp = plan_memory(Deployment(model="deepseek-v4-flash", gpu="b200", gpus=4, tensor_parallel_size=4,
                                max_model_len=8192), CATALOG)
    two = model_work(mp, CATALOG)
    four = model_work(mp, with_constant(CATALOG, "activation-bytes", 4))
    assert (two.activation_bytes, four.activation_bytes) == (2, 4)
    assert two.moe_dispatch_bytes_per_token > 0 and two.hc_bytes_per_token > 0
    assert four.moe_dispatch_bytes_per_token == pytest.approx(2 * two.moe_dispatch_bytes_per_token)
    assert four.hc_bytes_per_token == pytest.approx(2 * two.hc_bytes_per_token)


def _names(software: Software) -> tuple[str, ...]:
    return ("apple", "metal") if software == Software.METAL else (software.value,)


def test_a_default_engines_note_says_it_does_not_run_only_where_it_does_not():
    for engine in (e for e in CATALOG.engines if e.default_on_note):
        for clause in (c.lower() for c in engine.default_on_note.split(";") if "does not run" in c):
            assert not [s for s in engine.runs_on if any(n in clause for n in _names(s))], (engine.id, clause)


def test_the_memory_docs_name_every_stack_a_default_engine_is_planned_on():
    text = (Path(__file__).parents[1] / "docs" / "memory.md").read_text()
    paragraph = text.split("A deployment that names no engine", 1)[1].split("\n\n", 1)[0].lower()
    for engine in (e for e in CATALOG.engines if e.default_on):
        assert engine.short_name.lower() in paragraph
        assert all(any(n in paragraph for n in _names(s)) for s in engine.default_on), engine.id


def test_mlx_memory_limits_cite_the_page_that_states_each():
    note = next(n for n in CATALOG.engines.records["mlx"].notes if "memory limit to 1.5" in n)
    wired, memory = note.split("; the OS cap")[0].split(" and its memory limit")
    assert "(nothing pinned; eng-mlx-wired-limit)" in wired and "(eng-mlx-memory-limit)" in memory
    assert str(CATALOG.sources["eng-mlx-memory-limit"].url).endswith("mlx.core.set_memory_limit.html")
    assert str(CATALOG.sources["eng-mlx-wired-limit"].url).endswith("mlx.core.set_wired_limit.html")


def test_the_cli_says_the_engine_a_back_end_needs_as_its_flag():
    from typer.testing import CliRunner

    from inferplan.shells.cli import app
    out = CliRunner().invoke(app, ["perf", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--engine", "vllm",
                                   "--backend", "vulkan"], env={"COLUMNS": "250"})
    assert out.exit_code == 2 and "(allowed: leave it out, or --engine llamacpp)" in out.output
