"""Whether a build compiles: the converter's hot modules are compiled only when everything
mypyc needs is there, and a build that cannot compile says why and installs the sources."""
from __future__ import annotations

import importlib.util
import sys
from importlib.machinery import ModuleSpec

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO))
from build_support import compiled  # noqa: E402


def test_without_msgspec_the_sources_are_installed(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The compiled layer documents build msgspec records: mypyc needs msgspec's types, so an
    environment without msgspec (a build without isolation) gets the sources, not a failed
    type check."""
    pytest.importorskip("mypyc.build")
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> ModuleSpec | None:
        return None if name == "msgspec" else real_find_spec(name, package)

    monkeypatch.delenv(compiled.SWITCH, raising=False)
    monkeypatch.setattr(compiled, "missing_compiler", lambda: None)
    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert compiled.compiled_extensions(["build_ext"]) == []
    assert "msgspec is not installed" in capsys.readouterr().err


def test_commands_that_build_nothing_compile_nothing() -> None:
    assert compiled.compiled_extensions(["egg_info"]) == []
