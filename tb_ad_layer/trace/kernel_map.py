"""The FX-op -> GPU-kernel table, kept as data (``kernel_map.json``) that users can extend.

A file is a JSON list of rows ``{"op": REGEX, "kernels": [REGEX, ...], "note": TEXT}`` (an object
``{"rows": [...]}`` is accepted too). ``op`` is searched in the FX node target
(``auto_deploy.torch_linear_simple.default``); each ``kernels`` entry is one slot that one kernel
of that node can fill, searched in the kernel's short family name and in its full name, so a row
listing three patterns lets one node take up to three kernels (fp8 linear = quantise + pack +
GEMM). List the slots in launch order: mapping preserves it. Unfilled slots are fine (a build
may skip a kernel). Matching ignores case. The first row whose ``op`` matches a node decides; rows of a user
file (``--kernel-map FILE``) come before the built-in ones.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tb_ad_layer.errors import InputError

BUILTIN_PATH = Path(__file__).with_name("kernel_map.json")


@dataclass(frozen=True)
class MapRow:
    """One table row with its patterns compiled. ``source`` is the file it came from."""

    op: str
    kernels: tuple[str, ...]
    note: str
    source: str
    op_re: re.Pattern[str]
    kernel_res: tuple[re.Pattern[str], ...]

    def slot_accepts(self, slot: int, short: str, full: str) -> bool:
        """Whether kernel (short, full) can fill slot ``slot`` of this row."""
        pat = self.kernel_res[slot]
        return pat.search(short) is not None or pat.search(full) is not None

    def accepts(self, short: str, full: str) -> bool:
        """Whether any slot of this row accepts the kernel."""
        return any(self.slot_accepts(j, short, full) for j in range(len(self.kernel_res)))


class KernelMap:
    """Ordered rows; ``row_for_op`` gives the row deciding a node's kernels (cached per op)."""

    def __init__(self, rows: list[MapRow]) -> None:
        self.rows = rows
        self._op_cache: dict[str, MapRow | None] = {}
        self._any_cache: dict[tuple[str, str], bool] = {}
        self._row_cache: dict[tuple[int, str, str], bool] = {}

    def row_for_op(self, op: str) -> MapRow | None:
        """The first row whose ``op`` pattern matches ``op``, or None (the node launches nothing)."""
        if op not in self._op_cache:
            self._op_cache[op] = next((r for r in self.rows if r.op_re.search(op)), None)
        return self._op_cache[op]

    def any_row_accepts(self, short: str, full: str) -> bool:
        """Whether some row of the table accepts the kernel at all (cached per name)."""
        key = (short, full)
        got = self._any_cache.get(key)
        if got is None:
            got = self._any_cache[key] = any(r.accepts(short, full) for r in self.rows)
        return got

    def row_accepts(self, row: MapRow, short: str, full: str) -> bool:
        """``row.accepts(short, full)``, cached per row and name (the same names recur in every
        layer)."""
        key = (id(row), short, full)
        got = self._row_cache.get(key)
        if got is None:
            got = self._row_cache[key] = row.accepts(short, full)
        return got

    def as_json(self) -> list[dict[str, Any]]:
        """The rows in file shape (for writing next to a run)."""
        return [{"op": r.op, "kernels": list(r.kernels), "note": r.note} for r in self.rows]


def _compile(pattern: Any, path: Path, field: str) -> re.Pattern[str]:
    if not isinstance(pattern, str) or not pattern:
        raise InputError("must be a non-empty string (regular expression)", path=path, field=field)
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as err:
        raise InputError(f"invalid regular expression: {err}", path=path, field=field) from None


def parse_rows(doc: Any, path: Path) -> list[MapRow]:
    """Validate a decoded kernel-map document; bad content raises ``InputError`` naming the field."""
    rows = doc.get("rows") if isinstance(doc, dict) else doc
    if not isinstance(rows, list):
        raise InputError("kernel map must be a JSON list of {op, kernels, note} rows (or {\"rows\": [...]})",
                         path=path, field="rows")
    out = []
    for i, row in enumerate(rows):
        where = f"[{i}]"
        if not isinstance(row, dict):
            raise InputError("row must be an object with 'op' and 'kernels'", path=path, field=where)
        unknown = set(row) - {"op", "kernels", "note"}
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(sorted(unknown))}; allowed: op, kernels, note",
                             path=path, field=f"{where}.{sorted(unknown)[0]}")
        op_re = _compile(row.get("op"), path, f"{where}.op")
        kernels = row.get("kernels")
        if not isinstance(kernels, list) or not kernels:
            raise InputError(
                "must be a non-empty list of regular expressions", path=path, field=f"{where}.kernels"
            )
        kernel_res = tuple(_compile(k, path, f"{where}.kernels[{j}]") for j, k in enumerate(kernels))
        note = row.get("note", "")
        if not isinstance(note, str):
            raise InputError("must be a string", path=path, field=f"{where}.note")
        out.append(MapRow(op=row["op"], kernels=tuple(kernels), note=note, source=str(path),
                          op_re=op_re, kernel_res=kernel_res))
    return out


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot read kernel map ({err.strerror or err})", path=path) from None
    except UnicodeDecodeError:
        raise InputError("kernel map is not UTF-8 text", path=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            f"invalid JSON: {err.msg} (column {err.colno})", path=path, line=err.lineno
        ) from None


@lru_cache(maxsize=1)
def _builtin_rows() -> tuple[MapRow, ...]:
    return tuple(parse_rows(_read_json(BUILTIN_PATH), BUILTIN_PATH))


def load_kernel_map(extra: Path | str | None = None) -> KernelMap:
    """The built-in table, preceded by the rows of ``extra`` (a user file) when given."""
    rows = list(_builtin_rows())
    if extra is not None:
        rows = parse_rows(_read_json(Path(extra)), Path(extra)) + rows
    return KernelMap(rows)


#: The op a node is mapped under when a compiler recorded its kernels (Inductor's provenance).
PROVENANCE_OP = "provenance:"


def provenance_op(kernel_names: tuple[str, ...]) -> str:
    """The op text of a node whose kernels a compiler named: ``provenance:k1|k2``; the rows
    :func:`with_provenance` adds match it, and only it."""
    return PROVENANCE_OP + "|".join(kernel_names)


def with_provenance(kmap: KernelMap, kernel_names: dict[str, tuple[str, ...]]) -> KernelMap:
    """``kmap`` preceded by one row per distinct kernel list a compiler recorded for nodes
    (Inductor's provenance in a torch.compile log): a node whose kernels are named takes
    exactly those kernels, in its recorded order, before any family rule is tried."""
    if not kernel_names:
        return kmap
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, ...]] = set()
    for names in kernel_names.values():
        if names in seen or not names:
            continue
        seen.add(names)
        rows.append({"op": "^" + re.escape(provenance_op(names)) + "$",
                     "kernels": [r"(?:^|\W)" + re.escape(k) + r"(?:$|\W)" for k in names],
                     "note": "Inductor provenance"})
    return KernelMap(parse_rows(rows, Path("<provenance>")) + kmap.rows)
