"""The stamp check alone, on a package directory laid out as a build leaves it: each verdict and
its reason (the import guard acts on these; test_stale_compiled.py covers it end to end)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tb_ad_layer._compiled import PURE_ENV, STAMP_FILE, check, source_sha256

MODULES = {"tb_ad_layer.dump.reader": "dump/reader.py",
           "tb_ad_layer.layers.weights": "layers/weights.py"}


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tb_ad_layer/`` with two sources and the stamp a build of them writes."""
    monkeypatch.delenv(PURE_ENV, raising=False)
    pkg = tmp_path / "tb_ad_layer"
    for rel in MODULES.values():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(f'"""{rel}"""\nVALUE = 1\n', encoding="utf-8")
    stamp = {"compiler": "mypyc 2.4.1", "library": "tb_ad_layer._native__mypyc",
             "sources": {m: source_sha256(str(pkg / rel)) for m, rel in MODULES.items()}}
    (pkg / STAMP_FILE).write_text(json.dumps(stamp), encoding="utf-8")
    return pkg


def test_sources_as_built_pass(package: Path) -> None:
    verdict = check(str(package))
    assert verdict.use_compiled and verdict.reason == ""
    assert verdict.modules == tuple(sorted(MODULES)) and verdict.compiler == "mypyc 2.4.1"


def test_one_edited_byte_refuses_the_build_and_names_the_module(package: Path) -> None:
    source = package / "layers" / "weights.py"
    source.write_text(source.read_text().replace("VALUE = 1", "VALUE = 2"))
    verdict = check(str(package))
    assert not verdict.use_compiled
    assert verdict.reason == f"tb_ad_layer.layers.weights was compiled from another version of {source}"


def test_a_deleted_source_is_a_reason_not_a_crash(package: Path) -> None:
    (package / "dump" / "reader.py").unlink()
    verdict = check(str(package))
    assert not verdict.use_compiled and "cannot read" in verdict.reason


@pytest.mark.parametrize("text, expected", [
    (None, "no build stamp at"),
    ("{not json", "unreadable build stamp"),
    ('{"compiler": "mypyc", "library": "x", "sources": ["a"]}', "unreadable build stamp"),
    ('{"sources": {}}', "unreadable build stamp"),
])
def test_missing_or_damaged_stamp_refuses(package: Path, text: str | None, expected: str) -> None:
    stamp = package / STAMP_FILE
    if text is None:
        stamp.unlink()
    else:
        stamp.write_text(text)
    verdict = check(str(package))
    assert not verdict.use_compiled and verdict.reason.startswith(expected)


def test_pure_python_switch_refuses_without_a_reason(package: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PURE_ENV, "1")
    verdict = check(str(package))
    assert not verdict.use_compiled and verdict.reason == ""
    monkeypatch.setenv(PURE_ENV, "0")
    assert check(str(package)).use_compiled
