"""The deployment flags are declared once (shells/cli_flags.py) and reach each command's Deployment."""

import pytest
from typer.main import get_command

from inferplan.shells.cli_common import PAIRED
from inferplan.inputs.deployment import Deployment
from inferplan.shells.cli import app
from inferplan.shells.cli_flags import FLAGS, HOST, LAYOUT, deployment_flags


def options(command: str) -> set[str]:
    return {o for p in get_command(app).commands[command].params for o in p.opts}


def test_every_shared_flag_is_a_deployment_field_spelled_as_its_flag():
    assert set(FLAGS) <= set(Deployment.model_fields)
    for name, (_, option) in FLAGS.items():
        # a switch is spelled as the field's name beside its "--no-" form (on: True, off: False)
        flag = "--" + name.replace("_", "-")
        if flag not in option.param_decls:
            assert option.param_decls == (f"{flag}/--no-{flag[2:]}",) and name in PAIRED


@pytest.mark.parametrize("command", ["fit", "perf", "frontier", "deploy", "simulate"])
def test_each_command_takes_the_layout_flags_and_no_flags_parameter(command):
    opts = options(command)
    assert {"--model", "--gpu", "--system", "--gpus", "--tensor-parallel-size", "--enable-expert-parallel"} <= opts
    assert not any(o.startswith("--flags") for o in opts)


def test_fit_and_perf_take_the_host_flags_and_frontier_does_not():
    host = {"--" + n.replace("_", "-") for n in HOST}
    assert host <= options("fit") and host <= options("perf")
    assert not host & options("frontier")


def test_a_flag_reaches_the_deployment():
    from typer.testing import CliRunner

    out = CliRunner().invoke(app, ["fit", "--model", "llama-3.1-8b", "--gpu", "h100", "-tp", "2", "--max-model-len", "4096",
                                   "--json"])
    assert out.exit_code == 0, out.output
    assert '"tensor_parallel_size": 2' in out.stdout and '"max_model_len": 4096' in out.stdout


def test_an_unknown_flag_name_is_refused_when_the_command_is_declared():
    with pytest.raises(ValueError, match="no deployment flag"):
        deployment_flags(*LAYOUT, "max_model_length")
