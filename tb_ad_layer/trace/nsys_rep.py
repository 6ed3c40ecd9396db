"""Turn an ``.nsys-rep`` report into its SQLite export, which is what we can read."""
from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from tb_ad_layer.errors import InputError

REP_SUFFIXES = (".nsys-rep", ".qdrep")


def export_command(rep: Path, out: Path) -> list[str]:
    """The ``nsys export`` command line that writes ``out`` from ``rep``."""
    return ["nsys", "export", "--type", "sqlite", "--output", str(out), str(rep)]


def sqlite_for_rep(rep: str | Path, progress: Callable[[str], None] | None = None) -> Path:
    """Path of the SQLite export of ``rep``: ``<name>.sqlite`` beside it, exported first if missing.

    An existing export that is not older than the report is reused. Without ``nsys`` on PATH,
    raises ``InputError`` giving the exact command to run.
    """
    rep = Path(rep)
    out = rep.with_suffix(".sqlite")
    if out.is_file() and out.stat().st_size > 0 and out.stat().st_mtime >= rep.stat().st_mtime:
        if progress is not None:
            progress(f"using existing export {out}")
        return out
    cmd = export_command(rep, out)
    nsys = shutil.which("nsys")
    if nsys is None:
        raise InputError("is an Nsight Systems report and `nsys` is not on PATH to export it; run "
                         f"`{shlex.join(cmd)}` and pass the .sqlite file", path=rep)
    if progress is not None:
        progress(f"exporting: {shlex.join(cmd)}")
    try:
        proc = subprocess.run([nsys, *cmd[1:], "--force-overwrite", "true"], capture_output=True, text=True,
                              check=False)
    except OSError as err:
        raise InputError(f"cannot run nsys ({err}); run `{shlex.join(cmd)}` yourself", path=rep) from None
    if proc.returncode != 0 or not out.is_file():
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()
        raise InputError(f"`{shlex.join(cmd)}` failed (exit {proc.returncode})"
                         + (f": {tail[-1]}" if tail else ""), path=rep)
    return out
