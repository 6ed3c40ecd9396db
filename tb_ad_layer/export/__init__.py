"""Write what the converter stored in other formats: a layer document as Graphviz DOT
(:mod:`~tb_ad_layer.export.dot`) or as seed-schema JSON (:mod:`~tb_ad_layer.export.seed_json`),
a run's kernels as Chrome trace JSON (:mod:`~tb_ad_layer.export.chrome`).

Every writer reads contract records (:mod:`tb_ad_layer.contract`) or stored rows
(:mod:`tb_ad_layer.store`) and nothing of the converter (``dump``, ``layers``, ``trace``): the
command line and the plugin write the same bytes from the same stored facts, and the plugin can
offer every download without loading the converter.
"""
