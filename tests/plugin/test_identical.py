"""Identical layers: computed over the stored documents, once per stage, in api/runs and api/overview."""
from __future__ import annotations

import ast
import gzip
import json
from pathlib import Path

import msgspec

from tb_ad_layer.contract.document import LayerDocument
from tb_ad_layer.convert import convert
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.plugin.identical import identical_layers, layer_signature
from tb_ad_layer.store.reader import RunStore
from tests.conftest import DUMPS, REPO
from tests.plugin.conftest import make_client
from tests.plugin.fake_trace import store_path

BASE = "/data/plugin/ad_layer/api"
QWEN = REPO / "tests" / "fixtures" / "deep_exports" / "qwen3_next_80b"


def test_identical_layers_of_a_real_depth_export(tmp_path: Path) -> None:
    # Qwen3-Next: 3 gated-delta-net layers, then a full-attention one, 12 times.
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    name = "001_export_export_to_gm.txt"
    (dumps / name).write_bytes(gzip.decompress((QWEN / f"{name}.gz").read_bytes()))
    convert(ConvertOptions(dumps, tmp_path, run="q"))
    client, _ = make_client(tmp_path)
    runs = json.loads(client.get(f"{BASE}/runs").get_data(as_text=True))["runs"]
    same = {L["layer"]: L["same_as"] for L in runs[0]["layers"]}
    kinds = {L["layer"]: L["kind"] for L in runs[0]["layers"]}
    assert len(same) == 48
    assert same[0] is None and same[3] is None  # the first of each kind
    for layer, first in same.items():
        if first is not None:
            assert first < layer and kinds[first] == kinds[layer], (layer, first)
    assert sum(v is not None for v in same.values()) >= 40
    assert {v for v in same.values() if v is not None} <= {1, 3}
    over = json.loads(client.get(f"{BASE}/overview?run=q").get_data(as_text=True))
    assert {L["layer"]: L["same_as"] for L in over["layers"]} == same


def test_names_do_not_count_but_ops_do(tmp_path: Path) -> None:
    convert(ConvertOptions(DUMPS / "ad_dsv3", tmp_path, run="d"))
    store = RunStore(store_path(tmp_path, "d"))
    stage = store.stages()[-1].idx
    a = store.layer_document(stage, store.layers(stage)[-1].layer)
    store.close()
    assert a is not None
    ren = {n.id: f"x_{n.id}" for n in a.nodes}
    renamed = msgspec.structs.replace(a, nodes=[
        msgspec.structs.replace(n, id=ren[n.id], line=n.line + 7,
                                inputs=[ren.get(i, i) for i in n.inputs]) for n in a.nodes])
    assert layer_signature(renamed) == layer_signature(a)
    assert identical_layers([(4, renamed), (2, a)]) == {4: 2}
    other = msgspec.structs.replace(a, nodes=[msgspec.structs.replace(a.nodes[0], op="other"),
                                              *a.nodes[1:]])
    assert identical_layers([(1, a), (2, other)]) == {}


def test_the_module_reads_stored_documents_only() -> None:
    src = (REPO / "tb_ad_layer" / "plugin" / "identical.py").read_text()
    mods = {n.module for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom)}
    assert not any(m and m.startswith(("tb_ad_layer.dump", "tb_ad_layer.layers", "tb_ad_layer.trace"))
                   for m in mods), mods


def test_object_addresses_in_call_targets_do_not_count(tmp_path: Path) -> None:
    # A fused DeepSeek-V3 stage calls a transform's local function in each layer, printed with
    # the address of that layer's function object.
    convert(ConvertOptions(DUMPS / "ad_dsv3", tmp_path, run="d"))
    store = RunStore(store_path(tmp_path, "d"))
    stage = store.stages()[-1].idx
    a = store.layer_document(stage, store.layers(stage)[-1].layer)
    store.close()
    assert a is not None

    def with_target(address: str) -> LayerDocument:
        target = f"<function Mixin._insert.<locals>.split_output at {address}>"
        return msgspec.structs.replace(a, nodes=[msgspec.structs.replace(a.nodes[0], op=target),
                                                 *a.nodes[1:]])
    one, two = with_target("0x7f3b2c1d54c0"), with_target("0x7f3b2c1d5660")
    assert layer_signature(one) == layer_signature(two) != layer_signature(a)
    assert identical_layers([(3, one), (4, two)]) == {4: 3}
