"""The shape text of a layer document, split into dims as the trace binding and the roofline
read it."""
from __future__ import annotations

import pytest

from tb_ad_layer.contract.shape_text import split_dims


@pytest.mark.parametrize("text, dims", [
    ("s44xs70x64", ["s44", "s70", "64"]),
    ("4x(s0 + 1)x128", ["4", "(s0 + 1)", "128"]),
    ("Max(1, s0)x7168", ["Max(1, s0)", "7168"]),   # the x of Max is not a separator
    ("s0*s1x8", ["s0*s1", "8"]),
    ("16", ["16"]),
    ("scalar", []),
    ("", []),
    ("?", ["?"]),                                    # not a shape: one dim no size evaluates
])
def test_split_dims(text: str, dims: list[str]) -> None:
    assert split_dims(text) == dims
