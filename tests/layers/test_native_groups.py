"""The C group passes (tb_ad_layer/layers/_groups.c) against the Python reference.

Every fixture graph and a few thousand seeded random graphs (tests/layers/
test_native_membership.random_graph, with aux-stream regions and attention/MLA ops mixed in)
must get the same groups, sub-groups, streams and attention flavours both ways, and the C code
must take them (not decline).
"""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tb_ad_layer.dump.graph import Graph
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.fast_paths import PURE_PYTHON_ENV
from tb_ad_layer.layers import groups
from tb_ad_layer.layers.membership import assign_layers
from tb_ad_layer.layers.weights import weight_table
from tests.conftest import DUMPS
from tests.layers.test_native_membership import random_graph

native_only = pytest.mark.skipif(not groups.NATIVE, reason="C extension not built")

AUX_TARGETS = ["auto_deploy.begin_aux_stream_passthrough.default",
               "auto_deploy.end_aux_stream_passthrough.default",
               "auto_deploy.wait_aux_stream_passthrough.default",
               "auto_deploy.record_event_aux_stream.default", "trtllm.mla_with_cache.default",
               "auto_deploy.torch_mla.default", "auto_deploy.triton_attention.default",
               "trtllm.noaux_tc_op.default", "aten.sub.Tensor", "my_custom_moe_op"]
MLA_WEIGHTS = ["self_attn_q_a_proj_weight", "self_attn_kv_b_proj_weight",
               "self_attn_kv_a_layernorm_weight"]


def test_native_required_when_asked() -> None:
    """CI sets TB_AD_LAYER_REQUIRE_NATIVE=1: an install that silently lost the passes fails."""
    if os.environ.get("TB_AD_LAYER_REQUIRE_NATIVE") != "1":
        pytest.skip("TB_AD_LAYER_REQUIRE_NATIVE is not set")
    assert groups.NATIVE, "tb_ad_layer.layers._groups is not built"


def both(graph: Graph) -> tuple[tuple | None, tuple]:
    """(C answer, reference answer) for the graph's own layer assignment."""
    layers_of, roles = weight_table(graph.weights)
    layers = assign_layers(graph, layers_of)
    inputs, consumers = graph.topology()
    native = groups._groups.assign_groups(graph.nodes, layers, inputs, consumers, roles,
                                          groups._target_info, groups._classify_role)
    old = os.environ.get(PURE_PYTHON_ENV)
    os.environ[PURE_PYTHON_ENV] = "1"
    try:
        reference = groups.assign_groups(graph, layers, roles)
    finally:
        if old is None:
            del os.environ[PURE_PYTHON_ENV]
        else:
            os.environ[PURE_PYTHON_ENV] = old
    return native, reference


@native_only
@pytest.mark.parametrize("path", sorted(DUMPS.glob("*/*.txt")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_graphs(path: Path) -> None:
    for graph in parse_dump(path).modules:
        native, reference = both(graph)
        assert native is not None
        assert native == reference


def with_aux(seed: int) -> Graph:
    graph = random_graph(seed)
    rnd = random.Random(-seed)
    for node in graph.nodes[1:-1]:
        if node.kind == "call" and rnd.random() < 0.15:
            node.target = rnd.choice(AUX_TARGETS)
        if node.weights and rnd.random() < 0.1:
            layer = node.weights[0].split("_")[2] if node.weights[0].startswith("model_layers_") \
                else "0"
            w = f"model_layers_{layer}_{rnd.choice(MLA_WEIGHTS)}"
            graph.weights.setdefault(w, type(next(iter(graph.weights.values())))(w))
            node.weights = (*node.weights, w)
    return graph


@native_only
def test_random_graphs() -> None:
    aux = 0
    for seed in range(3000):
        graph = with_aux(seed)
        native, reference = both(graph)
        assert native is not None, seed
        assert native == reference, seed
        aux += "aux" in reference[2]
    assert aux > 300  # the aux-stream marking ran on a good share of them


@native_only
def test_declines_to_the_reference() -> None:
    graph = random_graph(3)
    layers_of, roles = weight_table(graph.weights)
    layers = assign_layers(graph, layers_of)
    inputs, consumers = graph.topology()
    # a weight without a role, read by a call inside a layer
    roles.pop(next(w for node in graph.nodes if layers[node.index] >= 0 for w in node.weights))
    assert groups._groups.assign_groups(graph.nodes, layers, inputs, consumers, roles,
                                        groups._target_info, groups._classify_role) is None
    with pytest.raises(KeyError):  # the reference is what reports it
        groups.assign_groups(graph, layers, roles)
