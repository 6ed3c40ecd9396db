"""Where the time goes, from a run store alone: the step's and each layer's GPU time by group and
category, tails over the replays, a roofline per node, compute/communication overlap and the
critical path, the host side, findings ranked by time at stake (``tb-ad-layer report``), and two
runs compared beyond noise (``tb-ad-layer diff``).

The package reads the run store only (:class:`tb_ad_layer.store.reader.RunStore`), never dumps or
traces: what it needs the converter stores. Its answers are the records of
:mod:`tb_ad_layer.contract.analysis`, which the command line prints and the plugin serves.
"""
