"""Live models: export an ``nn.Module`` the way AutoDeploy does and convert its dump.

Needs torch (``pip install tb-ad-layer[torch]``); nothing here is imported by
``import tb_ad_layer``, which never imports torch. :mod:`~tb_ad_layer.live.ad_export` is
AutoDeploy's ``export_to_gm`` and post-export clean-ups on plain torch,
:mod:`~tb_ad_layer.live.graph_writer` its graph writer's text, :mod:`~tb_ad_layer.live.export`
the two put together for a model in a notebook.
"""
