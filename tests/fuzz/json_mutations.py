"""Mutations of PyTorch profiler traces (Chrome-trace JSON, plain or gzip).

The text mutations work on the decompressed JSON and keep it valid JSON where that is the point
(odd numbers, wrong types, deep nesting) by editing the text around the fields the reader uses,
rather than by parsing and printing traces of tens of megabytes. The gzip mutations damage the
compressed bytes. Each returns the new bytes and a few words saying what it did.
"""
from __future__ import annotations

import gzip
import random
import re
from collections.abc import Callable

JsonMutation = Callable[[random.Random, bytes], "tuple[bytes, str]"]

#: Numeric fields the reader turns into times and ids.
_NUMBER = re.compile(rb'"(ts|dur|pid|tid|device|stream|context|correlation|graph id|graph node id)"'
                     rb'\s*:\s*(-?[0-9][0-9.eE+-]*)')
#: A field of an event the reader keeps (GPU activities, CUDA calls, annotations), when the
#: event's category comes before the field (as Kineto writes them): for damage that reaches the
#: reader's checks rather than events it skips anyway.
_KEPT_EVENT = (rb'"cat"\s*:\s*"(?:kernel|gpu_memcpy|gpu_memset|cuda_runtime|cuda_driver|user_annotation)"'
               rb'(?s:.{0,800}?)')
_KEPT_FIELDS = {name: re.compile(_KEPT_EVENT + rb'"(' + name + rb')"\s*:\s*(-?[0-9][0-9.eE+-]*)')
                for name in (b"ts", b"dur", b"device", b"stream", b"correlation")}
#: Fields whose type the reader relies on, each at the start of its value.
_TYPED = re.compile(rb'"(traceEvents|args|name|cat|ph|ts|dur)"\s*:\s*')
#: What Python's json reads but no number field can hold: NaN and the infinities (Python's own
#: spelling), 1e400 (an infinite float), 2**70 and beyond, 5,000 digits (past Python's integer
#: conversion limit), negatives, fractions, and non-numbers.
ODD_NUMBERS = [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400", str(1 << 70).encode(),
               str(-(1 << 70)).encode(), str(1 << 64).encode(), b"9" * 5000, b"-1", b"1e-400", b"0.5",
               b"-0.0", b'"12"', b"true", b"null", b"[]", b"{}"]
WRONG_TYPES = [b"null", b"7", b"-1.5", b'"text"', b"[]", b"[1, 2]", b"{}", b'{"a": []}', b"true", b"NaN"]


def truncate_text(rng: random.Random, text: bytes) -> tuple[bytes, str]:
    """Cut the JSON short (then compressed again when the source was gzip)."""
    cut = rng.randrange(len(text))
    return text[:cut], f"JSON cut at byte {cut:,} of {len(text):,}"


def flip_text(rng: random.Random, text: bytes) -> tuple[bytes, str]:
    """Overwrite a few bytes of the JSON text with random bytes or JSON syntax."""
    buf = bytearray(text)
    n = rng.randint(1, 12)
    for _ in range(n):
        p = rng.randrange(len(buf))
        buf[p] = rng.randrange(256) if rng.random() < 0.4 else rng.choice(b'{}[]:,"\\0123456789eE.-ntfu ')
    return bytes(buf), f"{n} JSON byte(s) overwritten"


def _near(rng: random.Random, pattern: re.Pattern[bytes], text: bytes) -> re.Match[bytes] | None:
    """A match of ``pattern`` at or after a random place (the first one when none follows)."""
    m = pattern.search(text, rng.randrange(len(text)))
    return m if m is not None else pattern.search(text)


def _replace_numbers(rng: random.Random, text: bytes, patterns: list[re.Pattern[bytes]], values: list[bytes],
                     what: str) -> tuple[bytes, str]:
    """Replace the value of one to six number fields (each found by a pattern drawn from
    ``patterns``, group 1 the field, group 2 its value) with values drawn from ``values``."""
    out = text
    done = []
    for _ in range(rng.randint(1, 6)):
        m = _near(rng, rng.choice(patterns), out) or _near(rng, _NUMBER, out)
        if m is None:
            break
        value = rng.choice(values)
        out = out[:m.start(2)] + value + out[m.end(2):]
        done.append(f"{m.group(1).decode()}={value[:12].decode()}")
    return out, what + " " + (", ".join(done) or "(no number field)")


def odd_numbers(rng: random.Random, text: bytes) -> tuple[bytes, str]:
    """Put odd values in times and ids of any event: NaN, Infinity, 1e400, 2**70, 5,000 digits,
    negatives, fractions, strings, booleans, null, lists."""
    return _replace_numbers(rng, text, [_NUMBER], ODD_NUMBERS, "odd numbers")


