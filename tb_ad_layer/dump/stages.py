"""Find the transform stages of a dump directory, in pipeline order.

TensorRT-LLM names dump files ``{NNN}_{stage}_{transform}.txt`` with a counter in pipeline
order, zero-padded to 3 digits and growing past 999 (``1000_...``), so files are ordered by the
counter's value, not by name; the stage and transform names themselves may contain
underscores, so they are read from the file header (``# Stage:``, ``# Transform:``), and the
file name only orders them.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tb_ad_layer.dump.reader import read_header
from tb_ad_layer.errors import InputError

_STAGE_FILE = re.compile(r"(\d{3,})_(.+)\.txt")
#: Largest counter: the run store keeps it as a 64-bit integer (writers count transforms, a few
#: thousand at most).
MAX_ORDER = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class StageFile:
    """One dump file of a directory: ``order`` is the value of its counter prefix."""

    path: Path
    order: int
    stage: str
    transform: str

    @property
    def stem(self) -> str:
        return self.path.stem


def discover_stages(dump_dir: str | Path) -> list[StageFile]:
    """All ``NNN_stage_transform.txt`` files of ``dump_dir``, in pipeline order.

    Raises:
        InputError: the directory is missing, unreadable, or holds no dump files.
    """
    d = Path(dump_dir)
    if not d.exists():
        raise InputError("no such directory", path=d)
    if not d.is_dir():
        raise InputError("not a directory (give the dump directory, or use --dump-file)", path=d)
    try:
        entries = sorted(d.iterdir())
    except OSError as e:
        raise InputError(f"cannot list directory: {e.strerror or e}", path=d) from None
    found: list[StageFile] = []
    for p in entries:
        m = _STAGE_FILE.fullmatch(p.name)
        if not m or not p.is_file():
            continue
        order = int(m.group(1))
        if order > MAX_ORDER:
            digits = m.group(1)
            shown = digits if len(digits) <= 30 else digits[:30] + "..."
            raise InputError(f"the counter {shown} of this file name is out of range (at most "
                             f"{MAX_ORDER})", path=p)
        transform, stage = read_header(p)
        if not transform:
            # Fall back to the name: NNN_<stage>_<transform> with a one-word stage.
            rest = m.group(2)
            stage, _, transform = rest.partition("_")
            transform = transform or rest
        found.append(StageFile(path=p, order=order, stage=stage, transform=transform))
    if not found:
        raise InputError("no graph dump files (NNN_<stage>_<transform>.txt) in directory", path=d)
    found.sort(key=lambda s: (s.order, s.path.name))
    return found


def select_stages(stages: list[StageFile], which: Sequence[str] | None) -> list[StageFile]:
    """Pick stages: ``None``/``["last"]`` -> the final stage; ``["all"]`` -> every stage;
    otherwise each entry names a file (by name, stem, or NNN prefix)."""
    if not which or list(which) == ["last"]:
        return [stages[-1]]
    if list(which) == ["all"]:
        return list(stages)
    chosen: list[StageFile] = []
    for want in which:
        match = [s for s in stages
                 if want in (s.path.name, s.stem, f"{s.order:03d}", str(s.path))
                 or Path(want).name == s.path.name]
        if not match:
            names = ", ".join(s.path.name for s in stages)
            raise InputError(f"no dump file {want!r} in the directory; it has: {names}",
                             field="--stages")
        chosen.extend(m for m in match if m not in chosen)
    chosen.sort(key=lambda s: (s.order, s.path.name))
    return chosen
