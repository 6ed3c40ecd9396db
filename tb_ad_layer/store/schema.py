"""The run store: one SQLite file per run at ``<logdir>/<run>/plugins/ad_layer/run.sqlite``.

SQLite gives random access per stage and layer, one file, and atomic replacement (the writer
builds a temporary file beside it and renames it into place). The layout is versioned by
``meta.schema_version``; a reader refuses versions it does not know with a clear message.

Tables:
    meta(key, value)                       run metadata; values are JSON
    files(path, sha256, size, role)        every input file (role: dump | trace)
    stages(idx, file, order_no, stage, transform, module, modules, node_count, call_count,
           layer_count, doubts)            one row per converted transform stage, pipeline order;
                                           ``doubts``: JSON list of the doubts about the
                                           stage's layering (the stage's, then each layer's;
                                           docs/API.md LayeringDoubt)
    layers(stage, layer, kind, attention, node_count, gpu_time_us, group_counts, source_file,
           doc)                            ``doc`` is the hash of the layer document
                                           (docs/API.md api/layer) in ``docs``: the layer's nodes
                                           with group, sub-group, stream, inputs and weights
                                           (name, shape, dtype), its edges and its external
                                           inputs, and the doubts about it; ``source_file`` is
                                           the document's ``source_file``, which the stored
                                           document leaves empty (see below)
    outside(stage, node_count, nodes)      ``nodes`` is the hash in ``docs`` of the nodes outside
                                           every layer (embedding, model-level preparation, final
                                           norm, lm head): a JSON list of node records shaped
                                           like a layer document's, with every input kept
    docs(hash, size, data)                 every distinct document once: ``hash`` is the SHA-256
                                           (hex) of its JSON, ``size`` that JSON's length,
                                           ``data`` the JSON compressed with zlib
    streams(key, label, device, pid, context, stream, rank)
                                           the streams of each rank (``key`` is unique within
                                           a rank: two traces may both name device 0)
    kernels(id, name, short, start_ns, end_ns, device, stream, graph_id, graph_node_id,
            correlation, layer, node, reason, count, median_ns, min_ns, max_ns, p90_ns, p99_ns,
            rank)                          kernels of the stored replay / forward pass of each
                                           rank; times relative to its start; the statistics
                                           are over every replay (p90/p99: nearest rank)
    ranks(rank, device, trace, replays, kernel_count, gpu_time_us, info)
                                           one row per rank of a traced run: its device, the
                                           trace file it was read from, the replays (or
                                           passes) its statistics cover, its kernels, its GPU
                                           time (sum of the layers' and the outside work's
                                           typical durations) and ``info``, the rank's
                                           TraceInfo (JSON; ``meta.trace`` is the first
                                           rank's). No rows: the run has no trace.
    rank_layers(rank, stage, layer, gpu_time_us, doc)
                                           each rank's layers of the traced stage: the layer's
                                           GPU time on that rank and the hash in ``docs`` of
                                           the layer document with that rank's kernels (the
                                           first rank's is the ``layers`` row's document)

Tables written only when the trace holds what they need (a reader treats an absent one as
"the trace did not record this", never as damage; :data:`OPTIONAL_DDL`):
    host_calls(start_ns, end_ns, tid, correlation, name, kind)
                                           CUDA runtime API calls (kind ``runtime``) and
                                           synchronisations (kind ``sync``) around the stored
                                           replay / pass, on the kernels' clock and origin
    memcpy(start_ns, end_ns, stream, correlation, direction, bytes, src_kind, dst_kind)
                                           memory copies of the stored replay / pass with their
                                           direction (HtoD, DtoH, DtoD...), size and memory kinds
                                           (pageable, pinned, device...)
    gpus(device, name)                     the GPU name of each device the trace names
    trace_dims(symbol, value, source)      the traced stage's symbolic sizes (``s70``) that the
                                           trace's recorded input shapes bind
                                           (``record_shapes=True``): ``source`` names the op and
                                           node that recorded the value; a symbol recorded with
                                           two values has a null ``value`` and ``source`` says
                                           which. Empty when the trace recorded shapes but bound
                                           none; absent when it recorded none. Added without a
                                           version bump: readers that do not know it ignore it.

A rank is the GPU whose kernels one trace (``--trace`` given once per rank) or one device of a
multi-device trace (``--device all``) holds: its device number, or the trace's position when
two traces name the same device. A run with one trace has one rank, its device. Readers take
the first rank (the lowest) unless asked for another, so a one-rank run reads as before.

Rows are written and read as the named records of :mod:`tb_ad_layer.store.records`; JSON
columns hold records of :mod:`tb_ad_layer.contract`. Every node of a stage is in exactly one
layer document or in ``outside``. Version 1 also kept one
row per node and per weight beside the documents, which repeated them; writing those rows took a
quarter of a conversion. Version 3 added the doubts about a layering (``stages.doubts``, and
``doubts`` in every layer document). Version 4 added the kernels' p90/p99 over the replays and the
optional host-side tables, which ``tb-ad-layer report`` and ``diff`` read
(:mod:`tb_ad_layer.analysis`); version 5 each weight's ``role`` (its part in its layer, which
compare matches nodes by), stored at conversion instead of derived by every reader.

Version 6 stores each distinct document once (``docs``), compressed: consecutive transform
stages repeat most layers unchanged, and a dump directory of 85 stages wrote a store 2.5 times
its size, nearly all of it the same documents again. What differs between stages for an
unchanged layer (the dump file it was read from) moved to the ``layers`` row, so the documents
of an unchanged layer are equal bytes. zlib level 1 compresses them about as well as level 6
at a fraction of the time (bench/bench_stages.py).

Version 7 keeps every rank of a multi-GPU run: ``rank`` on ``streams`` and ``kernels``, the
``ranks`` table, and ``rank_layers`` with each rank's layer documents and GPU time per layer
(the replay noise of a rank's layer time comes from its kernels' statistics:
:mod:`tb_ad_layer.analysis.ranks`).
"""
from __future__ import annotations

