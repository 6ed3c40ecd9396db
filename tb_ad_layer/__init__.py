"""tb-ad-layer: AutoDeploy FX graph dumps and GPU traces as an interactive per-layer view.

Data flows one way, and ``tests/test_layering.py`` holds every import to it::

    dump (read graph dumps) -> layers (each node's layer, group and sub-group)
    trace (read GPU traces, cut a replay, segment it, map kernels to nodes), beside them
        -> convert / trace_attach / cli (the pipeline joins both) -> store (the run store)
        -> export (DOT, seed JSON, Chrome trace), analysis (where the time goes)
        -> plugin (TensorBoard backend serving the store to the panel in ``frontend/``)

``compile_log`` reads torch.compile's structured logs beside ``dump``; ``live`` exports a live
model as AutoDeploy's dumps for the pipeline. ``contract`` holds the records every part
exchanges (and the panel's generated types); ``metadata`` the names they share. Nothing
downstream is imported upstream: the store knows records, not the converter, and importing the
plugin loads no module of ``dump``, ``layers`` or ``trace``.

Importing the package installs the guard that refuses compiled modules built from other
sources than the ones beside them (:mod:`tb_ad_layer._compiled`).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tb_ad_layer import _compiled
from tb_ad_layer.version import __version__

if TYPE_CHECKING:
    from tb_ad_layer.convert import ConvertResult

_compiled.install()

__all__ = ["__version__", "export_model"]


def export_model(model: Any, example_inputs: Any, logdir: str | Path, run: str | None = None,
                 **options: Any) -> ConvertResult:
    """Export a live ``torch.nn.Module`` the way AutoDeploy does and convert it into ``run``
    under ``logdir``, so that TensorBoard's AD Layers tab shows it (``tensorboard --logdir``).

    ``example_inputs``: the keyword inputs of ``forward`` (``{"input_ids": ..., "position_ids":
    ...}``; their first dim is the batch, their second the sequence, both exported dynamic), or
    the ``input_ids`` tensor. ``run`` defaults to the model's class name. Options:
    ``dump_dir`` (where the dumps go; default ``<logdir>/<run>/ad_dumps``), ``stages``
    (default ``("all",)``), ``dynamic_seq=False`` for a model whose code fixes the sequence
    length, ``quiet=False`` for progress lines. Returns the conversion's result.

    Needs torch, an optional extra (``pip install tb-ad-layer[torch]``): torch is imported only
    here, so ``import tb_ad_layer`` stays light.

    Raises:
        ImportError: torch is not installed.
        tb_ad_layer.errors.InputError: the dumps cannot be converted.
    """
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ImportError("tb_ad_layer.export_model needs torch: pip install "
                          "'tb-ad-layer[torch]'") from None
    from tb_ad_layer.live.export import export_model as _export

    return _export(model, example_inputs, logdir, run, **options)
