"""Documents as the run store keeps them: JSON, hashed, compressed (schema version 6).

Encoding is a pure function of the contract's records, so a conversion can run it in worker
processes (:mod:`tb_ad_layer.stage_pool`) and hand the writer bytes: the writer then only
inserts rows, and a document that is already stored (an unchanged layer of an earlier stage,
or a repeated layer) is stored once, by its hash.

A stored layer document leaves ``source_file`` empty: it is the one field that differs between
stages for an unchanged layer, and it moves to the ``layers`` row (the reader puts it back).
"""
from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Iterable, Sequence

import msgspec

from tb_ad_layer.contract.document import LayerDocument, LayeringDoubt, LayerNode
from tb_ad_layer.contract.record import encode
from tb_ad_layer.store.records import EncodedDoc, EncodedLayer, EncodedStage

#: zlib level of stored documents. Measured on the 61 documents (46 MB of JSON) of the 17 MB
#: DeepSeek-V3 dump's final stage (bench/bench_stages.py --levels, CPU time on a busy machine):
#: level 1 makes them 14.9x smaller at 283 MB/s, level 6 23.6x at 105 MB/s; both decompress at
#: 830-880 MB/s. The documents of a multi-stage directory repeat across stages, so the store's
#: size is set by deduplication more than by the level (85 stages: 4 distinct ones), while
#: level 6 would cost a conversion 0.3 s more CPU per stage of this size.
LEVEL = 1


def encode_doc(json: bytes, level: int = LEVEL) -> EncodedDoc:
    """``json`` hashed and compressed for the ``docs`` table."""
    return EncodedDoc(hashlib.sha256(json).hexdigest(), len(json), zlib.compress(json, level))


class DocEncoder:
    """Encodes the documents of one conversion in one process, compressing each distinct
    document once: a document this encoder gave before comes back without its data
    (``data=None``), which the writer reads as "stored already".

    That holds because a process's stages reach the writer in the order it encoded them (the
    stage pool hands each worker stages in order and stores them in order), so the document
    is in the store by then.
    """

    def __init__(self, level: int = LEVEL) -> None:
        self.level = level
        self._given: set[str] = set()

    def __call__(self, json: bytes) -> EncodedDoc:
        digest = hashlib.sha256(json).hexdigest()
        if digest in self._given:
            return EncodedDoc(digest, len(json), None)
        self._given.add(digest)
        return EncodedDoc(digest, len(json), zlib.compress(json, self.level))


def decode_doc(data: bytes) -> bytes:
    """The JSON of a stored document (``docs.data``).

    Raises:
        zlib.error: the data is not a compressed document.
    """
    return zlib.decompress(data)


def encode_layer(doc: LayerDocument, encoder: Callable[[bytes], EncodedDoc] = encode_doc
                 ) -> EncodedLayer:
    """A layer document as its ``layers`` row and stored document (by ``encoder``)."""
    summary = doc.trace_summary
    stored = msgspec.structs.replace(doc, source_file="")
    return EncodedLayer(doc.layer, doc.kind, doc.attention, len(doc.nodes),
                        summary.total_duration_us if summary is not None else None,
                        encode(doc.group_counts).decode("utf-8"), doc.source_file,
                        encoder(encode(stored)))


def encode_stage(*, file: str, order_no: int, stage: str, transform: str, module: str,
                 modules: Sequence[str], node_count: int, call_count: int, layer_count: int,
                 doubts: Sequence[LayeringDoubt], outside: Sequence[LayerNode],
                 layers: Iterable[LayerDocument],
                 encoder: Callable[[bytes], EncodedDoc] = encode_doc) -> EncodedStage:
    """A stage's row, its nodes outside every layer and its layer documents, encoded: what
    :meth:`~tb_ad_layer.store.writer.StoreWriter.add_encoded_stage` stores. ``layers`` is
    consumed one document at a time (a document can be megabytes; its compressed bytes are
    a tenth of that)."""
    return EncodedStage(file, order_no, stage, transform, module,
                        encode(list(modules)).decode("utf-8"), node_count, call_count,
                        layer_count, encode(list(doubts)).decode("utf-8"), len(outside),
                        encoder(encode(outside)), [encode_layer(d, encoder) for d in layers])
