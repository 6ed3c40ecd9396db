"""Conversion work grows linearly with the graph, also when thousands of nodes read one value.

Counted, not timed: the test counts the Python lines executed inside ``tb_ad_layer`` (reading,
layering, the layer documents) for a graph and for one four times as large. Linear work grows
about four times; one quadratic step (each of n readers scanning all n readers of the value)
grows it sixteen times.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tb_ad_layer._compiled import PURE_ENV
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.layers.layered import layer_graph
from tests.conftest import REPO, write_dump

PACKAGE = str(Path(__file__).resolve().parents[2] / "tb_ad_layer")


def _fan_out(path: Path, readers: int) -> Path:
    """Layer 0 computes one value that ``readers`` nodes read: half of them read by nothing
    (asserts), half stacked through a list argument for the layer's output projection."""
    lines = ["%x : 2x8 : torch.bfloat16",
             "%v = aten.linear.default(%x : 2x8 : torch.bfloat16, "
             "%model_layers_0_proj_weight : 8x8 : torch.bfloat16) : 2x8 : torch.bfloat16"]
    kept = []
    for k in range(readers):
        if k % 2:
            lines.append(f"%a_{k} = aten._assert_tensor_metadata.default("
                         f"%v : 2x8 : torch.bfloat16) : ? : NoneType")
        else:
            lines.append(f"%r_{k} = aten.mul.Tensor(%v : 2x8 : torch.bfloat16, 2) : "
                         f"2x8 : torch.bfloat16")
            kept.append(f"r_{k}")
    lines.append(f"%s = aten.stack.default([{', '.join(kept)}]) : 2x8 : torch.bfloat16")
    lines.append("%y = aten.linear.default(%s : 2x8 : torch.bfloat16, "
                 "%model_layers_0_out_weight : 8x8 : torch.bfloat16) : 2x8 : torch.bfloat16")
    lines.append("%out = aten.mul.Tensor(%y : 2x8 : torch.bfloat16, "
                 "%model_norm_weight : 8 : torch.bfloat16) : 2x8 : torch.bfloat16")
    lines.append("output %out")
    return write_dump(path, "\n".join(lines))


# Run in a child with the Python sources (TB_AD_LAYER_PURE_PYTHON=1): compiled modules execute
# no Python lines to count.
_COUNT = r"""
import sys
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.layers.document import layer_record
from tb_ad_layer.layers.layered import layer_graph
package, path = sys.argv[1], sys.argv[2]
count = 0
def tracer(frame, event, arg):
    if not frame.f_code.co_filename.startswith(package):
        return None
    def local(frame, event, arg):
        global count
        if event == "line":
            count += 1
        return local
    return local
sys.settrace(tracer)
lg = layer_graph(parse_dump(path).select())
for index in lg.layers:
    layer_record(lg, index)
sys.settrace(None)
print(count)
"""


def _lines_executed(path: Path) -> int:
    env = {**os.environ, PURE_ENV: "1"}
    out = subprocess.run([sys.executable, "-c", _COUNT, PACKAGE, str(path)], env=env, check=True,
                         capture_output=True, text=True, cwd=REPO)
    return int(out.stdout.split()[-1])


def test_many_readers_of_one_value_convert_in_linear_work(tmp_path: Path) -> None:
    small = _lines_executed(_fan_out(tmp_path / "001_a_small.txt", 1000))
    large = _lines_executed(_fan_out(tmp_path / "001_a_large.txt", 4000))
    assert large / small < 5, (small, large)


def test_the_fan_out_graph_is_layered_as_expected(tmp_path: Path) -> None:
    lg = layer_graph(parse_dump(_fan_out(tmp_path / "001_a_b.txt", 14_000)).select())
    assert set(lg.layers) == {0}
    assert lg.layers[0].node_count == 14_003
    assert lg.layer[lg.graph.node("s").index] == 0
    assert lg.layer[lg.graph.node("out").index] is None
