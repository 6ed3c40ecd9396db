"""Read the multi-stage fixtures of tests/fixtures/ad_stages/ (standard library only).

Each model directory holds ``NNN_<stage>_<transform>.txt.gz`` dumps and, beside each, the
``NNN_<stage>_<transform>.truth.json.gz`` truth (the format of tests/fixtures/dumps/README.md:
``{"model", "architecture", "dump", "layers_module", "num_layers", "layer_kinds", "nodes":
{"<node>": {"layer", "module", "class", "group"}}}``, one entry per printed node, in order).

    from model_dumps.stage_check import iter_stages
    for path, text, truth in iter_stages(Path("tests/fixtures/ad_stages/llama3_1_8b")):
        ...

:func:`check_stage_dir` also checks every dump line by line (:mod:`dump_check`) and that each
truth names exactly its dump's nodes; it returns one summary row per stage.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .dump_check import check_dump

STAGE_RE = re.compile(r"^(\d{3,})_([a-z_]+?)_([a-z0-9_]+)\.txt\.gz$")


def stage_files(model_dir: Path) -> list[Path]:
    """The model's dumps, ordered by their counter (a number, not a string)."""
    found = [p for p in model_dir.iterdir() if STAGE_RE.match(p.name)]
    return sorted(found, key=lambda p: int(p.name.split("_", 1)[0]))


def truth_path(stage: Path) -> Path:
    return stage.with_name(stage.name[:-len(".txt.gz")] + ".truth.json.gz")


def read_gz_text(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode("utf-8")


def iter_stages(model_dir: Path) -> Iterator[tuple[Path, str, dict[str, Any]]]:
    """(dump path, dump text, truth) for every stage of one model, in pipeline order."""
    for stage in stage_files(model_dir):
        yield stage, read_gz_text(stage), json.loads(read_gz_text(truth_path(stage)))


def check_stage_dir(model_dir: Path) -> list[dict[str, Any]]:
    """Check every stage of one model; returns ``{"file", "nodes", "sections"}`` per stage."""
    rows = []
    for stage, text, truth in iter_stages(model_dir):
        name = stage.name[:-len(".gz")]
        sections = check_dump(name, text)
        nodes = [n for s in sections for n in s.nodes]
        if nodes != list(truth["nodes"]):
            raise AssertionError(f"{stage}: the truth does not name exactly the dump's nodes")
        if truth["dump"] != stage.name:
            raise AssertionError(f"{stage}: truth is for {truth['dump']}")
        rows.append({"file": stage.name, "nodes": len(nodes),
                     "sections": [s.name for s in sections]})
    return rows
