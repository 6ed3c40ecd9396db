"""AutoDeploy's graph writer, now in the package (:mod:`tb_ad_layer.live.graph_writer`), which
:func:`tb_ad_layer.export_model` uses too; this name is that module itself."""

import sys

from tb_ad_layer.live import graph_writer as _impl

sys.modules[__name__] = _impl
