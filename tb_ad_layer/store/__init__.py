"""The run store: one SQLite file per run that the converter writes and the plugin reads.

``schema`` (tables and file layout) and ``records`` (rows as named records) -> ``writer``
(atomic write) and ``reader`` (:class:`~tb_ad_layer.store.reader.RunStore`, checked reads);
``events`` writes the TensorBoard event file beside it (framed by ``tfrecord``) and
``chrome_export`` turns a store's kernels into Chrome trace JSON.
"""
