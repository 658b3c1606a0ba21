"""The layers point one way: a module imports only modules of its own layer or the layers under it,
and no two modules import each other, directly or round a loop.

Layers, bottom up: ``errors``, ``units``, ``inputs``, ``input_files``, ``input_codecs``, ``listen`` (0) < ``catalog`` (1) < ``memory`` (2) <
``performance`` (3) < ``economics`` (4) < ``search``, ``scenario``, ``deploy``, ``measurements`` (5) < ``report``,
``store`` (6) < ``shells`` (7). ``validation`` is the maintenance layer beside them: it may import
``catalog`` … ``economics`` (and the bottom), and only ``shells`` import it (tests may too).

Every import counts: at module level, inside functions, under ``TYPE_CHECKING``, ``import x`` and
``from x import y``, absolute or relative.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import inferplan

SRC = Path(inferplan.__file__).resolve().parent
PACKAGE = "inferplan"

LAYERS = {
    "errors": 0, "units": 0, "inputs": 0, "input_files": 0, "input_codecs": 0, "listen": 0,
    "catalog": 1,
    "memory": 2,
    "performance": 3,
    "economics": 4,
    "search": 5, "scenario": 5, "deploy": 5, "measurements": 5,
    "report": 6, "store": 6, "store_path": 6, "store_schema": 6, "store_runs": 6,
    "shells": 7,
}
MAINTENANCE = "validation"
MAINTENANCE_IMPORTS_UP_TO = LAYERS["search"]  # validation may import catalog … search (it checks the queueing model too)
MAINTENANCE_IMPORTED_BY = frozenset({"shells", MAINTENANCE})


def modules(root: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Every module under ``root`` (the package folder): dotted name -> (file, is a package)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imported(name: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: dict) -> list[str]:
    """The modules one import statement loads (within the known ones and outside them)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = name.split(".") if is_package else name.split(".")[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
    return submodules or [base]  # `from pkg import submodule` loads the submodule


def _named_import(node: ast.Call) -> str | None:
    """The module an ``importlib.import_module`` / ``__import__`` call or a ``LazyModule`` (the CLI's import on
    first use) names (its constant head for an f-string: ``f"pkg.catalog.{x}"`` loads something under
    ``pkg.catalog``); None for other calls."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if called not in ("import_module", "__import__", "LazyModule") or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return str(arg.values[0].value).rstrip(".") or None
    return None


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its code (``importlib.import_module``
    of a named module too: an import the statements do not show is still one)."""
    known = modules(root, package)
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in known.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            found = []
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found = _imported(name, is_package, node, known)
            elif isinstance(node, ast.Call) and _named_import(node):
                found = [_named_import(node)]
            for target in found:
                while target and target not in known and "." in target:
                    target = target.rsplit(".", 1)[0]  # `import a.b.c` where c is an attribute
                if target in known and target != package and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def layer_name(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports that point up the layers, or into validation from outside the shells."""
    problems = []
    for source, targets in sorted(graph.items()):
        src = layer_name(source)
        for target in sorted(targets):
            dst = layer_name(target)
            if dst == src:
                continue
            if dst == MAINTENANCE:
                if src not in MAINTENANCE_IMPORTED_BY:
                    problems.append(f"{source} imports {target}: only the shells import validation")
            elif src == MAINTENANCE:
                if LAYERS[dst] > MAINTENANCE_IMPORTS_UP_TO:
                    problems.append(f"{source} imports {target}: validation imports catalog … search only")
            elif LAYERS[dst] > LAYERS[src]:
                problems.append(f"{source} (layer {LAYERS[src]}) imports {target} (layer {LAYERS[dst]}): upward")
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan): each is an import cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def unlayered(graph: dict[str, set[str]]) -> list[str]:
    return sorted(m for m in graph if layer_name(m) not in {*LAYERS, MAINTENANCE, None})


GRAPH = import_graph(SRC, PACKAGE)


def test_every_module_has_a_layer():
    assert unlayered(GRAPH) == []


def test_no_import_points_up_the_layers():
    assert layer_violations(GRAPH) == []


def test_no_import_cycles():
    assert cycles(GRAPH) == []


def test_the_graph_sees_imports_inside_functions_and_relative_ones():
    assert len(GRAPH) > 50
    assert "inferplan.deploy" in GRAPH["inferplan.measurements.acceptance"]
    assert "inferplan.catalog.loader" in GRAPH["inferplan.memory.fit"]
    assert "inferplan.validation.speed" in set().union(*(GRAPH[m] for m in GRAPH if m.startswith("inferplan.shells")))
    assert "inferplan.shells.render_fits" in GRAPH["inferplan.shells.cli"]  # LazyModule("inferplan.shells.render_fits")


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "fake" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "fake"


CLEAN = {
    "__init__.py": "",
    "errors.py": "",
    "catalog/__init__.py": "",
    "catalog/loader.py": "from fake.errors import *\n",
    "memory/__init__.py": "",
    "memory/fit.py": "from fake.catalog import loader\n",
    "validation/__init__.py": "",
    "validation/speed.py": "import fake.memory.fit\n",
    "shells/__init__.py": "",
    "shells/cli.py": "from fake.validation.speed import run\n",
}


def test_the_checker_passes_a_clean_package(tmp_path):
    graph = import_graph(_write(tmp_path, CLEAN), "fake")
    assert graph["fake.shells.cli"] == {"fake.validation.speed"}
    assert layer_violations(graph) == [] and cycles(graph) == [] and unlayered(graph) == []


@pytest.mark.parametrize(("rel", "text", "expected"), [
    ("catalog/loader.py", "def f():\n    from fake.memory.fit import plan\n", "fake.catalog.loader (layer 1) imports fake.memory.fit"),
    ("catalog/loader.py", "from ..memory import fit\n", "fake.catalog.loader (layer 1) imports fake.memory.fit"),
    ("errors.py", "import fake.catalog.loader\n", "fake.errors (layer 0) imports fake.catalog.loader"),
    ("memory/fit.py", "from fake.validation import speed\n", "only the shells import validation"),
    ("validation/speed.py", "from fake.shells import cli\n", "validation imports catalog … search only"),
    ("catalog/loader.py", "import importlib\ndef f():\n    return importlib.import_module('fake.memory.fit')\n",
     "fake.catalog.loader (layer 1) imports fake.memory.fit"),
    ("catalog/loader.py", "from importlib import import_module\ndef f(x):\n    return import_module(f'fake.memory.{x}')\n",
     "fake.catalog.loader (layer 1) imports fake.memory"),
])
def test_the_checker_catches_a_planted_upward_import(tmp_path, rel, text, expected):
    graph = import_graph(_write(tmp_path, {**CLEAN, rel: text}), "fake")
    assert any(expected in p for p in layer_violations(graph)), layer_violations(graph)


def test_the_checker_catches_a_planted_cycle_within_a_layer(tmp_path):
    files = {**CLEAN, "memory/kv.py": "from . import fit\n",
             "memory/fit.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from fake.memory.kv import x\n"}
    graph = import_graph(_write(tmp_path, files), "fake")
    assert cycles(graph) == [["fake.memory.fit", "fake.memory.kv"]]


def test_the_checker_catches_a_module_outside_the_layers(tmp_path):
    graph = import_graph(_write(tmp_path, {**CLEAN, "gadgets.py": ""}), "fake")
    assert unlayered(graph) == ["fake.gadgets"]
