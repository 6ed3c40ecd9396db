"""The contract Structs against everything that speaks the contract: the documents the layers code
builds from real model exports, the committed demo stores, every JSON
example of docs/API.md, and the panel's generated TypeScript types."""
from __future__ import annotations

import importlib.util
import re
import sqlite3
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest

from tb_ad_layer.contract import analysis, api, cli, document
from tb_ad_layer.contract.document import LayerDocument, OutsideNodes
from tb_ad_layer.convert import load_stage, resolve_inputs
from tb_ad_layer.layers.document import (
    layer_document_text,
    layer_record,
    outside_nodes_text,
    outside_records,
)
from tb_ad_layer.store.reader import RunStore
from tests.conftest import DUMPS, REPO

DEMO = REPO / "demo_logs"
API_MD = REPO / "docs" / "API.md"
_BLOCK = re.compile(r"(?:<!-- contract: (\w+) -->\n)?```json\n(.*?)```", re.S)


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_api_types",
                                                  REPO / "tools" / "gen_api_types.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_typescript_is_what_the_generator_writes() -> None:
    gen = load_generator()
    committed = (REPO / "frontend" / "src" / "api" / "contract.ts").read_text(encoding="utf-8")
    assert committed == gen.typescript(), \
        "frontend/src/api/contract.ts is out of date: run python tools/gen_api_types.py"


def test_generated_typescript_spells_every_field() -> None:
    ts = load_generator().typescript()
    assert "export interface LayerResponse {" in ts and "  from: string;" in ts
    assert '  node_kind: "call" | "placeholder" | "output";' in ts
    assert "  runs: (RunInfo | UnreadableRun)[];" in ts
    assert "  trace_summary: TraceSummary | null;" in ts
    assert "  groups: Record<string, number>;" in ts
    for record in (*vars(document).values(), *vars(api).values()):
        if isinstance(record, type) and issubclass(record, msgspec.Struct) \
                and record.__module__ in (document.__name__, api.__name__) \
                and not record.__name__.startswith("_"):
            body = ts.split(f"export interface {record.__name__} {{\n", 1)[1].split("\n}", 1)[0]
            names = [line.split(":")[0].strip() for line in body.splitlines()
                     if not line.strip().startswith(("/**", "*"))]
            assert names == [f.encode_name for f in msgspec.structs.fields(record)]


def contract_type(name: str) -> Any:
    for module in (api, document, cli, analysis):
        if hasattr(module, name):
            return getattr(module, name)
    raise AssertionError(f"docs/API.md names no record of the contract: {name}")


def test_every_api_md_example_is_a_valid_record() -> None:
    blocks = _BLOCK.findall(API_MD.read_text(encoding="utf-8"))
    assert len(blocks) >= 10
    for name, text in blocks:
        assert name, f"a JSON example of docs/API.md has no contract marker:\n{text[:200]}"
        if name == "RunsResponse":
            api.decode_runs(text)
        else:
            msgspec.json.decode(text, type=contract_type(name))


@pytest.mark.parametrize("broken", [
    '{"error": "x"}',                                         # a field missing
    '{"error": "x", "known": [], "extra": 1}',                # an unknown field
    '{"error": 1, "known": []}',                              # a wrong type
])
def test_records_are_strict(broken: str) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(broken, type=api.ErrorBody)


def test_demo_stores_decode_with_the_records() -> None:
    stores = sorted(DEMO.glob("*/plugins/ad_layer/run.sqlite"))
    assert len(stores) == 7
    docs = 0
    for path in stores:
        RunStore(path)  # meta (with the trace's) decodes as StoreMeta, every table as declared
        conn = sqlite3.connect(path)
        for (data,) in conn.execute("SELECT d.data FROM layers l JOIN docs d ON d.hash = l.doc"):
            doc = msgspec.json.decode(zlib.decompress(data), type=LayerDocument)
            docs += 1
            assert doc.trace_summary is None or doc.trace_summary.kernel_count >= 0
        for (data,) in conn.execute("SELECT d.data FROM outside o JOIN docs d ON d.hash = o.nodes"):
            msgspec.json.decode(zlib.decompress(data), type=OutsideNodes)
        conn.close()
    assert docs > 100


MODEL_DUMPS = sorted(p for p in DUMPS.iterdir() if p.is_dir())


@pytest.mark.parametrize("dump_dir", MODEL_DUMPS, ids=lambda p: p.name)
def test_documents_the_layers_code_builds_decode(dump_dir: Path) -> None:
    """Every stage of every model export: the document as the converter stores it and as it is
    built, valid and equal."""
    checked = 0
    for stage in resolve_inputs(dump_dir, ["all"]):
        lg = load_stage(stage).lg
        for index in lg.layers:
            stored = msgspec.json.decode(layer_document_text(lg, index), type=LayerDocument)
            assert stored == layer_record(lg, index)
            checked += 1
        outside = msgspec.json.decode(outside_nodes_text(lg), type=OutsideNodes)
        assert outside == outside_records(lg)
    assert checked > 0


def test_group_vocabulary_is_the_contracts() -> None:
    """The layer rules, the seed-JSON reader and the panel name groups from one vocabulary."""
    from typing import get_args

    from tb_ad_layer.contract.document import GROUPS, SUB_GROUPS, Group, LayerNode, SubGroup
    from tb_ad_layer.layers import vocabulary

    assert GROUPS == get_args(Group) and SUB_GROUPS == get_args(SubGroup)
    named = {v for k, v in vars(vocabulary).items() if k.isupper() and isinstance(v, str)}
    assert set(GROUPS) | set(SUB_GROUPS) <= named | {vocabulary.KIND_OTHER}
    assert vocabulary.as_group("moe") == "moe" and vocabulary.as_sub_group(None) is None
    with pytest.raises(ValueError, match="not a group"):
        vocabulary.as_group("router")
    # A stored document with a group outside the vocabulary is refused when read.
    node = msgspec.json.encode({"id": "a", "op": "x", "label": "x", "node_kind": "call",
                                "shape": "1", "dtype": "f", "group": "weird", "sub_group": None,
                                "stream": "main", "inputs": [], "weights": [], "args": "",
                                "line": 1, "kernels": [], "time_us": 0.0})
    with pytest.raises(msgspec.ValidationError, match="group"):
        msgspec.json.decode(node, type=LayerNode)
