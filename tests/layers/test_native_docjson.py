"""The C layer-document encoder (tb_ad_layer/layers/_docjson.c) against the reference code.

``layer_document_text`` must be ``dumps(layer_document(...))`` byte for byte, and
``outside_nodes_text`` must be ``dumps(outside_nodes(...))``, on every fixture stage and on text
that needs JSON escaping; where the C code declines, the reference code's answer comes back.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.fast_paths import PURE_PYTHON_ENV
from tb_ad_layer.layers import document
from tb_ad_layer.layers.document import (dumps, layer_document, layer_document_text,
                                         outside_nodes, outside_nodes_text)
from tb_ad_layer.layers.layered import LayeredGraph, layer_graph
from tests.conftest import DUMPS, write_dump

native_only = pytest.mark.skipif(not document.NATIVE, reason="C extension not built")


def test_native_required_when_asked() -> None:
    """CI sets TB_AD_LAYER_REQUIRE_NATIVE=1: an install that silently lost the encoder fails."""
    if os.environ.get("TB_AD_LAYER_REQUIRE_NATIVE") != "1":
        pytest.skip("TB_AD_LAYER_REQUIRE_NATIVE is not set")
    assert document.NATIVE, "tb_ad_layer.layers._docjson is not built"


def native_lists(lg: LayeredGraph, index: int | None) -> tuple[str, str] | None:
    """What the C encoder itself answers (None: it declined)."""
    if index is None:
        return document._native_lists(lg, document.outside_members(lg), None)
    info = lg.layers[index]
    return document._native_lists(lg, info.members, {e.id: e.shape for e in info.external_inputs})


def assert_same(lg: LayeredGraph, *, native: bool = True) -> None:
    for index in sorted(lg.layers):
        assert layer_document_text(lg, index) == dumps(layer_document(lg, index))
        assert (native_lists(lg, index) is not None) == native
    assert outside_nodes_text(lg) == dumps(outside_nodes(lg))


@native_only
@pytest.mark.parametrize("path", sorted(DUMPS.glob("*/*.txt")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_stages(path: Path) -> None:
    lg = layer_graph(parse_dump(path).select())
    assert lg.layers
    assert_same(lg)


ESCAPES = """\
%x : 2x8 : torch.bfloat16
%norm = auto_deploy.torch_rmsnorm.default(%x : 2x8 : torch.bfloat16, %model_layers_0_input_layernorm_weight : 8 : torch.bfloat16, 1e-06) : 2x8 : torch.bfloat16
%mm = auto_deploy.torch_linear_simple.default(%norm : 2x8 : torch.bfloat16, %model_layers_0_mlp_down_proj_weight : 8x8 : torch.bfloat16, None) : 2x8 : torch.bfloat16
%out = aten.add.Tensor(%mm : 2x8 : torch.bfloat16, %x : 2x8 : torch.bfloat16) : 2x8 : torch.bfloat16
"""


@native_only
def test_escaping_and_non_ascii(tmp_path: Path) -> None:
    path = write_dump(tmp_path / "d.txt", ESCAPES)
    lg = layer_graph(parse_dump(path).select())
    # Control characters, quotes, backslashes and non-ASCII text in every string field.
    node = lg.graph.nodes[-2]
    node.args = node.args + " 'a\"b\\c\td\u00e9\u4e2d' " + "\x00\x01\x1f\x7f\b\f\n\r\t\"\\\u2028\U0001f600"
    node.shape = "2x8\u00b5"
    lg.group[node.index] = "mo\"e"
    assert_same(lg)
    text = layer_document_text(lg, 0)
    assert "\\u0000\\u0001\\u001f\x7f\\b\\f\\n\\r\\t\\\"\\\\\u2028\U0001f600" in text


@native_only
def test_long_args_are_cut_like_the_reference(tmp_path: Path) -> None:
    lg = layer_graph(parse_dump(write_dump(tmp_path / "d.txt", ESCAPES)).select())
    lg.graph.nodes[-2].args = "\u00e9" * 2500
    assert_same(lg)
    assert len(layer_document(lg, 0)["nodes"][1]["args"]) == document.ARGS_SHOWN


@native_only
def test_declines_to_the_reference(tmp_path: Path) -> None:
    lg = layer_graph(parse_dump(write_dump(tmp_path / "d.txt", ESCAPES)).select())
    # A lone surrogate has no UTF-8 form; a non-str field is not what the encoder expects.
    lg.graph.nodes[-2].args = "bad \ud800 text"
    assert_same(lg, native=False)
    lg.graph.nodes[-2].args = "fine"
    lg.graph.nodes[-2].line = 12.5
    assert_same(lg, native=False)


@native_only
def test_pure_python_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lg = layer_graph(parse_dump(write_dump(tmp_path / "d.txt", ESCAPES)).select())
    calls: list[int] = []
    real = document.layer_document
    monkeypatch.setattr(document, "layer_document", lambda *a: calls.append(1) or real(*a))
    layer_document_text(lg, 0)
    assert calls == []
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    layer_document_text(lg, 0)
    assert calls == [1]


@native_only
def test_other_node_classes_read_through_attributes(tmp_path: Path) -> None:
    """The encoder reads Node slots directly; an instance of another class (here a subclass
    with a computed ``shape``) must be read through the attribute protocol instead."""
    from tb_ad_layer.dump.graph import Node

    class ShapedNode(Node):
        __slots__ = ()

        @property  # type: ignore[override]
        def shape(self) -> str:
            return "computed"

        @shape.setter
        def shape(self, value: str) -> None:
            pass

    lg = layer_graph(parse_dump(write_dump(tmp_path / "d.txt", ESCAPES)).select())
    layer_document_text(lg, 0)  # the slot offsets of Node are cached by now
    old = lg.graph.nodes[-2]
    new = ShapedNode(old.name, old.kind, old.target, old.shape, old.dtype, old.inputs,
                     old.weights, old.args, old.line, old.index)
    lg.graph.nodes[-2] = new
    lg.graph._by_name = None
    assert_same(lg)
    assert '"shape":"computed"' in layer_document_text(lg, 0)
