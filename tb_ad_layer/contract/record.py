"""The base of every contract Struct, and the one JSON encoder they are written with.

A contract record is strict on the way in: decoding JSON that lacks a field, holds an unknown
one, or has a value of the wrong type raises :class:`msgspec.ValidationError`, so a document
that does not match the contract is caught where it is read, not in the browser. Records hold
trees (no reference cycles), which lets them skip the garbage collector (``gc=False``): decoding
a layer document of tens of thousands of objects then costs no collection passes.
"""
from __future__ import annotations

from typing import Any

import msgspec


class Record(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, gc=False):
    """A JSON object of the contract. Fields are keyword-only and encoded in declaration
    order; a field's JSON name is its Python name unless declared with
    ``msgspec.field(name=...)``."""


#: Compact UTF-8 JSON of records, lists and dicts. Non-finite floats become ``null``, so an
#: encoded payload is always valid JSON.
ENCODER = msgspec.json.Encoder()


def encode(value: Any) -> bytes:
    """``value`` (records, or plain lists, dicts and scalars) as compact UTF-8 JSON."""
    return ENCODER.encode(value)
