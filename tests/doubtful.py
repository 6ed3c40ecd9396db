"""Dump directories whose layering is doubtful, made from real exports by renaming weights: the
one place that makes them, for the detector, store, API, CLI and browser tests.

A real export's layers are plausible (``tests/layers/test_doubts.py`` checks that none gives a
doubt); renaming a layer's weights to another layer's index is what a broken weight naming does
to the layer assignment, without any generator of ours deciding the rest of the graph.
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path

from tests.conftest import DUMPS, REPO

#: The llama fixture's export stage: three attention+mlp layers of about 60 nodes.
LLAMA = DUMPS / "llama" / "001_export_export_to_gm.txt"
#: The real DeepSeek-V3 export (61 layers: 0-2 dense, 3-60 MoE), final stage, compressed.
DSV3_61L = REPO / "bench" / "data" / "dsv3_61l" / "002_post_export_cleanup_noop_slice.txt.gz"

#: The layers of DSV3_61L whose weights :func:`oversized_dump` names after layer 10.
MERGED = range(11, 16)


def gap_dump(scratch: Path) -> Path:
    """The llama export with layer 1's weights named ``model_layers_5_``: the layer indices
    found have a gap (a doubt about the whole stage), and no layer is oversized (three layers
    of one kind are needed for a median)."""
    out = scratch / "gap_dump"
    out.mkdir(parents=True, exist_ok=True)
    text = LLAMA.read_text(encoding="utf-8").replace("model_layers_1_", "model_layers_5_")
    (out / LLAMA.name).write_text(text, encoding="utf-8")
    return out


def oversized_dump(scratch: Path) -> Path:
    """The 61-layer DeepSeek-V3 export with the weights of layers 11-15 named after layer 10:
    layer 10 takes their nodes (six MoE layers' worth, a doubt about layer 10) and no layer
    11-15 is left (a gap, a doubt about the stage)."""
    out = scratch / "oversized_dump"
    out.mkdir(parents=True, exist_ok=True)
    pattern = re.compile(r"\bmodel_layers_(" + "|".join(map(str, MERGED)) + r")_")
    with gzip.open(DSV3_61L, "rt", encoding="utf-8") as f:
        text = pattern.sub("model_layers_10_", f.read())
    (out / DSV3_61L.name[:-len(".gz")]).write_text(text, encoding="utf-8")
    return out
