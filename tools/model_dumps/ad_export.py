"""AutoDeploy's export, now in the package (:mod:`tb_ad_layer.live.ad_export`), which
:func:`tb_ad_layer.export_model` uses too. This name is that module itself, so that a tool that
patches one of its functions (``make_deep_dumps``) patches the one the export calls."""

import sys

from tb_ad_layer.live import ad_export as _impl

sys.modules[__name__] = _impl
