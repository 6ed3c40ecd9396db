"""Fuzz the dump reader and the converter in process with mutated real dumps.

Every case converts a mutated dump into a logdir that already holds a run: the conversion either
succeeds or raises ``InputError`` naming the dump, within the time limit; a refused one leaves
the previous run byte for byte as it was, none leaves a temporary store, and none accepts a
node that reads its own value. See
:mod:`tests.fuzz.cases` for the seed, the count and running one case alone.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tb_ad_layer.convert import convert
from tb_ad_layer.options import ConvertOptions
from tests.conftest import DUMPS
from tests.fuzz.cases import case_ids
from tests.fuzz.inputs import build_dump
from tests.fuzz.properties import check_not_accepted_if_invalid, check_store_after, in_process, snapshot

RUN = "previous"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A logdir whose run ``previous`` holds a store (the one every refused conversion keeps)."""
    d = tmp_path_factory.mktemp("fuzz-logdir")
    convert(ConvertOptions(DUMPS / "ad_llama", d, run=RUN))
    return d


@pytest.mark.parametrize("case_id", case_ids("dump"))
def test_dump_case(case_id: str, tmp_path: Path, logdir: Path) -> None:
    dump = build_dump(case_id, tmp_path)
    run_dir = logdir / RUN
    before = snapshot(run_dir)
    options = ConvertOptions(dump.target, logdir, run=RUN, stages=dump.stages)
    err = in_process(dump.case, lambda: convert(options), dump.directory)
    check_store_after(dump.case, run_dir, before, failed=err is not None)
    check_not_accepted_if_invalid(dump, accepted=err is None)
