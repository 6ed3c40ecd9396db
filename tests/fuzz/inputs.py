"""The real inputs the fuzz cases start from, and the building of one mutated input per case.

Dumps: every file AutoDeploy's own writer wrote (``../shared/dumps/real_writer``) and, chosen by
the seed, one stage of every model in ``tests/fixtures/dumps``. Traces: every real trace in
``../shared/traces`` and every trace fixture. Case ``i`` starts from source ``i`` modulo the
number of sources and, in its ``k = i // sources``-th round, applies the mutation kind
``(source + k)`` modulo the number of kinds, so every kind comes up among the first cases and
every source meets every kind in turn; one or two more mutations drawn at random may follow.
"""
from __future__ import annotations

import gzip
import random
import shutil
import sqlite3
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.conftest import DUMPS, REPO, SHARED_TRACES
from tests.fuzz.cases import SEED, Case, case_index, case_rng
from tests.fuzz.dump_mutations import DUMP_MUTATIONS, mutate_name
from tests.fuzz.json_mutations import GZIP_MUTATIONS, JSON_MUTATIONS
from tests.fuzz.sqlite_mutations import SQLITE_MUTATIONS

REAL_DUMPS = REPO.parent / "shared" / "dumps" / "real_writer"
TRACE_FIXTURES = REPO / "tests" / "fixtures" / "traces"
GZIP_MAGIC = b"\x1f\x8b"
SQLITE_MAGIC = b"SQLite format 3\x00"
#: Byte damage of an export comes after schema and value changes (which need a readable file).
_BYTE_LEVEL = ("truncate_pages", "flip_in_pages")
#: The dump directory each trace fixture was generated from, by the trace's name.
TRACE_DUMPS = {"ad_dsv3_decode_streams": DUMPS / "ad_dsv3",
               "qwen3_next_prefill_modules": DUMPS / "qwen3_next"}


@cache
def dump_sources() -> tuple[Path, ...]:
    """Every real writer's dump, then one stage per fixture model (the seed picks which)."""
    real = sorted(REAL_DUMPS.glob("*/*.txt"))
    assert real, f"no dumps in {REAL_DUMPS}"
    pick = random.Random(f"tb-ad-layer-fuzz/{SEED}/fixture-sample")
    sample = [pick.choice(sorted(d.glob("*.txt"))) for d in sorted(DUMPS.iterdir()) if d.is_dir()]
    return tuple(real + sample)


@cache
def trace_sources() -> tuple[Path, ...]:
    """Every real trace, then every trace fixture (nsys exports and profiler traces)."""
    def traces(d: Path) -> list[Path]:
        return sorted(p for p in d.iterdir() if p.name.endswith((".sqlite", ".json.gz", ".json"))
                      and not p.name.endswith(".truth.json"))
    found = traces(SHARED_TRACES) + traces(TRACE_FIXTURES)
    assert found, f"no traces in {SHARED_TRACES}"
    return tuple(found)


