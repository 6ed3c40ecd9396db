"""PyTorch profiler (Kineto) Chrome-trace JSON."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.torch_profiler import read_torch_profiler
from tests.trace.helpers import FIXTURES


def test_generated_profiler_trace() -> None:
    td = read_torch_profiler(FIXTURES / "dsv3_decode.pt.trace.json.gz")
    assert td.format == "torch-profiler"
    assert len(td.graph_launch_correlations) == 24
    assert {s.key for s in td.streams} >= {"pid31337/dev0/ctx1/s7", "pid31337/dev0/ctx1/s23"}
    assert set(td.graph_node_id) == {-1}


def test_profiler_graph_node_ids() -> None:
    td = read_torch_profiler(FIXTURES / "dsv3_decode_nodeids.pt.trace.json.gz")
    assert len({n for n in td.graph_node_id if n != -1}) > 100


def test_plain_json_list_form(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 3, "ts": 1.5, "dur": 2,
                                 "args": {"device": 1, "stream": 3, "correlation": 9}}]))
    td = read_torch_profiler(path)
    k = td.kernel(0)
    assert (k.start_ns, k.end_ns, k.device, k.stream, k.correlation) == (1500, 3500, 1, 3, 9)


@pytest.mark.parametrize("content, message", [
    (b'{"traceEvents": [{"ph": "X", "cat": "kernel"', "invalid or truncated JSON"),
    (b'{"traceEvents": 3}', "no 'traceEvents' list"),
    (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1}]}', "traceEvents[0].ts"),
])
def test_bad_json(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_torch_profiler(path)


def test_truncated_gzip(tmp_path: Path) -> None:
    data = gzip.compress(json.dumps({"traceEvents": []}).encode() * 50)
    path = tmp_path / "cut.pt.trace.json.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="truncated"):
        read_torch_profiler(path)
