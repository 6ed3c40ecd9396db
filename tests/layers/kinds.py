"""What a layer kind may be: the vocabulary's mixers, in its order, then at most one FFN."""
from __future__ import annotations

from tb_ad_layer.layers.vocabulary import FFNS, MIXERS


def is_kind(text: str) -> bool:
    """Whether ``text`` is a layer kind: ``mixers+ffn`` in the vocabulary's order."""
    parts = text.split("+")
    mixers = [p for p in parts if p in MIXERS]
    ffn = [p for p in parts if p in FFNS]
    return len(mixers) + len(ffn) == len(parts) and len(ffn) <= 1 and bool(parts) \
        and parts == [m for m in MIXERS if m in mixers] + ffn
