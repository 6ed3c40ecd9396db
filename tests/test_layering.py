"""The package's one-way data flow, enforced: each part imports only the parts upstream of it.

dump -> layers, trace beside them, joined by the pipeline (convert, trace_attach, cli) -> store ->
export, analysis -> plugin. The flow is described in the package docstring and the README; this
test keeps the description true. Every import counts: top level, inside functions (a lazy import
is still a dependency), ``TYPE_CHECKING`` blocks and relative imports. A part of the package that
is not in the table fails the test: a new part states what it may read.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tb_ad_layer"

#: Part of the package (a subpackage or a top-level module) -> the parts it may import.
_LEAVES: frozenset[str] = frozenset()
ALLOWED: dict[str, frozenset[str]] = {
    # The package's own __init__: the version, the guard against stale compiled modules, and
    # export_model (importing live/ and convert only when called).
    "<package>": frozenset({"_compiled", "convert", "live", "version"}),
    # Small shared pieces that import nothing of the package.
    "_compiled": _LEAVES,
    "version": _LEAVES,
    "metadata": _LEAVES,
    "errors": _LEAVES,
    "gc_pause": _LEAVES,
    "progress": _LEAVES,
    "options": _LEAVES,
    # The wire contract: records only, shared by every producer and consumer.
    "contract": _LEAVES,
    # Readers of the inputs, and the rules over them.
    "dump": frozenset({"errors", "progress"}),
    "layers": frozenset({"contract", "dump", "errors", "progress"}),
    # torch.compile's structured logs: read like dumps, each compiled graph layered by layers/.
    "compile_log": frozenset({"contract", "dump", "errors", "layers", "progress"}),
    "trace": frozenset({"contract", "errors", "options", "progress"}),
    # The run store knows records, never the converter that produced them.
    "store": frozenset({"contract", "errors", "metadata"}),
    # What reads the store: exports, analysis, the plugin.
    "export": frozenset({"contract", "errors", "store"}),
    "analysis": frozenset({"contract", "errors", "metadata", "store"}),
    "plugin": frozenset({"analysis", "contract", "errors", "export", "metadata", "store"}),
    # The pipeline: joins the readers and writes the store; the command line drives it.
    "convert": frozenset({"compile_log", "contract", "dump", "errors", "gc_pause", "layers",
                          "metadata", "options", "progress", "stage_pool", "store", "version"}),
    # Runs the pipeline's stages in worker processes; what they run is handed to it.
    "stage_pool": frozenset({"errors", "progress"}),
    # A live model exported and written as AutoDeploy's dumps, then converted.
    "live": frozenset({"convert", "errors", "options", "progress"}),
    # Puts a trace onto a converted stage: the one place where trace/ meets layers/.
    # Reads a multi-GPU run's rank traces in worker processes (stage_pool).
    "trace_attach": frozenset({"contract", "convert", "errors", "layers", "options", "progress",
                               "stage_pool", "store", "trace"}),
    "cli": frozenset({"analysis", "contract", "convert", "dump", "errors", "export", "layers",
                      "metadata", "options", "progress", "store", "trace", "trace_attach",
                      "version"}),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<package>"


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import of the package in ``path``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return _imports_in(path.read_text(encoding="utf-8"), package)


def _imports_in(text: str, package: str) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import of the package in source ``text`` of a module
    of ``package`` (what relative imports start from)."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            # ``from tb_ad_layer import store`` imports the part ``store``.
            names = [f"{stem}.{a.name}" if stem == "tb_ad_layer" else stem for a in node.names]
        else:
            continue
        for name in names:
            if name == "tb_ad_layer" or name.startswith("tb_ad_layer."):
                yield node.lineno, name


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "static" not in p.parts)


def test_every_part_has_an_entry() -> None:
    parts = {_part(_module_name(p)) for p in _sources()}
    missing = sorted(parts - ALLOWED.keys())
    assert not missing, f"parts of the package without an entry in ALLOWED: {missing}"


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_imports_follow_the_flow(path: Path) -> None:
    part = _part(_module_name(path))
    allowed = ALLOWED.get(part, frozenset())
    wrong = sorted({f"{path.relative_to(PACKAGE.parent)}:{line}: {part} imports {name}"
             for line, name in _imports(path)
             if _part(name) != part and _part(name) not in allowed})
    assert not wrong, "imports against the flow:\n" + "\n".join(wrong)


def test_the_rule_sees_every_kind_of_import() -> None:
    """A lazy, a relative and a ``from package import part`` import are all seen."""
    text = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .records import X\n"
            "def f():\n    from ..layers import groups\n    from tb_ad_layer import trace\n"
            "    import tb_ad_layer.dump.reader\n")
    seen = {name for _, name in _imports_in(text, "tb_ad_layer.store")}
    assert seen == {"tb_ad_layer.store.records", "tb_ad_layer.layers", "tb_ad_layer.trace",
                    "tb_ad_layer.dump.reader"}
