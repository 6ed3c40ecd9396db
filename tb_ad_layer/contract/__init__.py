"""The wire contract: every JSON shape the converter stores and the plugin serves, as msgspec Structs.

:mod:`~tb_ad_layer.contract.document` owns the layer document (what the converter stores per
layer and ``api/layer`` serves); :mod:`~tb_ad_layer.contract.analysis` the report and the diff
(``tb-ad-layer report``/``diff`` and ``api/report``/``api/diff``);
:mod:`~tb_ad_layer.contract.api` owns every other API payload, and
:mod:`~tb_ad_layer.contract.cli` the JSON the command line writes (``inspect --json``).
docs/API.md describes them for people, ``frontend/src/api/contract.ts`` is generated from them
(``python tools/gen_api_types.py``), and tests hold the three together.

The package imports nothing else of tb_ad_layer, so every stage of the pipeline (layers, trace,
store, plugin) can build or read these shapes.
"""
