"""The default fuzz run builds the inputs that broke the readers before: NaN and infinite times,
numbers beyond 64 bits, JSON nested 100,000 deep and nsys string ids that point nowhere (trace
readers); a layer index beyond 64 bits and a node that reads itself (dump reader).

For each class, the cases of the default run (:data:`~tests.fuzz.cases.DEFAULT_COUNT` dump
cases, this seed) whose first mutation aims at it are built in turn until one holds it; the test
fails when none does, so that a change to the mutations cannot quietly stop reaching them (its
message lists the cases that aimed at the class). No source holds any of these classes before it
is mutated (:func:`test_sources_hold_none`), so reaching one is the mutation's doing.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.cases import DEFAULT_COUNT, SHARE
from tests.fuzz.classes import CLASSES
from tests.fuzz.inputs import build_dump, build_trace, dump_plan, dump_sources, trace_plan, trace_sources


@pytest.mark.parametrize("name", list(CLASSES))
def test_default_run_reaches(name: str, tmp_path: Path) -> None:
    family, kind, holds = CLASSES[name]
    count = round(DEFAULT_COUNT * SHARE[family])
    plan = dump_plan if family == "dump" else trace_plan
    tried = []
    for i in range(count):
        if plan(i)[1] != kind:
            continue
        case_id = f"{family}-{i:04d}"
        if family == "dump":
            path = build_dump(case_id, tmp_path / case_id).case.kept
        else:
            path = build_trace(case_id, tmp_path / case_id).path
        assert path is not None
        if holds(path):
            return
        tried.append(case_id)
    pytest.fail(f"no case of the default run builds a {name} input (cases aiming at it: "
                f"{', '.join(tried) or 'none'})")


def test_sources_hold_none() -> None:
    for name, (family, _, holds) in CLASSES.items():
        for source in (dump_sources() if family == "dump" else trace_sources()):
            assert not holds(source), f"{source} already holds a {name} input"
