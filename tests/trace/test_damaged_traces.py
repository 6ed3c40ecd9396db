"""Damaged traces that got past the readers' checks until the fuzz suite (``tests/fuzz``) built
them: each now ends in a one-line error naming the trace, or reads with the damage shown."""
from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tb_ad_layer.cli import main
from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.ingest import ingest_trace, kernel_sequences
from tb_ad_layer.trace.reader import read_trace
from tests.trace.helpers import FIXTURES, layers_from_truth, load_truth


def _one_line_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_integer_of_thousands_of_digits_is_named_in_the_products_words(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "huge.json"
    path.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": ' + "9" * 5000 + "}]}")
    err = _one_line_error(["inspect", str(path)], capsys)
    assert str(path) in err and "a number thousands of digits long" in err
    assert "set_int_max_str_digits" not in err  # Python's advice to programmers, not to the user


def test_layer_count_mismatch_names_the_trace(capsys: pytest.CaptureFixture[str]) -> None:
    trace = FIXTURES / "dsv3_decode.sqlite"
    layers = layers_from_truth(load_truth(FIXTURES / "dsv3_decode.truth.json"))[:3]
    with pytest.raises(InputError, match="trace shows 5 repeating layers but the graph has 3 layers") as err:
        ingest_trace(trace, layers)
    assert err.value.path == str(trace) and str(err.value).startswith(f"{trace} [layers]: ")


def test_trace_path_not_utf8_is_refused(tmp_path: Path) -> None:
    # A byte that is not UTF-8 in a file name (a Latin-1 file system): JSON output and the run
    # store hold text.
    path = tmp_path / "d\udce9code.sqlite"
    shutil.copyfile(FIXTURES / "dsv3_decode.sqlite", path)
    with pytest.raises(InputError, match="path is not UTF-8 text; rename it"):
        read_trace(path)
    # As its own process: Python writes such a name on stderr with a backslash escape.
    for args in (["inspect", str(path), "--json"],
                 ["convert", str(FIXTURES.parent / "dumps" / "ad_dsv3"), "--logdir", str(tmp_path / "logs"),
                  "--run", "r", "--trace", str(path), "-q"]):
        proc = subprocess.run(
            [sys.executable, "-m", "tb_ad_layer.cli", *args], capture_output=True, text=True, errors="replace"
        )
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert "d\\udce9code.sqlite: the trace's path is not UTF-8 text" in proc.stderr
    assert not (tmp_path / "logs" / "r").exists()


def test_nsys_string_not_utf8_is_shown_replaced(tmp_path: Path) -> None:
    # A kernel name cut inside a multi-byte character: read with U+FFFD, not refused.
    path = tmp_path / "cut.sqlite"
    shutil.copyfile(FIXTURES / "dsv3_decode.sqlite", path)
    conn = sqlite3.connect(path)
    name_id, text = conn.execute("SELECT id, value FROM StringIds WHERE id = "
                                 "(SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1)").fetchone()
    conn.execute("UPDATE StringIds SET value = CAST(? AS TEXT) WHERE id = ?",
                 (text.encode() + "\u00e9".encode()[:1], name_id))
    conn.commit()
    conn.close()
    db = read_trace(path)
    try:
        assert text + "\ufffd" in {k.name for k in db.kernels("1")}
    finally:
        db.close()
    assert kernel_sequences(path).num_layers == 5


def _damage(source: Path, target: Path, old: bytes, new: bytes) -> Path:
    data = source.read_bytes()
    assert old in data
    target.write_bytes(data.replace(old, new, 1))
    return target


def test_nsys_schema_damage_quoting_bytes_not_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A flipped byte in a table's name in the schema: SQLite's message quotes the damaged name,
    # which is not UTF-8 either.
    path = _damage(FIXTURES / "dsv3_graphmode.sqlite", tmp_path / "schema.sqlite",
                   b"CUPTI_ACTIVITY_KIND_MEMSET", b"CUPTI_ACTIVITY_KIND_MEMS\xc5T")
    with pytest.raises(InputError, match="malformed database schema") as err:
        read_trace(path)
    assert err.value.path == str(path)
    assert str(path) in _one_line_error(["inspect", str(path)], capsys)


def test_nsys_damaged_string_page_found_while_reading_kernels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The first StringIds page holds kernel names only: opening never reads it, the kernel names
    # are looked up there much later.
    path = tmp_path / "strings.sqlite"
    shutil.copyfile(FIXTURES / "dsv3_decode.sqlite", path)
    conn = sqlite3.connect(path)
    page = conn.execute("SELECT pageno FROM dbstat WHERE name = 'StringIds' AND pagetype = 'leaf' "
                        "ORDER BY path LIMIT 1").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())
    data[(page - 1) * size:(page - 1) * size + 8] = b"\xff" * 8  # the page header
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="corrupt or unreadable nsys export") as err:
        kernel_sequences(path)
    assert err.value.path == str(path)
    assert str(path) in _one_line_error(["kernels", str(path), "-q"], capsys)
