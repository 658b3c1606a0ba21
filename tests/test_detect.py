"""`inferplan detect`: recorded outputs of the vendor tools → this machine, matched to the catalogue."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferplan.catalog import detect_parse as p
from inferplan.catalog.detect import LOCAL_ID, local_catalog, read_machine
from inferplan.catalog.loader import load_catalog
from inferplan.errors import InvalidScenarioError, UnknownHardwareError
from inferplan.units import GiB

DATA = Path(__file__).parent / "data" / "detect"
TOOLS = {"nvidia-smi": "nvidia-smi", "nvidia-smi-L": "nvidia-smi -L", "rocm-smi": "rocm-smi", "amd-smi": "amd-smi",
         "sysctl": "sysctl", "system_profiler": "system_profiler", "meminfo": "/proc/meminfo", "lscpu": "lscpu"}


def outputs(machine: str) -> dict[str, str]:
    return {TOOLS[f.name]: f.read_text() for f in (DATA / machine).iterdir()}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_there_are_six_machine_kinds():
    assert len([d for d in DATA.iterdir() if d.is_dir()]) >= 6


@pytest.mark.parametrize(("machine", "groups"), [
    ("h100-single", [("matched h100-sxm", 1)]),
    ("rtx4090-rtx3090", [("matched rtx-4090", 1), ("matched rtx-3090", 1)]),
    ("mi300x", [("matched mi300x", 1)]),
    ("apple-m3-max", [("matched apple-m3-max", 1)]),
    ("cpu-only", []),
])
def test_each_machine_is_matched_to_the_catalogue(catalog, machine, groups):
    m = read_machine(catalog, outputs(machine))
    assert sorted((g.label, g.count) for g in m.groups) == sorted(groups)
    assert m.ram_bytes and m.ram_bytes > 8 * GiB


def test_mig_slices_are_planned_as_slices(catalog):
    m = read_machine(catalog, outputs("a100x8-mig"))
    by_name = {g.name: g for g in m.groups}
    assert by_name["NVIDIA A100-SXM4-80GB"].count == 6 and by_name["NVIDIA A100-SXM4-80GB"].matched == "a100-80gb"
    slice40 = by_name["NVIDIA A100-SXM4-80GB MIG 3g.40gb"]
    assert slice40.count == 2 and slice40.memory_bytes == 40 * 10**9 and "derived from a100-80gb" in slice40.label
    assert by_name["NVIDIA A100-SXM4-80GB MIG 1g.10gb"].count == 2
    assert m.groups[0].name == "NVIDIA A100-SXM4-80GB"  # the most memory: what --gpu local plans on


def test_a_mig_slice_has_its_share_of_bandwidth(catalog):
    from inferplan.catalog.detect import local_record

    reading = p.GpuReading(index="0/MIG 3g.40gb/0", name="NVIDIA A100-SXM4-80GB", memory_bytes=40 * 10**9,
                           vendor="nvidia", mig_profile="3g.40gb")
    record, _, notes = local_record(catalog, reading)
    full = catalog.accelerator("a100-80gb").memory_bandwidth_bytes_per_s.value
    assert record.memory_bandwidth_bytes_per_s.value == pytest.approx(full * 3 / 7)
    assert record.memory_bytes.value == 40e9 and notes


def test_an_unknown_card_is_planned_with_the_memory_read(catalog):
    text = "0, NVIDIA Imaginary X9000, 49152, 560.1, [N/A]\n"
    m = read_machine(catalog, {"nvidia-smi": text})
    assert m.groups[0].label == "local, unmatched" and "not in the catalogue" in m.groups[0].notes[0]
    cat, _ = local_catalog(catalog, {"nvidia-smi": text})
    assert cat.accelerator("local").memory_bytes.value == 49152 * 2**20
    from inferplan.performance.here import what_runs_here

    here = what_runs_here(read_machine(catalog, {"nvidia-smi": text}), cat, models=["llama-3.1-8b"])
    assert here.matrix.cells[0].hardware == "local" and here.speeds[0].model == "llama-3.1-8b"


def test_a_smaller_apple_bin_keeps_its_read_memory(catalog):
    out = outputs("apple-m3-max")
    out["sysctl"] = "Apple M3 Max\n38654705664\n"  # the 36 GB configuration
    cat, m = local_catalog(catalog, out)
    assert "derived from apple-m3-max" in m.groups[0].label
    assert cat.accelerator(LOCAL_ID).memory_bytes.value == 38654705664


def test_cpu_only_says_so_and_has_no_local_gpu(catalog):
    m = read_machine(catalog, outputs("cpu-only"))
    assert not m.has_gpu and "CPU and RAM only" in m.notes[0] and m.cores == 4
    with pytest.raises(UnknownHardwareError):
        local_catalog(catalog, outputs("cpu-only"))


@pytest.mark.parametrize(("tool", "text"), [
    ("nvidia-smi", "0, NVIDIA H100, lots, 550, Disabled\n"),
    ("nvidia-smi", "0, NVIDIA H100\n"),
    ("rocm-smi", "{not json"),
    ("amd-smi", '[{"gpu": 0}]'),
    ("/proc/meminfo", "MemFree: 1 kB\n"),
])
def test_unreadable_output_is_refused_with_the_line(catalog, tool, text):
    with pytest.raises(InvalidScenarioError) as info:
        read_machine(catalog, {tool: text})
    assert info.value.field.startswith(tool.split()[0])


def test_what_runs_on_an_h100(catalog):
    from inferplan.performance.here import what_runs_here

    cat, machine = local_catalog(catalog, outputs("h100-single"))
    result = what_runs_here(machine, cat, models=["llama-3.1-8b", "llama-3.1-70b"])
    fits = {c.model: c.result.fits for c in result.matrix.cells}
    assert fits == {"llama-3.1-8b": True, "llama-3.1-70b": False} and result.engine == "vllm"
    assert [s.model for s in result.speeds] == ["llama-3.1-8b"] and result.speeds[0].output_tokens_per_s_per_user > 50


def test_apple_plans_with_llama_cpp(catalog):
    from inferplan.performance.here import what_runs_here

    cat, machine = local_catalog(catalog, outputs("apple-m3-max"))
    assert what_runs_here(machine, cat, models=["llama-3.1-8b"]).engine == "llamacpp"


@pytest.fixture
def machine_is(monkeypatch):
    from inferplan.shells import cli_common

    def use(name):
        monkeypatch.setattr("inferplan.catalog.detect.probe", lambda: outputs(name))
        monkeypatch.setattr(cli_common, "_PROBED", None)
    return use


def test_detect_on_a_cpu_only_box_says_so_and_exits_0(machine_is):
    import json

    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    machine_is("cpu-only")
    r = CliRunner().invoke(app, ["detect", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["matrix"] is None and data["summary"].startswith("no GPU: CPU and RAM only")


@pytest.mark.parametrize(("machine", "accelerator"), [("h100-single", "h100-sxm"), ("a100x8-mig", "a100-80gb")])
def test_gpu_local_plans_on_the_matched_card(machine_is, machine, accelerator):
    import json

    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    machine_is(machine)
    r = CliRunner().invoke(app, ["perf", "--model", "llama-3.1-8b", "--gpu", "local", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["accelerator"] == accelerator


def test_gpu_local_plans_an_unmatched_card_with_its_read_memory(monkeypatch):
    import json

    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    from inferplan.shells import cli_common

    monkeypatch.setattr("inferplan.catalog.detect.probe", lambda: {"nvidia-smi": "0, NVIDIA Imaginary X9000, 49152, 560.1, [N/A]\n"})
    monkeypatch.setattr(cli_common, "_PROBED", None)
    r = CliRunner().invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "local", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["accelerator"] == "local"


def test_the_commands_run_are_data_and_match_the_parsers():
    from inferplan.catalog.detect import tools

    t = tools()
    assert set(t) == set(TOOLS.values()) - {"/proc/meminfo"}
    query = next(a for a in t["nvidia-smi"].argv if a.startswith("--query-gpu="))
    assert tuple(query.split("=", 1)[1].split(",")) == p.NVIDIA_QUERY_FIELDS


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(tool=st.sampled_from(sorted(set(TOOLS.values()) - {"nvidia-smi -L", "system_profiler"})), text=st.text(max_size=300))
def test_any_tool_output_reads_or_is_refused_cleanly(tool, text):
    catalog = load_catalog()
    out = {tool: text}
    if tool == "sysctl":
        out["system_profiler"] = (DATA / "apple-m3-max" / "system_profiler").read_text()
    try:
        read_machine(catalog, out)
    except InvalidScenarioError:
        pass


def test_gpu_local_without_a_gpu_is_refused_naming_the_flag(machine_is):
    import json

    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    machine_is("cpu-only")
    r = CliRunner().invoke(app, ["perf", "--model", "llama-3.1-8b", "--gpu", "local", "--json"])
    assert r.exit_code == 2 and json.loads(r.stdout)["error"]["field"] == "--gpu"
    assert "no GPU" in r.output


def test_a_run_on_an_unmatched_local_card_imports_and_plans(monkeypatch, tmp_path):
    import json

    from typer.testing import CliRunner

    from inferplan.shells import cli_common
    from inferplan.shells.cli import app

    monkeypatch.setattr("inferplan.catalog.detect.probe", lambda: {"nvidia-smi": "0, NVIDIA Imaginary X9000, 49152, 560.1, [N/A]\n"})
    monkeypatch.setattr(cli_common, "_PROBED", None)
    csv = tmp_path / "run.csv"
    csv.write_text("concurrency,input_tokens,output_tokens,tpot_ms,output_tokens_per_s\n1,512,128,20,50\n4,512,128,25,160\n")
    db = tmp_path / "r.db"
    r = CliRunner().invoke(app, ["measurements", "import", str(csv), "--model", "llama-3.1-8b", "--gpu", "local", "--db", str(db)])
    assert r.exit_code == 0, r.output
    perf = CliRunner().invoke(app, ["perf", "--model", "llama-3.1-8b", "--gpu", "local", "--input-len", "512", "--output-len", "128",
                                    "--concurrency", "2", "--db", str(db), "--json"])
    assert perf.exit_code == 0, perf.output
    est = json.loads(perf.stdout)
    assert est["accelerator"] == "local" and est["source"] == "measured-local"


def test_a_matched_card_is_planned_under_its_catalogue_id(catalog):
    from inferplan.performance.here import what_runs_here

    cat, machine = local_catalog(catalog, outputs("mi300x"))
    result = what_runs_here(machine, cat, models=["llama-3.1-8b"])
    assert {c.hardware for c in result.matrix.cells} == {"mi300x"}


def test_detect_speeds_come_from_your_runs_where_they_match(machine_is, tmp_path):
    import json

    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    machine_is("h100-single")
    csv = tmp_path / "run.csv"
    csv.write_text("concurrency,input_tokens,output_tokens,ttft_ms,tpot_ms,output_tokens_per_s\n1,1024,256,40,6.5,150\n")
    db = tmp_path / "r.db"
    assert CliRunner().invoke(app, ["measurements", "import", str(csv), "--model", "llama-3.1-8b", "--gpu", "local",
                                    "--db", str(db)]).exit_code == 0
    r = CliRunner().invoke(app, ["detect", "--models", "llama-3.1-8b", "--db", str(db), "--json"])
    (speed,) = json.loads(r.stdout)["speeds"]
    assert speed["source"] == "measured-local" and speed["output_tokens_per_s_per_user"] == pytest.approx(1 / 0.0065)


def test_gpu_local_in_deploy_and_simulate(monkeypatch):
    """--gpu local plans on the card detect read in every command that takes --gpu: an unmatched card
    launches with its read memory, and simulates."""
    import json

    from typer.testing import CliRunner

    from inferplan.shells import cli_common
    from inferplan.shells.cli import app

    monkeypatch.setattr("inferplan.catalog.detect.probe",
                        lambda: {"nvidia-smi": "0, NVIDIA Imaginary X9000, 49152, 560.1, [N/A]\n"})
    monkeypatch.setattr(cli_common, "_PROBED", None)
    deploy = CliRunner().invoke(app, ["deploy", "--model", "llama-3.1-8b", "--gpu", "local", "--json"])
    assert deploy.exit_code == 0, deploy.output
    assert json.loads(deploy.stdout)["command"]["argv"][:2] == ["vllm", "serve"]
    sim = CliRunner().invoke(app, ["simulate", "--model", "llama-3.1-8b", "--gpu", "local", "--request-rate", "1",
                                   "--requests", "200", "--json"])
    assert sim.exit_code == 0, sim.output


def test_detect_offers_the_offload_the_machines_ram_holds_with_its_speed(catalog):
    """gpt-oss-120b does not fit a 24 GB card: with the machine's 126 GiB of RAM read, the offload fit
    suggests is listed with perf's speed at it; with 16 GiB of RAM it is not (it needs more)."""
    from inferplan.performance.here import what_runs_here
    from inferplan.performance.serving import estimate
    from inferplan.inputs.deployment import Deployment
    from inferplan.inputs.workload import Workload

    out = outputs("rtx4090-rtx3090")
    cat, machine = local_catalog(catalog, out)
    result = what_runs_here(machine, cat, engine="llamacpp", models=["gpt-oss-120b"])
    (row,) = result.offloads
    cell = result.matrix.cells[0]
    assert not cell.result.fits and row.offload.flag.startswith("llama.cpp --n-cpu-moe ")
    assert row.offload.host_memory_bytes == pytest.approx(machine.ram_bytes)
    d = Deployment(model="gpt-oss-120b", gpu=cell.hardware, engine="llamacpp", quantization=cell.quantization,
                   max_model_len=cell.result.max_model_len, host_memory_gb=machine.ram_bytes / GiB, **row.offload.changes)
    e = estimate(d, Workload(input_len=1024, output_len=256), cat)
    assert row.offload.output_tokens_per_s_per_user == e.output_tokens_per_s_per_user
    small = dict(out, **{"/proc/meminfo": "MemTotal:       16777216 kB\n"})
    cat, machine = local_catalog(catalog, small)
    assert what_runs_here(machine, cat, engine="llamacpp", models=["gpt-oss-120b"]).offloads == ()
