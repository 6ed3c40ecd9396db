"""tb-ad-layer: AutoDeploy FX graph dumps and GPU traces as an interactive per-layer view.

Data flows one way through the subpackages: ``dump`` (read graph dumps) -> ``layers`` (assign
nodes to decoder layers) -> ``trace`` (read GPU traces, map kernels to nodes) -> ``store`` (the
run store on disk) -> ``plugin`` (TensorBoard backend serving the store to the panel), with
``contract`` (the records every stage builds or reads) and ``export`` (stored records in other
formats: DOT, seed-schema JSON, Chrome trace). The plugin loads none of ``dump``, ``layers``
and ``trace``.

Importing the package installs the guard that refuses compiled modules built from other
sources than the ones beside them (:mod:`tb_ad_layer._compiled`).
"""
from tb_ad_layer import _compiled
from tb_ad_layer.version import __version__

_compiled.install()

__all__ = ["__version__"]
