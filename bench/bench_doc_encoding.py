"""Layer documents as JSON text: the standard library's ``json`` against ``msgspec.json`` and
``orjson``, encoding and decoding the documents of the 61-layer dumps of bench_convert.py.

Prints, per dump and library, the best of ``--repeat`` times for all documents of the dump, and
whether the text is byte-identical to what the run store keeps today (``json.dumps`` compact,
non-ASCII as is). ``json`` gives ``str`` (what the store inserts today), the others ``bytes``
(UTF-8), whose decoding to ``str`` is timed separately. Decoding reads the store's text. A
library that is not installed is reported as such.

    python bench/bench_doc_encoding.py
    python bench/bench_doc_encoding.py --repeat 9
"""
from __future__ import annotations

import argparse
import gc
import importlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import msgspec  # noqa: E402
from bench_convert import generate  # noqa: E402

from tb_ad_layer.dump.reader import parse_dump  # noqa: E402
from tb_ad_layer.layers.document import layer_record  # noqa: E402
from tb_ad_layer.layers.layered import layer_graph  # noqa: E402


def dumps(value: Any) -> str:
    """Compact JSON with the standard library, non-ASCII as is (the store's text before msgspec)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def best_s(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


Codec = tuple[Callable[[Any], Any], Callable[[Any], Any]]


def codecs() -> dict[str, Codec | str]:
    out: dict[str, Codec | str] = {"json": (dumps, json.loads)}
    try:
        msgspec_json = importlib.import_module("msgspec.json")
        encoder, decoder = msgspec_json.Encoder(), msgspec_json.Decoder()
        out["msgspec.json"] = (encoder.encode, decoder.decode)
    except ImportError:
        out["msgspec.json"] = "not installed"
    try:
        orjson = importlib.import_module("orjson")
        out["orjson"] = (orjson.dumps, orjson.loads)
    except ImportError:
        out["orjson"] = "not installed"
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    gc.disable()  # as the converter runs (tb_ad_layer/gc_pause.py)
    print(f"{'dump':>14} {'library':>13} {'encode ms':>10} {'MB/s':>7} {'+ to str ms':>11} "
          f"{'same text':>9} {'decode ms':>10} {'largest doc decode ms':>22}")
    for dequant in ("none", "op", "aten"):
        src = next(generate("dsv3_61", 61, dequant).glob("*.txt"))
        lg = layer_graph(parse_dump(src).select())
        docs = [msgspec.to_builtins(layer_record(lg, i)) for i in sorted(lg.layers)]
        reference = [dumps(d) for d in docs]
        mb = sum(map(len, reference)) / 1e6
        for name, codec in codecs().items():
            if isinstance(codec, str):
                print(f"{'dsv3_61/' + dequant:>14} {name:>13} {codec}")
                continue
            print(f"{'dsv3_61/' + dequant:>14} {name:>13} "
                  + measure(codec, docs, reference, mb, args.repeat), flush=True)


def measure(codec: Codec, docs: list[Any], reference: list[str], mb: float, repeat: int) -> str:
    """One row of figures for one library on one dump's documents."""
    encode, decode = codec
    texts = [encode(d) for d in docs]
    enc = best_s(lambda: [encode(d) for d in docs], repeat)
    as_str = [t.decode() if isinstance(t, bytes) else t for t in texts]
    to_str = best_s(lambda: [t.decode() for t in texts], repeat) \
        if isinstance(texts[0], bytes) else 0.0
    dec = best_s(lambda: [decode(t) for t in reference], repeat)
    largest = max(reference, key=len)
    one = best_s(lambda: decode(largest), repeat)
    return (f"{enc * 1e3:10.1f} {mb / enc:7.0f} {to_str * 1e3:11.1f} {as_str == reference!s:>9} "
            f"{dec * 1e3:10.1f} {one * 1e3:22.2f}")

if __name__ == "__main__":
    main()