def _rotation(i: int, sources: int, kinds: list[str]) -> str:
    # Source s meets kind s + k in its k-th round: every source every kind, in turn.
    return kinds[(i % sources + i // sources) % len(kinds)]


def dump_plan(i: int) -> tuple[Path, str]:
    """The source and the first mutation of dump case ``i``."""
    sources = dump_sources()
    return sources[i % len(sources)], _rotation(i, len(sources), list(DUMP_MUTATIONS) + ["file_name"])


def trace_plan(i: int) -> tuple[Path, str]:
    """The source and the first mutation of trace case ``i`` (kinds of its format)."""
    sources = trace_sources()
    source = sources[i % len(sources)]
    with open(source, "rb") as f:
        head = f.read(16)
    if head.startswith(SQLITE_MAGIC):
        kinds = list(SQLITE_MUTATIONS)
    else:
        kinds = list(JSON_MUTATIONS) + (list(GZIP_MUTATIONS) if head.startswith(GZIP_MAGIC) else [])
    return source, _rotation(i, len(sources), kinds)


@dataclass
class DumpInput:
    """A mutated dump, ready to convert: the directory (or the one file) to give the converter."""

    case: Case
    directory: Path
    target: Path
    stages: tuple[str, ...] = ("last",)


def build_dump(case_id: str, tmp: Path, rotation: int | None = None) -> DumpInput:
    """The mutated dump of ``case_id``, written under ``tmp``; ``rotation`` replaces the case's
    index in the choice of source and first mutation (for families that mutate dumps only in
    some of their cases)."""
    rng = case_rng(case_id)
    source, first = dump_plan(case_index(case_id) if rotation is None else rotation)
    case = Case(case_id, source)
    steps = [first] + [rng.choice(list(DUMP_MUTATIONS)) for _ in range(rng.choice([0, 0, 1, 2]))]
    data = source.read_bytes()
    name = source.name
    for step in steps:
        if step == "file_name":
            name, what = mutate_name(rng, name)
        else:
            data, what = DUMP_MUTATIONS[step](rng, data)
        case.steps.append(f"{step} ({what})")
    directory = tmp / "dumps" / source.parent.name
    directory.mkdir(parents=True)
    stages: tuple[str, ...] = ("last",)
    if rng.random() < 0.25:
        # The other stages of the directory, unharmed: the damaged one is read among them.
        for sibling in source.parent.glob("*.txt"):
            if sibling != source:
                shutil.copyfile(sibling, directory / sibling.name)
        stages = ("all",)
    path = directory / name
    path.write_bytes(data)
    case.kept = path
    target = path if rng.random() < 0.2 else directory
    return DumpInput(case, directory, target, stages)


@dataclass
class TraceInput:
    """A mutated trace, and the dump directory it was generated from (if any)."""

    case: Case
    path: Path
    dump: Path | None


def build_trace(case_id: str, tmp: Path, rotation: int | None = None) -> TraceInput:
    """The mutated trace of ``case_id``, written under ``tmp`` with its source's name;
    ``rotation`` as for :func:`build_dump`."""
    rng = case_rng(case_id)
    source, first = trace_plan(case_index(case_id) if rotation is None else rotation)
    with open(source, "rb") as f:
        head = f.read(16)
    # Now and then a file name with a byte that is not UTF-8 (it reaches every message).
    name = ("\udcff" + source.name) if rng.random() < 0.05 else source.name
    path = tmp / "traces" / name
    path.parent.mkdir(parents=True)
    case = Case(case_id, source, kept=path)
    if head.startswith(SQLITE_MAGIC):
        shutil.copyfile(source, path)
        steps = [first] + [rng.choice(list(SQLITE_MUTATIONS)) for _ in range(rng.choice([0, 0, 1, 2]))]
        # Schema and value changes need a readable file: byte damage comes last.
        steps.sort(key=lambda s: s in _BYTE_LEVEL)
        for step in steps:
            try:
                what = SQLITE_MUTATIONS[step](rng, path)
            except sqlite3.Error as err:
                what = f"not applied: {err}"
            case.steps.append(f"{step} ({what})")
    else:
        raw = source.read_bytes()
        compressed = raw.startswith(GZIP_MAGIC)
        text = gzip.decompress(raw) if compressed else raw
        text_steps = [first] if first in JSON_MUTATIONS else []
        text_steps += [rng.choice(list(JSON_MUTATIONS)) for _ in range(rng.choice([0, 0, 1]))]
        for step in text_steps:
            text, what = JSON_MUTATIONS[step](rng, text)
            case.steps.append(f"{step} ({what})")
        data = gzip.compress(text, compresslevel=1, mtime=0) if compressed else text
        if first in GZIP_MUTATIONS:
            data, what = GZIP_MUTATIONS[first](rng, data)
            case.steps.append(f"{first} ({what})")
        path.write_bytes(data)
    stem = source.name.split(".")[0]
    return TraceInput(case, path, TRACE_DUMPS.get(stem))
