"""The C per-layer summary loops (tb_ad_layer/layers/_summary.c) against the Python reference:
each layer's members and call-group counts, and what each layer reads from outside itself."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tb_ad_layer.dump.graph import Graph
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.fast_paths import PURE_PYTHON_ENV
from tb_ad_layer.layers import external, layered
from tb_ad_layer.layers.groups import assign_groups
from tb_ad_layer.layers.membership import assign_layers
from tb_ad_layer.layers.weights import weight_table
from tests.conftest import DUMPS
from tests.layers.test_native_groups import with_aux

native_only = pytest.mark.skipif(not layered.NATIVE, reason="C extension not built")


def test_native_required_when_asked() -> None:
    if os.environ.get("TB_AD_LAYER_REQUIRE_NATIVE") != "1":
        pytest.skip("TB_AD_LAYER_REQUIRE_NATIVE is not set")
    assert layered.NATIVE, "tb_ad_layer.layers._summary is not built"


def answers(graph: Graph, monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """(members, calls, external sources of every layer), from C and from the reference."""
    layers_of, roles = weight_table(graph.weights)
    owners = assign_layers(graph, layers_of)
    groups = assign_groups(graph, owners, roles)[0]
    buffers = external.model_buffers(graph, layers_of)
    out = []
    for pure in ("0", "1"):
        monkeypatch.setenv(PURE_PYTHON_ENV, pure)
        members, calls = layered._members_and_calls(graph, owners, groups)
        sources = {k: external._sources(graph, owners, k, js, buffers)
                   for k, js in members.items()}
        out.append((members, {k: list(v.items()) for k, v in calls.items()}, sources))
    return out


@native_only
@pytest.mark.parametrize("path", sorted(DUMPS.glob("*/*.txt")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_graphs(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for graph in parse_dump(path).modules:
        native, reference = answers(graph, monkeypatch)
        assert native == reference


@native_only
def test_random_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    for seed in range(1500):
        native, reference = answers(with_aux(seed), monkeypatch)
        assert native == reference, seed


@native_only
def test_declines_to_the_reference() -> None:
    graph = with_aux(5)
    layers_of, roles = weight_table(graph.weights)
    owners = assign_layers(graph, layers_of)
    groups = assign_groups(graph, owners, roles)[0]
    owners[3] = -2  # not a layer, not "no layer": only the reference knows what to do
    assert layered._summary.layer_members(graph.nodes, owners, groups, "call") is None
    owners[3] = 0
    j = next(j for j, owner in enumerate(owners) if owner >= 0)
    graph.nodes[j].index = j + 1  # Node.index must be the position
    assert layered._summary.layer_members(graph.nodes, owners, groups, "call") is None
