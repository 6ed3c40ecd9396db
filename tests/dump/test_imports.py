"""The dump package's modules import each other without a cycle.

Each module has one job, and the one that joins sections into a graph is a step the reader
uses, not one that needs the reader: a cycle means two modules share a job. Imports inside
functions count too, since they only hide a cycle from the import system.
"""
from __future__ import annotations

import ast
from pathlib import Path

import tb_ad_layer.dump

PACKAGE = "tb_ad_layer.dump"
DUMP_DIR = Path(tb_ad_layer.dump.__file__).parent


def _imports(path: Path) -> set[str]:
    """The modules of the dump package that ``path`` imports, anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found.update(n for n in names if n.startswith(PACKAGE + ".") and n.count(".") == 2)
    return found


def _graph() -> dict[str, set[str]]:
    modules = {f"{PACKAGE}.{p.stem}": p for p in DUMP_DIR.glob("*.py") if p.stem != "__init__"}
    return {name: _imports(path) & modules.keys() for name, path in modules.items()}


def test_the_graph_sees_every_module() -> None:
    graph = _graph()
    assert {"tb_ad_layer.dump.reader", "tb_ad_layer.dump.sections"} <= graph.keys()
    assert "tb_ad_layer.dump.sections" in graph["tb_ad_layer.dump.reader"]


def test_no_module_of_the_dump_package_imports_itself_back() -> None:
    graph = _graph()
    for start in graph:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            name = todo.pop()
            assert name != start, f"{start} imports itself back through {sorted(seen)}"
            if name not in seen:
                seen.add(name)
                todo.extend(graph[name])
