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
    db = read_torch_profiler(FIXTURES / "dsv3_decode.pt.trace.json.gz")
    assert db.format == "torch-profiler"
    assert len(db.graph_launch_correlations()) == 24
    ks = db.kernels("1")
    assert {k.stream_key for k in ks} >= {"pid31337/dev0/ctx1/s7", "pid31337/dev0/ctx1/s23"}
    assert {k.graph_node_id for k in ks} == {None}
    assert all(k.launch_ns is not None for k in ks)  # matched to their CUDA call by correlation id


def test_profiler_graph_node_ids() -> None:
    db = read_torch_profiler(FIXTURES / "dsv3_decode_nodeids.pt.trace.json.gz")
    assert len({k.graph_node_id for k in db.kernels("1")} - {None}) > 100


def test_plain_json_list_form(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            [
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": "k",
                    "pid": 1,
                    "tid": 3,
                    "ts": 1.5,
                    "dur": 2,
                    "args": {"device": 1, "stream": 3, "correlation": 9},
                }
            ]
        )
    )
    k = read_torch_profiler(path).kernels("1")[0]
    assert (k.start_ns, k.end_ns, k.device, k.stream, k.correlation) == (1500, 3500, 1, 3, 9)


def test_module_ranges_and_annotations(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {
                        "ph": "X",
                        "cat": "python_function",
                        "name": "nn.Module: Qwen2DecoderLayer_0",
                        "pid": 5,
                        "tid": 5,
                        "ts": 10,
                        "dur": 20,
                    },
                    {
                        "ph": "X",
                        "cat": "python_function",
                        "name": "torch/nn/modules/module.py(1743): _call_impl",
                        "pid": 5,
                        "tid": 5,
                        "ts": 10,
                        "dur": 20,
                    },
                    {
                        "ph": "X",
                        "cat": "user_annotation",
                        "name": "ProfilerStep#3",
                        "pid": 5,
                        "tid": 5,
                        "ts": 0,
                        "dur": 50,
                    },
                ]
            }
        )
    )
    db = read_torch_profiler(path)
    assert [(r.text, r.src) for r in db.ranges()] == [("ProfilerStep#3", "annotation"),
                                                      ("nn.Module: Qwen2DecoderLayer_0", "module")]


@pytest.mark.parametrize("content, message", [
    (b'{"traceEvents": [{"ph": "X", "cat": "kernel"', "invalid or truncated JSON"),
    (b'{"traceEvents": 3}', "no 'traceEvents' list"),
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
