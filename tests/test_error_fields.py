"""The library names inputs by their domain field (max_model_len), never by a CLI flag
(--max-model-len): each shell maps the field to its own spelling (a flag, a JSON path)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import typer

from inferplan.errors import InvalidScenarioError
from inferplan.shells.cli_common import run

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "inferplan"
FLAG = re.compile(r"--[a-z][a-z0-9-]*")


def _argv_test(parent: ast.AST) -> bool:
    """A module's own command line (``"--write" in sys.argv``, ``args.index("--jobs")``)."""
    def argv(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "args") or (
            isinstance(node, ast.Attribute) and node.attr == "argv")

    if isinstance(parent, ast.Compare):
        return any(argv(c) for c in parent.comparators)
    return isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and argv(parent.func.value)


def flag_names_in(source: str) -> list[tuple[int, str]]:
    """Every string that is a whole CLI flag in ``source``, save a module reading its own argv."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and FLAG.fullmatch(node.value):
            parent = parents.get(node)
            if isinstance(parent, ast.JoinedStr) or _argv_test(parent):
                continue
            found.append((node.lineno, node.value))
    return found


def library_modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "shells" not in p.relative_to(PACKAGE).parts]


def test_no_library_module_names_a_cli_flag() -> None:
    offenders = [f"{p.relative_to(PACKAGE)}:{line}: {flag}"
                 for p in library_modules() for line, flag in flag_names_in(p.read_text())]
    assert not offenders, "raise the domain field; the CLI maps it to its flag:\n" + "\n".join(offenders)


@pytest.mark.parametrize("code", [
    'raise InvalidScenarioError("too long", field="--max-model-len")',
    'catalog.system(d.system, "--system")',
    'def engine(self, name, field_name="--engine"): ...',
    'if exc.field == "--gpus": pass',
    'field = "--tensor-parallel-size" if tp else "--data-parallel-size"',
])
def test_the_scan_finds_a_flag_put_back(code: str) -> None:
    assert flag_names_in(code)


def test_the_scan_lets_a_module_read_its_own_command_line_and_prose() -> None:
    assert not flag_names_in('import sys\nif "--write" in sys.argv: pass\nargs.remove("--jobs")\n'
                             'x = "raise --max-num-batched-tokens too"\ny = f"--ubatch-size {n}"')


def test_the_cli_names_the_flag_of_a_domain_field(capsys) -> None:
    def too_long():
        raise InvalidScenarioError("the prompt is longer than the context", field="input_len")

    with pytest.raises(typer.Exit) as exited:
        run(too_long)
    assert exited.value.exit_code == 2
    assert "--input-len: the prompt is longer" in capsys.readouterr().err
