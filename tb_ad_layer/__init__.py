"""tb-ad-layer: AutoDeploy FX graph dumps and GPU traces as an interactive per-layer view.

Data flows one way through the subpackages: ``dump`` (read graph dumps) -> ``layers`` (assign
nodes to decoder layers) -> ``trace`` (read GPU traces, map kernels to nodes) -> ``store`` (the
run store on disk) -> ``plugin`` (TensorBoard backend serving the store to the panel).
"""
from tb_ad_layer.version import __version__

__all__ = ["__version__"]
