"""The C layer passes (tb_ad_layer/layers/_membership.c) against the Python reference.

Every fixture graph and a few thousand seeded random graphs (decoder-shaped chains with random
rewiring, sinks, getitems, norm arithmetic, buffers and multi-layer weights) must get the same
owner for every node both ways, and the C code must take them (not decline).
"""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tb_ad_layer.dump.graph import CALL, OUTPUT, PLACEHOLDER, Graph, Node, Weight
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.fast_paths import PURE_PYTHON_ENV
from tb_ad_layer.layers import membership
from tb_ad_layer.layers.weights import weight_layers
from tests.conftest import DUMPS

native_only = pytest.mark.skipif(not membership.NATIVE, reason="C extension not built")


def test_native_required_when_asked() -> None:
    """CI sets TB_AD_LAYER_REQUIRE_NATIVE=1: an install that silently lost the passes fails."""
    if os.environ.get("TB_AD_LAYER_REQUIRE_NATIVE") != "1":
        pytest.skip("TB_AD_LAYER_REQUIRE_NATIVE is not set")
    assert membership.NATIVE, "tb_ad_layer.layers._membership is not built"


def native(graph: Graph) -> list[int] | None:
    inputs, consumers = graph.topology()
    return membership._membership.assign_layers(
        graph.nodes, inputs, consumers, weight_layers(graph.weights), membership.is_buffer_like,
        membership._target_flags)


def reference(graph: Graph) -> list[int]:
    return membership._Membership(graph, weight_layers(graph.weights)).run()


@native_only
@pytest.mark.parametrize("path", sorted(DUMPS.glob("*/*.txt")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_graphs(path: Path) -> None:
    for graph in parse_dump(path).modules:
        got = native(graph)
        assert got is not None
        assert got == reference(graph)


OPS = ["aten.mm.default", "aten.add.Tensor", "aten.mul.Tensor", "aten.pow.Tensor_Scalar",
       "aten.mean.dim", "aten.rsqrt.default", "<built-in function getitem>", "aten.view.default",
       "auto_deploy.torch_rmsnorm.default", "auto_deploy.torch_moe.default",
       "auto_deploy.torch_rope_with_explicit_cos_sin.default", "aten.copy_.default",
       "aten._assert_scalar.default", "aten.to.dtype", "aten.softmax.int"]
ROLES = ["input_layernorm_weight", "self_attn_q_proj_weight", "mlp_gate_weight",
         "mlp_experts_0_w1_weight", "post_attention_layernorm_weight", "mlp_down_proj_weight"]
MODEL_WEIGHTS = ["model_embed_tokens_weight", "model_norm_weight", "lm_head_weight",
                 "model_rotary_emb_cos_cached", "_ad_position_ids_buffer"]


def random_graph(seed: int) -> Graph:
    """A decoder-shaped graph: per layer a norm on the residual, ops reading the layer's
    weights, a skip add; then random extra edges, sinks, getitems and model-level ops."""
    rnd = random.Random(seed)
    layers = rnd.randint(1, 5)
    nodes: list[Node] = []
    weights: dict[str, Weight] = {}

    def add(kind: str, target: str, inputs: list[int], wts: list[str]) -> int:
        j = len(nodes)
        names = tuple(dict.fromkeys(nodes[i].name for i in inputs))
        for w in wts:
            weights.setdefault(w, Weight(w, "8", "torch.bfloat16"))
        nodes.append(Node(f"n{j}", kind, target, "2x8", "torch.bfloat16", names,
                          tuple(dict.fromkeys(wts)), "", j + 1, j))
        return j

    def pick(k: int) -> list[int]:
        return [rnd.randrange(len(nodes)) for _ in range(k)] if nodes else []

    for _ in range(rnd.randint(1, 3)):
        add(PLACEHOLDER, "", [], [])
    res = add(CALL, "aten.embedding.default", pick(1), [MODEL_WEIGHTS[0]])
    if rnd.random() < 0.5:
        add(CALL, "aten.index_select.default", pick(1), [MODEL_WEIGHTS[rnd.choice((3, 4))]])
    for layer in range(layers):
        x = res
        for _ in range(rnd.randint(0, 3)):  # norm arithmetic before the norm weight
            x = add(CALL, rnd.choice(OPS[2:6]), [x], [])
        x = add(CALL, "auto_deploy.torch_rmsnorm.default", [x],
                [f"model_layers_{layer}_{ROLES[0]}"])
        for _ in range(rnd.randint(1, 6)):
            role = rnd.choice(ROLES)
            owner = layer if rnd.random() < 0.9 else rnd.randrange(layers)
            wts = [f"model_layers_{owner}_{role}"] if rnd.random() < 0.7 else []
            if rnd.random() < 0.1:  # a weight list spanning layers (ties, most common)
                wts += [f"model_layers_{rnd.randrange(layers)}_{r}" for r in ROLES[:3]]
            if rnd.random() < 0.1:
                wts.append(rnd.choice(MODEL_WEIGHTS))
            extra = pick(rnd.randint(0, 2)) if rnd.random() < 0.3 else []
            x = add(CALL, rnd.choice(OPS), [x] + extra, wts)
            if rnd.random() < 0.2:  # a sink beside it
                add(CALL, "aten._assert_scalar.default", [x], [])
        res = add(CALL, "aten.add.Tensor", [res, x], [])
    for _ in range(rnd.randint(0, 4)):  # final norm chain, lm head, noise
        res = add(CALL, rnd.choice(OPS[2:6] + OPS[:2]), [res] + pick(rnd.randint(0, 1)), [])
    res = add(CALL, "auto_deploy.torch_rmsnorm.default", [res], [MODEL_WEIGHTS[1]])
    res = add(CALL, "aten.mm.default", [res], [MODEL_WEIGHTS[2]])
    for _ in range(rnd.randint(0, 6)):
        add(CALL, rnd.choice(OPS), pick(rnd.randint(0, 3)),
            [f"model_layers_{rnd.randrange(layers)}_{rnd.choice(ROLES)}"] if rnd.random() < 0.3
            else [])
    add(OUTPUT, "", [res], [])
    return Graph(module="(root)", source="fuzz.txt", nodes=nodes, weights=weights)


@native_only
def test_random_graphs() -> None:
    for seed in range(3000):
        graph = random_graph(seed)
        got = native(graph)
        assert got is not None, seed
        assert got == reference(graph), seed


@native_only
def test_declines_to_the_reference() -> None:
    graph = random_graph(1)
    inputs, consumers = graph.topology()
    # A weight the map does not know, or a layer index too large for the C arrays.
    wl = weight_layers(graph.weights)
    missing = dict(wl)
    missing.pop(next(iter(missing)))
    assert membership._membership.assign_layers(graph.nodes, inputs, consumers, missing,
                                                membership.is_buffer_like,
                                                membership._target_flags) is None
    huge = {k: (10**9 if v is not None else None) for k, v in wl.items()}
    assert membership._membership.assign_layers(graph.nodes, inputs, consumers, huge,
                                                membership.is_buffer_like,
                                                membership._target_flags) is None
    assert membership.assign_layers(graph, huge) == membership._Membership(graph, huge).run()


@native_only
def test_pure_python_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = random_graph(2)
    calls: list[int] = []
    real = membership._Membership.run
    monkeypatch.setattr(membership._Membership, "run", lambda self: calls.append(1) or real(self))
    membership.assign_layers(graph)
    assert calls == []
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    membership.assign_layers(graph)
    assert calls == [1]
