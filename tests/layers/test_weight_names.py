"""Weight names: the per-graph table gives what the per-name functions give."""
from __future__ import annotations

import os
import random

import pytest

from tb_ad_layer.fast_paths import PURE_PYTHON_ENV
from tb_ad_layer.layers import weights
from tb_ad_layer.layers.weights import layer_of_weight, weight_layers, weight_role, weight_table

NAMES = [
    "model_layers_5_self_attn_q_a_proj_weight", "model.layers.12.mlp.experts.3.w1.weight",
    "transformer_h_0_attn_c_attn_weight", "blocks_7_norm_weight", "model_layers_5",
    "fused_gate_up_5_weight", "_fused_qkv_3_weight", "fused_7", "fused_gate_up_x5_weight",
    "model_layers_5x_weight", "model_embed_tokens_weight", "lm_head_weight", "model_norm_weight",
    "_ad_position_ids_buffer", "layer_3_w", "xlayers_3_w", "model_layers_٣_w",
    "model_layers_3_mlp_layers_4_w", "fused__5_w", "",
]


def test_table_matches_the_per_name_functions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")  # the reference code; C is checked below
    layers, roles = weight_table(NAMES)
    assert list(layers) == list(roles) == list(dict.fromkeys(NAMES))
    for name in NAMES:
        assert layers[name] == layer_of_weight(name), name
        assert roles[name] == weight_role(name), name
    assert weight_layers(NAMES) == layers
    assert layers["fused_gate_up_5_weight"] == 5 and roles["fused_gate_up_5_weight"] == "fused_gate_up_N_weight"
    assert layers["model_layers_5x_weight"] is None and layers["model_layers_٣_w"] == 3


@pytest.mark.skipif(not weights.NATIVE, reason="C extension not built")
def test_native_table_matches_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C table (tb_ad_layer/layers/_weights.c) on names built from the patterns' pieces,
    including what it hands back to Python (non-ASCII digits, newlines, other characters)."""
    rnd = random.Random(7)
    pieces = ["layers", "layer", "h", "blocks", "fused", "_", ".", "5", "12", "0", "x", "gate",
              "up", "a", "weight", "__", "._", "٣", "\n", "é", "07", "99999999999999999999"]
    names = ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 8))) for _ in range(40000)]
    names += ["_" + n for n in names[:5000]] + NAMES
    native = weight_table(names)
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    reference = weight_table(names)
    assert native == reference
    assert list(native[0]) == list(reference[0]) and list(native[1]) == list(reference[1])


def test_native_required_when_asked() -> None:
    if os.environ.get("TB_AD_LAYER_REQUIRE_NATIVE") != "1":
        pytest.skip("TB_AD_LAYER_REQUIRE_NATIVE is not set")
    assert weights.NATIVE, "tb_ad_layer.layers._weights is not built"
