"""The run store: one SQLite file per run that the converter writes and the plugin reads.

``schema`` (tables and file layout) and ``records`` (rows as named records) -> ``writer``
(atomic write) and ``reader`` (:class:`~tb_ad_layer.store.reader.RunStore`, checked reads);
``events`` writes the TensorBoard event file beside it (framed by ``tfrecord``). The store
takes and gives the contract's records (:mod:`tb_ad_layer.contract`) and its own rows, and knows
nothing of how the converter made them; :mod:`tb_ad_layer.export` writes them in other formats.
"""
