"""``.nsys-rep`` reports: reuse the export beside them, or export with nsys, or say how."""
from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.nsys_rep import sqlite_for_rep
from tb_ad_layer.trace.reader import read_trace
from tests.trace.helpers import FIXTURES


def _rep(tmp_path: Path) -> Path:
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"NSYS-REP binary report stand-in")
    return rep


def test_existing_export_is_reused(tmp_path: Path) -> None:
    rep = _rep(tmp_path)
    time.sleep(0.01)
    shutil.copy(FIXTURES / "dsv3_decode.sqlite", tmp_path / "run.sqlite")
    assert sqlite_for_rep(rep) == tmp_path / "run.sqlite"
    assert read_trace(rep).format == "nsys-sqlite"


def test_without_nsys_the_error_gives_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rep = _rep(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(InputError) as err:
        read_trace(rep)
    msg = str(err.value)
    assert f"nsys export --type sqlite --output {tmp_path / 'run.sqlite'} {rep}" in msg
    assert msg.startswith(str(rep)) and "\n" not in msg


def test_export_runs_nsys_from_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rep = _rep(tmp_path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "nsys"
    # A stand-in nsys: `nsys export --type sqlite --output OUT REP ...` copies a known export to OUT.
    source = FIXTURES / "dsv3_decode.sqlite"
    fake.write_text(f"#!/bin/sh\nwhile [ \"$1\" != \"--output\" ]; do shift; done\ncp '{source}' \"$2\"\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    messages: list[str] = []
    td = read_trace(rep, messages.append)
    assert td.source == tmp_path / "run.sqlite" and td.kernels("1")
    assert any(m.startswith("exporting: nsys export --type sqlite") for m in messages)


def test_failing_nsys_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rep = _rep(tmp_path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "nsys"
    fake.write_text("#!/bin/sh\necho 'Error: cannot open report' >&2\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(bindir))
    with pytest.raises(InputError, match=r"failed \(exit 3\): Error: cannot open report"):
        read_trace(rep)
