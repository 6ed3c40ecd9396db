"""Input classes that broke the readers before the fuzz suite existed, recognised in a built input.

Trace readers: NaN and infinite times, numbers beyond 64 bits, JSON nested 100,000 deep, nsys
string ids that point nowhere. Dump reader: a layer index beyond 64 bits, a node that reads its
own value. Each test reads the mutated file and says whether it holds its class.
"""
from __future__ import annotations

import gzip
import re
import sqlite3
import zlib
from collections.abc import Callable
from pathlib import Path

from tests.fuzz.inputs import GZIP_MAGIC
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
                        f'WHERE typeof(t."{col}") IN (\'integer\', \'real\') AND s.id IS NULL '
                        'LIMIT 1').fetchone():
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
    """A node line whose arguments name the node itself, as ``%name`` or first in a list (the
    forms the reader takes for references whatever the rest of the line holds)."""
    return any(re.search(rb"%" + m.group(1) + rb"(?!\w)", m.group(2)) is not None
               or m.group(2).startswith(b"[" + m.group(1) + b", ")
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
