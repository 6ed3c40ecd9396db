"""tb-ad-layer: AutoDeploy FX graph dumps and GPU traces as an interactive per-layer view.

Data flows one way, and ``tests/test_layering.py`` holds every import to it::

    dump (read graph dumps) -> layers (each node's layer, group and sub-group)
    trace (read GPU traces, cut a replay, segment it, map kernels to nodes), beside them
        -> convert / trace_attach / cli (the pipeline joins both) -> store (the run store)
        -> export (DOT, seed JSON, Chrome trace), analysis (where the time goes)
        -> plugin (TensorBoard backend serving the store to the panel in ``frontend/``)

``contract`` holds the records every part exchanges (and the panel's generated types);
``metadata`` the names they share. Nothing downstream is imported upstream: the store knows
records, not the converter, and importing the plugin loads no module of ``dump``, ``layers`` or
``trace``.

Importing the package installs the guard that refuses compiled modules built from other
sources than the ones beside them (:mod:`tb_ad_layer._compiled`).
"""
from tb_ad_layer import _compiled
from tb_ad_layer.version import __version__

_compiled.install()

__all__ = ["__version__"]
