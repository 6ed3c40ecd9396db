"""Write one fixture directory: the dumps of each stage, their truth files, and a summary row.

Stages, named as AutoDeploy's writer names them after each transform:

- ``001_export_export_to_gm.txt``: after ``export_to_gm`` (:func:`ad_export.export_to_gm`);
- ``002_post_export_cleanup_noop_slice.txt``: after ``cleanup_noop_slice``;
- ``003_post_export_cleanup_noop_add.txt``: after ``cleanup_noop_add``, written only where it
  changes the graph (AutoDeploy's writer would print an identical graph otherwise, and so
  would it after ``cleanup_input_constraints``, which changes only range constraints).

Each ``<stem>.truth.json`` beside a dump holds the truth of its nodes (:mod:`truth`); both
stages keep the export's node metadata, since the clean-up only removes nodes. Every written
dump is read back with :func:`dump_check.check_dump`, and the truth must name exactly its
nodes, in order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import fx

from . import ad_export
from .dump_check import check_dump
from .models import Spec
from .truth import TruthMaker, decoder_layers_path, format_truth, graph_truth
from .writer import write_dump

EXPORT_STAGE = ("export", "export_to_gm")
SLICE_STAGE = ("post_export", "cleanup_noop_slice")
ADD_STAGE = ("post_export", "cleanup_noop_add")


def clear_stages(out_dir: Path) -> None:
    """Remove the dumps and truth files of an earlier run (other files stay)."""
    for old in sorted(out_dir.glob("[0-9][0-9][0-9]*_*.txt")) + sorted(out_dir.glob("*.truth.json")):
        old.unlink()


def write_stage(out_dir: Path, counter: int, gm: fx.GraphModule, stage: str, transform: str,
                maker: TruthMaker, spec_name: str, arch: str,
                expected_kinds: list[str]) -> dict[str, Any]:
    """Write one dump and its truth; returns the summary row."""
    path = write_dump(out_dir, counter, gm, stage, transform)
    truth = graph_truth(gm, maker, spec_name, arch, path.name)
    kinds = [truth["layer_kinds"][str(i)] for i in range(truth["num_layers"])]
    if kinds != expected_kinds:
        raise AssertionError(f"{path}: layer kinds {kinds}, expected {expected_kinds}")
    path.with_suffix(".truth.json").write_text(format_truth(truth), encoding="utf-8")
    sections = check_dump(path.name, path.read_text(encoding="utf-8"))
    if [s.nodes for s in sections] != [list(truth["nodes"])]:
        raise AssertionError(f"{path}: the truth does not name exactly the dump's nodes")
    per_layer: dict[str, int] = {}
    for info in truth["nodes"].values():
        key = "none" if info["layer"] is None else str(info["layer"])
        per_layer[key] = per_layer.get(key, 0) + 1
    return {"file": f"{out_dir.name}/{path.name}", "bytes": path.stat().st_size,
            "nodes": len(truth["nodes"]), "weights": len(sections[0].weights),
            "kinds": kinds, "per_layer": per_layer}


def make_fixture(spec: Spec, out_root: Path) -> list[dict[str, Any]]:
    """Export ``spec``'s model and write its directory under ``out_root``."""
    out_dir = out_root / spec.name
    out_dir.mkdir(parents=True, exist_ok=True)
    clear_stages(out_dir)
    model = spec.model
    arch = type(model).__name__
    n_layers = int(model.config.num_hidden_layers)  # type: ignore[union-attr]
    maker = TruthMaker(model, decoder_layers_path(model, n_layers))
    vocab = int(model.config.vocab_size)  # type: ignore[union-attr]
    inputs = ad_export.example_inputs(spec.batch, spec.seq, vocab, seed=0)
    gm = ad_export.export_to_gm(model, inputs, dynamic_seq=spec.dynamic_seq)
    rows = [write_stage(out_dir, 1, gm, *EXPORT_STAGE, maker, spec.name, arch,
                        spec.expected_kinds)]
    removed = ad_export.cleanup_noop_slice(gm)
    row = write_stage(out_dir, 2, gm, *SLICE_STAGE, maker, spec.name, arch, spec.expected_kinds)
    row["removed"] = removed
    rows.append(row)
    removed = ad_export.cleanup_noop_add(gm)
    if removed:
        row = write_stage(out_dir, 3, gm, *ADD_STAGE, maker, spec.name, arch, spec.expected_kinds)
        row["removed"] = removed
        rows.append(row)
    return rows