def non_finite_times(rng: random.Random, text: bytes) -> tuple[bytes, str]:
    """NaN and infinite times and durations of kept events (Python's json reads ``NaN``,
    ``Infinity`` and ``1e400`` as floats that are not finite)."""
    return _replace_numbers(rng, text, [_KEPT_FIELDS[b"ts"], _KEPT_FIELDS[b"dur"]],
                            [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400"], "non-finite")


def beyond_64_bits(rng: random.Random, text: bytes) -> tuple[bytes, str]:
    """Times and ids of kept events beyond 64 bits: 2**64, 2**70, 40 digits, 5,000 digits, 1e30."""
    return _replace_numbers(rng, text, list(_KEPT_FIELDS.values()),
                            [str(1 << 64).encode(), str(1 << 70).encode(), str(-(1 << 70)).encode(),
                             b"9" * 40, b"9" * 5000, b"1e30"], "beyond 64 bits")


def wrong_types(rng: random.Random, text: bytes) -> tuple[bytes, str]:
    """A field of the wrong type (``traceEvents`` an object, ``args`` a list, ``name`` a number),
    written before the real value, which moves to a renamed key so that the JSON stays valid."""
    out = text
    done = []
    for _ in range(rng.randint(1, 3)):
        m = _near(rng, _TYPED, out) if rng.random() < 0.8 else _TYPED.search(out)
        if m is None:
            break
        value = rng.choice(WRONG_TYPES)
        out = out[:m.end()] + value + b', "' + m.group(1) + b'_moved": ' + out[m.end():]
        done.append(f"{m.group(1).decode()}={value.decode()}")
    if not done or rng.random() < 0.1:
        doc = rng.choice([b"[]", b"null", b'"trace"', b"42", b"[1, [2], {}]", b'{"traceEvents": {}}'])
        return doc, f"the whole document is {doc.decode()}"
    return out, "wrong types " + ", ".join(done)


def deep_nesting(rng: random.Random, text: bytes) -> tuple[bytes, str]:
    """A value nested 100,000 deep (arrays or objects) in an event, in ``args``, or as the
    ``traceEvents`` list."""
    depth = 100_000
    if rng.random() < 0.5:
        value = b"[" * depth + b"]" * depth
    else:
        value = b'{"a": ' * depth + b"1" + b"}" * depth
    m = _near(rng, _TYPED, text)
    if m is None:
        return b'{"traceEvents": ' + value + b"}", f"{depth:,}-deep traceEvents"
    return text[:m.end()] + value + b', "' + m.group(1) + b'_moved": ' + text[m.end():], \
        f"{depth:,}-deep value of {m.group(1).decode()}"


_KEPT_NAME = re.compile(_KEPT_EVENT + rb'"(name)"\s*:\s*"((?:[^"\\]|\\.)*)"')


def giant_text(rng: random.Random) -> bytes:
    """Hundreds of kilobytes shaped like a kernel name gone wrong: templates nested thousands
    deep, one long word, a long namespace path, unclosed parentheses, or syntax soup."""
    n = rng.choice([20_000, 100_000])
    return rng.choice([b"void f<" * n + b"int" + b">" * n + b"(int)", b"a" * (n * 8),
                       b"ns::" * n + b"kernel()", b"(" * n,
                       bytes(rng.choice(b"<>():,_ ab01") for _ in range(n))])


def giant_name(rng: random.Random, text: bytes) -> tuple[bytes, str]:
    """A kept event's name of hundreds of kilobytes (JSON-escaped as it stands)."""
    m = _near(rng, _KEPT_NAME, text)
    if m is None:
        return text, "giant name (no kept event with a name)"
    name = giant_text(rng)
    return text[:m.start(2)] + name + text[m.end(2):], f"a name of {len(name):,} bytes ({name[:12]!r}...)"


JSON_MUTATIONS: dict[str, JsonMutation] = {
    "truncate_text": truncate_text, "flip_text": flip_text, "odd_numbers": odd_numbers,
    "non_finite_times": non_finite_times, "beyond_64_bits": beyond_64_bits, "wrong_types": wrong_types,
    "deep_nesting": deep_nesting, "giant_name": giant_name,
}


def truncate_gzip(rng: random.Random, compressed: bytes) -> tuple[bytes, str]:
    """Cut the gzip stream short."""
    cut = rng.randrange(1, len(compressed))
    return compressed[:cut], f"gzip cut at byte {cut:,} of {len(compressed):,}"


def flip_gzip(rng: random.Random, compressed: bytes) -> tuple[bytes, str]:
    """Overwrite bytes of the gzip stream (its header, the deflate data or the CRC), or add a
    second member or trailing garbage."""
    how = rng.randrange(3)
    if how == 0:
        trailing = rng.choice([b"\0\0\0", b"garbage", b"\x1f\x8b"])
        return compressed + trailing, "trailing bytes after the gzip stream"
    if how == 1:
        return compressed + gzip.compress(b"]}"), "a second gzip member"
    buf = bytearray(compressed)
    n = rng.randint(1, 8)
    for _ in range(n):
        p = rng.randrange(len(buf))
        buf[p] ^= 1 << rng.randrange(8)
    return bytes(buf), f"{n} gzip bit(s) flipped"


GZIP_MUTATIONS: dict[str, JsonMutation] = {"truncate_gzip": truncate_gzip, "flip_gzip": flip_gzip}
