"""Format detection by content and every kind of unreadable input."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.reader import read_trace
from tests.trace.helpers import FIXTURES, HTA


def test_dispatch_by_content_not_extension(tmp_path: Path) -> None:
    sqlite_as_json = tmp_path / "trace.json"
    shutil.copy(FIXTURES / "dsv3_decode.sqlite", sqlite_as_json)
    assert read_trace(sqlite_as_json).format == "nsys-sqlite"
    gz_without_suffix = tmp_path / "trace.bin"
    shutil.copy(HTA, gz_without_suffix)
    assert read_trace(gz_without_suffix).format == "torch-profiler"


def test_missing_empty_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such trace file"):
        read_trace(tmp_path / "nope.sqlite")
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        read_trace(empty)
    with pytest.raises(InputError, match="not a file"):
        read_trace(tmp_path)


def test_non_sqlite_with_sqlite_name(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    path.write_bytes(b"this is not a database at all\n" * 10)
    with pytest.raises(InputError, match="not a SQLite database") as err:
        read_trace(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_unknown_format(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_bytes(b"\x00\x01binary")
    with pytest.raises(InputError, match="unrecognised trace format"):
        read_trace(path)


def test_corrupt_sqlite(tmp_path: Path) -> None:
    data = bytearray((FIXTURES / "dsv3_decode.sqlite").read_bytes())
    data[100:60000] = b"\xff" * (60000 - 100)  # keep the magic, destroy schema and pages
    path = tmp_path / "corrupt.sqlite"
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="SQLite|corrupt"):
        read_trace(path)


def test_truncated_sqlite(tmp_path: Path) -> None:
    data = (FIXTURES / "dsv3_decode.sqlite").read_bytes()
    path = tmp_path / "cut.sqlite"
    path.write_bytes(data[:8192])
    with pytest.raises(InputError):
        read_trace(path)


def test_sqlite_without_kernel_tables(tmp_path: Path) -> None:
    path = tmp_path / "nokernels.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    conn.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
    conn.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, nameId INT)")
    conn.commit()
    conn.close()
    with pytest.raises(InputError, match="without kernel tables") as err:
        read_trace(path)
    assert err.value.field == "CUPTI_ACTIVITY_KIND_KERNEL"
    plain = tmp_path / "plain.sqlite"
    conn = sqlite3.connect(plain)
    conn.execute("CREATE TABLE t (a INT)")
    conn.commit()
    conn.close()
    with pytest.raises(InputError, match="a SQLite file without kernel tables"):
        read_trace(plain)


def test_truncated_json(tmp_path: Path) -> None:
    path = tmp_path / "t.pt.trace.json"
    path.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur"')
    with pytest.raises(InputError, match="invalid or truncated JSON") as err:
        read_trace(path)
    assert err.value.line == 1
