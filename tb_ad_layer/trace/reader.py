"""Open any supported trace file, recognising its format by content rather than by name."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.nsys_rep import REP_SUFFIXES, sqlite_for_rep
from tb_ad_layer.trace.nsys_sqlite import read_nsys_sqlite
from tb_ad_layer.trace.torch_profiler import read_torch_profiler
from tb_ad_layer.trace.tracedb import TraceDB

SQLITE_MAGIC = b"SQLite format 3\x00"
GZIP_MAGIC = b"\x1f\x8b"
SUPPORTED = ("an nsys SQLite export (.sqlite), an nsys report (.nsys-rep) or a PyTorch profiler "
             "trace (.json, .json.gz)")


def sniff(path: Path) -> str:
    """``"sqlite"``, ``"json"``, ``"nsys-rep"`` or ``"unknown"``, from the first bytes (then the name)."""
    with open(path, "rb") as fh:
        head = fh.read(64)
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    if head.startswith(GZIP_MAGIC):
        return "json"  # only profiler traces are gzip-compressed among supported formats
    if head.lstrip()[:1] in (b"{", b"["):
        return "json"
    if path.name.lower().endswith(REP_SUFFIXES):
        return "nsys-rep"
    return "unknown"


def read_trace(path: str | Path, progress: Callable[[str], None] | None = None) -> TraceDB:
    """Open a trace file of any supported format as a ``TraceDB``.

    Raises ``InputError`` when the file is missing, empty, of an unknown format, corrupt, or an
    nsys export without kernel tables.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("no such trace file", path=path)
    if not path.is_file():
        raise InputError("trace path is not a file", path=path)
    if path.stat().st_size == 0:
        raise InputError("trace file is empty", path=path)
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        # Its name goes into JSON output and the run store, both UTF-8 text.
        raise InputError("the trace's path is not UTF-8 text; rename it", path=path) from None
    try:
        kind = sniff(path)
    except OSError as err:
        raise InputError(f"cannot read trace ({err.strerror or err})", path=path) from None
    if kind == "sqlite":
        return read_nsys_sqlite(path, progress)
    if kind == "json":
        return read_torch_profiler(path, progress)
    if kind == "nsys-rep":
        return read_nsys_sqlite(sqlite_for_rep(path, progress), progress)
    if path.suffix.lower() in (".sqlite", ".db", ".sqlite3"):
        raise InputError("not a SQLite database (bad header): corrupt or not an nsys export", path=path)
    raise InputError(f"unrecognised trace format; expected {SUPPORTED}", path=path)
