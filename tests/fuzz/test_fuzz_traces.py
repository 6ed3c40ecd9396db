"""Fuzz the trace readers in process with mutated real traces (nsys exports, profiler JSON).

Every case opens the mutated trace and lists what it holds (what ``inspect`` does), finds its
layers from the trace alone (what ``kernels`` does), and, for a trace generated from a committed
dump, maps it onto that dump's graph (what ``convert --trace`` does). Each step either succeeds
or raises ``InputError`` naming the trace, within the time limit. See :mod:`tests.fuzz.cases`
for the seed, the count and running one case alone.
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from tb_ad_layer.convert import load_stage, resolve_inputs
from tb_ad_layer.trace.graph_nodes import ModelNodes
from tb_ad_layer.trace.ingest import ingest_trace, kernel_sequences
from tb_ad_layer.trace.inventory import inventory, inventory_text
from tb_ad_layer.trace.reader import read_trace
from tb_ad_layer.trace_attach import model_nodes
from tests.fuzz.cases import case_ids
from tests.fuzz.inputs import build_trace
from tests.fuzz.properties import in_process


@cache
def graph_of(dump_dir: Path) -> ModelNodes:
    return model_nodes(load_stage(resolve_inputs(dump_dir)[-1]).lg)


def _inspect(path: Path) -> None:
    db = read_trace(path)
    try:
        inventory_text(db, inventory(db))
    finally:
        db.close()


@pytest.mark.parametrize("case_id", case_ids("trace"))
def test_trace_case(case_id: str, tmp_path: Path) -> None:
    trace = build_trace(case_id, tmp_path)
    if in_process(trace.case, lambda: _inspect(trace.path), trace.path) is not None:
        return  # refused on opening: every later step would refuse the same way
    in_process(trace.case, lambda: kernel_sequences(trace.path), trace.path)
    if trace.dump is not None:
        nodes = graph_of(trace.dump)
        in_process(trace.case, lambda: ingest_trace(trace.path, nodes), trace.path)