SCHEMA_VERSION = 7

DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (path TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL,
                    role TEXT NOT NULL);
CREATE TABLE stages (idx INTEGER PRIMARY KEY, file TEXT NOT NULL, order_no INTEGER NOT NULL,
                     stage TEXT NOT NULL, transform TEXT NOT NULL, module TEXT NOT NULL,
                     modules TEXT NOT NULL, node_count INTEGER NOT NULL,
                     call_count INTEGER NOT NULL, layer_count INTEGER NOT NULL,
                     doubts TEXT NOT NULL);
CREATE TABLE layers (stage INTEGER NOT NULL, layer INTEGER NOT NULL, kind TEXT NOT NULL,
                     attention TEXT, node_count INTEGER NOT NULL, gpu_time_us REAL,
                     group_counts TEXT NOT NULL, source_file TEXT NOT NULL,
                     doc TEXT NOT NULL, PRIMARY KEY (stage, layer));
CREATE TABLE outside (stage INTEGER PRIMARY KEY, node_count INTEGER NOT NULL,
                      nodes TEXT NOT NULL);
CREATE TABLE docs (hash TEXT PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE streams (key TEXT NOT NULL, label TEXT NOT NULL, device INTEGER,
                      pid INTEGER, context INTEGER, stream INTEGER, rank INTEGER NOT NULL,
                      PRIMARY KEY (rank, key));
CREATE TABLE kernels (id INTEGER PRIMARY KEY, name TEXT NOT NULL, short TEXT NOT NULL,
                      start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, device INTEGER,
                      stream TEXT NOT NULL, graph_id INTEGER, graph_node_id INTEGER,
                      correlation INTEGER, layer INTEGER, node TEXT, reason TEXT,
                      count INTEGER, median_ns INTEGER, min_ns INTEGER, max_ns INTEGER,
                      p90_ns REAL, p99_ns REAL, rank INTEGER NOT NULL);
CREATE TABLE ranks (rank INTEGER PRIMARY KEY, device INTEGER, trace TEXT NOT NULL,
                    replays INTEGER NOT NULL, kernel_count INTEGER NOT NULL,
                    gpu_time_us REAL, info TEXT NOT NULL);
CREATE TABLE rank_layers (rank INTEGER NOT NULL, stage INTEGER NOT NULL, layer INTEGER NOT NULL,
                          gpu_time_us REAL, doc TEXT NOT NULL,
                          PRIMARY KEY (rank, stage, layer));
"""

#: Tables created only when the trace holds their rows: table -> its DDL.
OPTIONAL_DDL = {
    "host_calls": "CREATE TABLE host_calls (start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, "
                  "tid INTEGER, correlation INTEGER, name TEXT NOT NULL, kind TEXT NOT NULL)",
    "memcpy": "CREATE TABLE memcpy (start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, "
              "stream TEXT, correlation INTEGER, direction TEXT NOT NULL, bytes INTEGER, "
              "src_kind TEXT, dst_kind TEXT)",
    "gpus": "CREATE TABLE gpus (device INTEGER PRIMARY KEY, name TEXT NOT NULL)",
    "trace_dims": "CREATE TABLE trace_dims (symbol TEXT PRIMARY KEY, value INTEGER, "
                  "source TEXT NOT NULL)",
}

INDEXES = """
CREATE INDEX kernels_layer ON kernels (rank, layer, start_ns);
CREATE INDEX kernels_time ON kernels (rank, start_ns);
"""
