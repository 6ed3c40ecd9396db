"""The properties every fuzz case must keep, in process and on the command line.

In process, a reader or the converter either succeeds or raises the product's ``InputError``,
whose one-line message names the input; nothing else escapes, and nothing runs past
:data:`~tests.fuzz.cases.LIMIT_S`. On the command line, the exit status is 0 or 2; on 2 stderr is
exactly one line, ``tb-ad-layer: error: ...``, naming the input, with no traceback and no Python
exception text; the process ends within the limit. After a failed conversion the previous run is
unchanged byte for byte, and no conversion leaves a ``.run.sqlite.tmp-*`` behind. A dump in which
a node reads its own value is never accepted: no FX graph holds one.
"""
from __future__ import annotations

import hashlib
import re
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import pytest

from tb_ad_layer.errors import InputError
from tests.fuzz.cases import LIMIT_S, Case
from tests.fuzz.classes import node_reads_itself
from tests.fuzz.inputs import DumpInput

_CONSOLE_SCRIPT = Path(sys.executable).with_name("tb-ad-layer")
CLI = [str(_CONSOLE_SCRIPT)] if _CONSOLE_SCRIPT.is_file() else [sys.executable, "-m", "tb_ad_layer.cli"]
#: Words of Python's own exception messages: the user gets the product's words instead.
PYTHON_TEXT = ("Traceback", "sys.set_int_max_str_digits", "invalid literal for int()", "'NoneType' object",
               "not supported between instances", "unhashable type", "object is not subscriptable",
               "object has no attribute", "too large to convert", "codec can't", "index out of range",
               "maximum recursion depth", "positional argument", "division by zero", "math domain error",
               "cannot convert float", "out of range for", 'File "')
_EXCEPTION_NAME = re.compile(r"\b[A-Z][A-Za-z]*(?:Error|Exception)\b")
#: A dump file name the converter reads from a directory.
_STAGE_FILE = re.compile(r"\d{3,}_.+\.txt")
TEMP_GLOB = ".run.sqlite.tmp-*"


class Hang(BaseException):
    """The case ran past the limit (a BaseException, so that no ``except Exception`` in the
    product can swallow it)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` in the block once ``seconds`` have passed (Python code only: a
    command-line case is stopped by its process limit instead)."""
    def expire(signum: int, frame: FrameType | None) -> None:
        raise Hang()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def shown(path: Path) -> str:
    """``path`` as the product prints it on stderr (Python writes bytes of a file name that are
    not UTF-8 as backslash escapes there)."""
    return str(path).encode("utf-8", "backslashreplace").decode("utf-8")


def check_message(case: Case, message: str, names: Path) -> None:
    """One line, naming ``names`` (the input or its directory), in the product's words."""
    problems = []
    if "\n" in message.strip():
        problems.append("more than one line")
    if shown(names) not in message and str(names) not in message:
        problems.append(f"does not name {names}")
    leaked = [w for w in PYTHON_TEXT if w in message] + _EXCEPTION_NAME.findall(message)
    if leaked:
        problems.append(f"Python exception text {leaked}")
    if problems:
        pytest.fail(f"{case.describe()}\nerror message {'; '.join(problems)}:\n{message}", pytrace=False)


def in_process(case: Case, action: Callable[[], object], names: Path) -> InputError | None:
    """Run ``action``: None when it succeeds, the ``InputError`` when it refuses the input; any
    other exception, or running past the limit, fails the case."""
    t0 = time.monotonic()
    refused: InputError | None = None
    escaped = ""
    try:
        with time_limit(LIMIT_S):
            action()
    except InputError as err:
        refused = err
    except Hang:
        escaped = f"ran over {LIMIT_S:.0f} s"
    except Exception as err:
        tb = "".join(traceback.format_exception(err)[-12:])
        escaped = f"{type(err).__name__} escaped instead of InputError:\n{tb}"
    elapsed = time.monotonic() - t0
    if escaped:
        pytest.fail(f"{case.describe()}\n{escaped}", pytrace=False)
    if elapsed > LIMIT_S:
        pytest.fail(f"{case.describe()}\ntook {elapsed:.1f} s (limit {LIMIT_S:.0f} s)", pytrace=False)
    if refused is not None:
        check_message(case, str(refused), names)
    return refused


@dataclass
class CliRun:
    code: int
    stdout: str
    stderr: str


def run_cli(case: Case, args: list[str], names: Path, cwd: Path) -> CliRun:
    """Run ``tb-ad-layer ARGS`` as its own process and check the exit status and stderr."""
    command = CLI + args
    try:
        proc = subprocess.run(command, capture_output=True, timeout=LIMIT_S, cwd=cwd)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case.describe()}\n`{' '.join(args)}` ran over {LIMIT_S:.0f} s", pytrace=False)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    command = " ".join(shown(Path(a)) for a in args)
    where = f"{case.describe()}\n`tb-ad-layer {command}` exited {proc.returncode}"
    if proc.returncode not in (0, 2):
        pytest.fail(f"{where} (expected 0 or 2); stderr:\n{err[-3000:]}", pytrace=False)
    if "Traceback" in out + err:
        pytest.fail(f"{where} with a traceback:\n{err[-3000:]}", pytrace=False)
    lines = err.splitlines()
    if proc.returncode == 2:
        if len(lines) != 1 or not lines[0].startswith("tb-ad-layer: error: "):
            pytest.fail(f"{where}; expected one line 'tb-ad-layer: error: ...' on stderr, got "
                        f"{len(lines)}:\n{err[-3000:]}", pytrace=False)
        check_message(case, lines[0], names)
    else:
        stray = [line for line in lines if not line.startswith("tb-ad-layer: warning: ")]
        if stray:
            pytest.fail(f"{where}; stderr holds more than warnings:\n{err[-3000:]}", pytrace=False)
    return CliRun(proc.returncode, out, err)


def snapshot(run_dir: Path) -> dict[str, str]:
    """SHA-256 of every file under a run directory, by relative path."""
    return {str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


def check_store_after(case: Case, run_dir: Path, before: dict[str, str], failed: bool) -> None:
    """No temporary store left; after a failure, the run directory exactly as it was."""
    left = sorted(run_dir.rglob(TEMP_GLOB))
    if left:
        pytest.fail(f"{case.describe()}\ntemporary store(s) left behind: {left}", pytrace=False)
    if failed:
        after = snapshot(run_dir)
        if after != before:
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            pytest.fail(f"{case.describe()}\na failed conversion changed the previous run: {changed}",
                        pytrace=False)


def check_not_accepted_if_invalid(dump: DumpInput, accepted: bool) -> None:
    """A converted dump whose mutated file holds a node reading itself: the reader let an
    invalid graph through."""
    path = dump.case.kept
    assert path is not None
    read = dump.target == path or _STAGE_FILE.fullmatch(path.name) is not None
    if accepted and read and node_reads_itself(path):
        pytest.fail(f"{dump.case.describe()}\naccepted a dump in which a node reads its own value",
                    pytrace=False)
