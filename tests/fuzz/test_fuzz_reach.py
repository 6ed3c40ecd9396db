"""The default fuzz run builds the inputs that broke the readers before: NaN and infinite times,
numbers beyond 64 bits, JSON nested 100,000 deep and nsys string ids that point nowhere (trace
readers); a layer index beyond 64 bits and a node that reads itself (dump reader).

For each class, the cases of the default run (:data:`~tests.fuzz.cases.DEFAULT_COUNT` dump
cases, this seed) whose first mutation aims at it are built in turn until one holds it; the test
fails when none does, so that a change to the mutations cannot quietly stop reaching them (its
message lists the cases that aimed at the class). No source holds any of these classes before it
is mutated (:func:`test_sources_hold_none`), so reaching one is the mutation's doing.
"""
from __future__ import annotations

import gzip
import re
import sqlite3
import zlib
from pathlib import Path
from typing import Callable

import pytest

from tests.fuzz.cases import DEFAULT_COUNT, SHARE
from tests.fuzz.inputs import (GZIP_MAGIC, build_dump, build_trace, dump_plan, dump_sources, trace_plan,
                               trace_sources)
from tests.fuzz.sqlite_mutations import ID_COLUMNS

_SELF_LINE = re.compile(rb"^%([A-Za-z_]\w*) = [^(]*\((.*)\) : ", re.MULTILINE)


def _json_text(path: Path) -> bytes:
    data = path.read_bytes()
    if data.startswith(GZIP_MAGIC):
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            return b""
    return data


def non_finite_time(path: Path) -> bool:
    return re.search(rb'"(?:ts|dur)"\s*:\s*-?(?:NaN|Infinity|1e400)', _json_text(path)) is not None


def beyond_64_bits(path: Path) -> bool:
    return re.search(rb'"(?:ts|dur|device|stream|correlation)"\s*:\s*-?(?:\d{20,}|1e30)\b',
                     _json_text(path)) is not None


def nested_100000_deep(path: Path) -> bool:
    text = _json_text(path)
    return b"[" * 100_000 in text or b'{"a": ' * 100_000 in text


def dangling_string_id(path: Path) -> bool:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "StringIds" not in tables:
            return False
        for table, columns in ID_COLUMNS:
            if table not in tables:
                continue
            have = {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}
            for col in columns:
                if col in have and conn.execute(
                        f'SELECT 1 FROM "{table}" t LEFT JOIN StringIds s ON s.id = t."{col}" '
                        f'WHERE typeof(t."{col}") IN (\'integer\', \'real\') AND s.id IS NULL LIMIT 1').fetchone():
                    return True
        return False
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def layer_index_beyond_64_bits(path: Path) -> bool:
    # Past a signed 64-bit integer (what SQLite and C hold).
    return any(len(m.group(1)) > 19 or int(m.group(1)) >= 1 << 63 for m in
               re.finditer(rb"(?:layers|layer|h|blocks)[_.](\d{19,})[_.]", path.read_bytes()))


def node_reads_itself(path: Path) -> bool:
    return any(re.search(rb"(?:%|\[|, )" + m.group(1) + rb"\b", m.group(2)) is not None
               for m in _SELF_LINE.finditer(path.read_bytes()))


#: Class -> (family, mutation aiming at it, test of a built input).
CLASSES: dict[str, tuple[str, str, Callable[[Path], bool]]] = {
    "NaN or infinite time": ("trace", "non_finite_times", non_finite_time),
    "time or id beyond 64 bits": ("trace", "beyond_64_bits", beyond_64_bits),
    "JSON nested 100,000 deep": ("trace", "deep_nesting", nested_100000_deep),
    "nsys string id pointing nowhere": ("trace", "dangling_ids", dangling_string_id),
    "layer index beyond 64 bits": ("dump", "layer_index_overflow", layer_index_beyond_64_bits),
    "node reading itself": ("dump", "self_reference", node_reads_itself),
}


@pytest.mark.parametrize("name", list(CLASSES))
def test_default_run_reaches(name: str, tmp_path: Path) -> None:
    family, kind, holds = CLASSES[name]
    count = round(DEFAULT_COUNT * SHARE[family])
    plan = dump_plan if family == "dump" else trace_plan
    tried = []
    for i in range(count):
        if plan(i)[1] != kind:
            continue
        case_id = f"{family}-{i:04d}"
        if family == "dump":
            path = build_dump(case_id, tmp_path / case_id).case.kept
        else:
            path = build_trace(case_id, tmp_path / case_id).path
        assert path is not None
        if holds(path):
            return
        tried.append(case_id)
    pytest.fail(f"no case of the default run builds a {name} input (cases aiming at it: "
                f"{', '.join(tried) or 'none'})")


def test_sources_hold_none() -> None:
    for name, (family, _, holds) in CLASSES.items():
        for source in (dump_sources() if family == "dump" else trace_sources()):
            assert not holds(source), f"{source} already holds a {name} input"
