"""``export_model``: a live ``nn.Module`` -> AutoDeploy-style dumps -> a run store.

A researcher with a model in a notebook gets the same per-layer view as an AutoDeploy user:
the model is exported as AutoDeploy's ``export_to_gm`` does (``torch.export`` with keyword
inputs and a dynamic batch and sequence length, then its clean-ups), each stage is written in
the graph writer's text (``001_export_export_to_gm.txt``, ``002_post_export_cleanup_noop_slice.txt``,
``003_...`` where that clean-up changes the graph), and the dump directory is converted.
The model's own tensors are used, never moved: the model stays usable.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from tb_ad_layer.convert import ConvertResult, convert
from tb_ad_layer.live import ad_export
from tb_ad_layer.live.graph_writer import write_dump
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.progress import Progress

EXPORT_STAGE = ("export", "export_to_gm")
SLICE_STAGE = ("post_export", "cleanup_noop_slice")
ADD_STAGE = ("post_export", "cleanup_noop_add")


def _inputs(example_inputs: Any) -> dict[str, Any]:
    if isinstance(example_inputs, torch.Tensor):
        return {"input_ids": example_inputs}
    if isinstance(example_inputs, Mapping):
        return dict(example_inputs)
    raise TypeError("example_inputs: give the keyword inputs of forward() as a dict of tensors "
                    "(input_ids, position_ids, ...), or the input_ids tensor")


def write_model_dumps(model: torch.nn.Module, example_inputs: Any, dump_dir: Path,
                      dynamic_seq: bool = True) -> list[Path]:
    """Export ``model`` called with ``example_inputs`` (keyword inputs, first dim batch, second
    sequence) and write its stages into ``dump_dir``; returns the files written."""
    inputs = _inputs(example_inputs)
    dump_dir.mkdir(parents=True, exist_ok=True)
    for old in dump_dir.glob("[0-9][0-9][0-9]_*.txt"):
        old.unlink()
    was_training = model.training
    model.eval()
    try:
        gm = ad_export.export_to_gm(model, inputs, dynamic_seq=dynamic_seq, on_meta=False)
    finally:
        model.train(was_training)
    files = [write_dump(dump_dir, 1, gm, *EXPORT_STAGE)]
    ad_export.cleanup_noop_slice(gm)
    files.append(write_dump(dump_dir, 2, gm, *SLICE_STAGE))
    if ad_export.cleanup_noop_add(gm):
        files.append(write_dump(dump_dir, 3, gm, *ADD_STAGE))
    return files


def export_model(model: torch.nn.Module, example_inputs: Any, logdir: str | Path,
                 run: str | None = None, *, dump_dir: str | Path | None = None,
                 stages: tuple[str, ...] = ("all",), dynamic_seq: bool = True,
                 quiet: bool = True) -> ConvertResult:
    """See :func:`tb_ad_layer.export_model`."""
    name = run or type(model).__name__
    out = Path(dump_dir) if dump_dir is not None else Path(logdir) / name / "ad_dumps"
    write_model_dumps(model, example_inputs, out, dynamic_seq)
    options = ConvertOptions(source=out, logdir=Path(logdir), run=name, stages=stages,
                             model=type(model).__name__)
    return convert(options, progress=Progress(quiet=quiet))
