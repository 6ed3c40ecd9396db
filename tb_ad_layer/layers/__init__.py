"""Assign every node of a graph to its decoder layer, group and sub-group, and build layer documents.

``weights`` (what weight names say: layer index and role; counters of transform-made weights say
nothing) -> ``shared_weights`` (withholds the layer of blocks several layers share) -> ``hints``
(each node's layer by its names) -> ``history`` (the layers an earlier stage gave to the nodes
that keep their names) -> ``membership`` (layers by dataflow; ``sinks`` places ops nothing
consumes) ->
``groups`` (group and sub-group inside a layer, with ``moe_blocks``, ``subgroups`` and the
names of ``vocabulary``) -> ``external`` (a layer's inputs from outside it) -> ``layered`` (the
:class:`~tb_ad_layer.layers.layered.LayeredGraph` of a whole graph) -> ``document`` (one layer
as the stored JSON document, built once with a trace's times); ``seed_json`` reads a seed-schema
layer back (:mod:`tb_ad_layer.export` writes documents in other formats).
"""
