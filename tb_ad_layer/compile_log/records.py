"""The records of torch.compile's structured log (``TORCH_TRACE=/dir``).

Each process writes ``dedicated_log_torch_trace_<random>.log`` (``rank_<R>_...`` under
distributed; ``torch/_logging/_internal.py``). A record is one header line, a glog prefix
(``V1127 23:10:44.411000 23372 torch/_dynamo/output_graph.py:2841]``) then a JSON object with
one event key (``dynamo_output_graph``, ``artifact``...) and ``frame_id``, ``frame_compile_id``,
``attempt``, ``has_payload``, followed by its payload lines, each starting with a tab.
"""
from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tb_ad_layer.errors import InputError

LOG_GLOB: Final = "*.log"
_NAME: Final = re.compile(r"(?:rank_\d+_)?dedicated_log_torch_trace_.*\.log(?:\.gz)?$")
_PREFIX: Final = re.compile(r"^(?:\[rank\d+\]:)?[VIWEC]\d{4} ")


@dataclass(slots=True)
class Record:
    """One structured-log record: its event key and metadata, where it came from, and its
    payload text (the tab-prefixed lines without their tab; empty without a payload)."""

    event: str
    meta: dict[str, Any]
    frame_id: int | None
    frame_compile_id: int | None
    attempt: int
    rank: int | None
    line: int
    payload: str
    payload_line: int

    @property
    def compile_id(self) -> str:
        """``F/C`` (``-`` where the record names no frame)."""
        if self.frame_id is None:
            return "-"
        return f"{self.frame_id}/{self.frame_compile_id if self.frame_compile_id is not None else 0}"

    @property
    def artifact(self) -> str:
        """The artifact's name for an ``artifact`` record, else empty."""
        if self.event == "artifact":
            name = self.meta.get("name")
            return name if isinstance(name, str) else ""
        return ""


def log_files(path: str | Path) -> list[Path]:
    """The structured-log files of a TORCH_TRACE directory (or the one file given), sorted; empty
    when there are none."""
    p = Path(path)
    if p.is_file():
        return [p] if _NAME.search(p.name) or looks_like_log(p) else []
    if not p.is_dir():
        return []
    try:
        return sorted(f for f in p.iterdir() if f.is_file() and _NAME.search(f.name))
    except OSError:
        return []


def looks_like_log(path: Path) -> bool:
    """Whether the file starts like a structured log record (a glog prefix, then JSON)."""
    try:
        with _open(path) as fh:
            first = fh.readline(1 << 16)
    except (OSError, UnicodeDecodeError, EOFError, zlib.error, gzip.BadGzipFile):
        return False
    return bool(_PREFIX.match(first)) and "{" in first


def is_torch_trace(path: str | Path) -> bool:
    """Whether ``path`` is a TORCH_TRACE directory (or one of its log files)."""
    return bool(log_files(path))


def _open(path: Path) -> Any:
    with open(path, "rb") as fh:
        head = fh.read(2)
    if head == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_records(path: Path) -> Iterator[Record]:
    """The records of one log file, in file order.

    Raises:
        InputError: the file cannot be read, is not UTF-8, or a header's JSON is damaged.
    """
    try:
        with _open(path) as fh:
            yield from _records(path, fh)
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text at byte {e.start}", path=path) from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise InputError(f"truncated or corrupt gzip data ({e})", path=path) from None
    except OSError as e:
        raise InputError(f"cannot read the log: {e.strerror or e}", path=path) from None


def _records(path: Path, fh: Any) -> Iterator[Record]:
    header: tuple[dict[str, Any], int] | None = None
    payload: list[str] = []
    payload_line = 0
    lineno = 0
    for raw in fh:
        lineno += 1
        line = raw.rstrip("\n")
        if line.startswith("\t"):
            if not payload:
                payload_line = lineno
            payload.append(line[1:])
            continue
        if header is not None:
            yield _record(header[0], header[1], payload, payload_line)
        header, payload = None, []
        if not line.strip():
            continue
        start = line.find("{")
        if start < 0 or not _PREFIX.match(line):
            continue  # not a record (a stray line a handler wrote)
        try:
            doc, _ = json.JSONDecoder().raw_decode(line, start)
        except json.JSONDecodeError as e:
            raise InputError(f"damaged record header ({e.msg})", path=path, line=lineno) from None
        if isinstance(doc, dict):
            header = (doc, lineno)
    if header is not None:
        yield _record(header[0], header[1], payload, payload_line)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _record(doc: dict[str, Any], line: int, payload: list[str], payload_line: int) -> Record:
    reserved = {"frame_id", "frame_compile_id", "attempt", "has_payload", "rank",
                "compiled_autograd_id", "subgraph_name", "stack"}
    event = next((k for k in doc if k not in reserved), "")
    meta = doc.get(event)
    return Record(event=event, meta=meta if isinstance(meta, dict) else {},
                  frame_id=_int(doc.get("frame_id")),
                  frame_compile_id=_int(doc.get("frame_compile_id")),
                  attempt=_int(doc.get("attempt")) or 0, rank=_int(doc.get("rank")), line=line,
                  payload="\n".join(payload), payload_line=payload_line)
