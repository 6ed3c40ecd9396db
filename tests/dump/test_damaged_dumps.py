"""Damaged dumps that got past the reader's checks until the fuzz suite (``tests/fuzz``) built
them: each now ends in a one-line error naming the file, and the previous run is kept."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tb_ad_layer.convert import convert
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.errors import InputError
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.store.writer import store_path
from tests.conftest import DUMPS

REAL = Path(__file__).resolve().parents[3] / "shared" / "dumps" / "real_writer"
SOURCE = DUMPS / "ad_llama" / "085_compile_compile_model.txt"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_module_count_of_thousands_of_digits_is_not_a_count(tmp_path: Path) -> None:
    # The header's count is informative only; Python refuses to convert 5,000 digits.
    text = (REAL / "export_llama3l" / "001_export_export_to_gm.txt").read_text()
    assert "# GraphModules found: 1\n" in text
    path = tmp_path / "001_export_export_to_gm.txt"
    path.write_text(text.replace("# GraphModules found: 1\n", "# GraphModules found: " + "9" * 5000 + "\n"))
    dump = parse_dump(path)
    assert dump.declared_modules is None and dump.module_names() == ["(root)"]


def test_file_counter_beyond_64_bits_is_refused(tmp_path: Path) -> None:
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path / "logs", run="r"))
    before = _digest(store_path(tmp_path / "logs", "r"))
    dump_dir = tmp_path / "ad_llama"
    dump_dir.mkdir()
    path = dump_dir / f"{1 << 64}_compile_compile_model.txt"
    shutil.copyfile(SOURCE, path)
    message = "the counter 18446744073709551616 of this file name is out of range"
    with pytest.raises(InputError, match=message) as err:
        convert(ConvertOptions(dump_dir, tmp_path / "logs", run="r"))
    assert err.value.path == str(path)
    assert _digest(store_path(tmp_path / "logs", "r")) == before


def test_dump_path_not_utf8_is_refused(tmp_path: Path) -> None:
    # A byte that is not UTF-8 in the name of a dump file (a Latin-1 file system): the run store
    # records paths as UTF-8 text.
    dump_dir = tmp_path / "ad_llama"
    dump_dir.mkdir()
    path = dump_dir / "085_compile_compile_mod\udce9l.txt"
    shutil.copyfile(SOURCE, path)
    message = "path is not UTF-8 text, which the run store records; rename it"
    with pytest.raises(InputError, match=message) as err:
        convert(ConvertOptions(dump_dir, tmp_path / "logs", run="r"))
    assert err.value.path == str(path) and not (tmp_path / "logs").exists()
    # As its own process: Python writes such a name on stderr with a backslash escape.
    proc = subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", "convert", str(dump_dir), "--logdir",
                           str(tmp_path / "logs"), "--run", "r", "-q"], capture_output=True, text=True,
                          errors="replace")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "085_compile_compile_mod\\udce9l.txt: the path is not UTF-8 text" in proc.stderr
