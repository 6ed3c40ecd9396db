"""Fuzz the ``tb-ad-layer`` command with mutated real dumps and traces, each case a real process.

The cases take turns: ``convert`` of a mutated dump directory, ``convert --trace`` with a mutated
trace, ``inspect`` (text or ``--json``) and ``kernels`` (to stdout or ``-o``, from the trace
alone or cut by ``--dump``). Every run must end within the limit with status 0 or 2; on 2 stderr
is one line naming the input, no output file is written, and a conversion leaves the run that
was there before byte for byte as it was; no run leaves a temporary store. See
:mod:`tests.fuzz.cases` for the seed, the count and running one case alone.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tb_ad_layer.convert import convert
from tb_ad_layer.options import ConvertOptions
from tests.conftest import DUMPS
from tests.fuzz.cases import case_ids, case_index, case_rng
from tests.fuzz.inputs import build_dump, build_trace
from tests.fuzz.properties import check_not_accepted_if_invalid, check_store_after, run_cli, snapshot

RUN = "previous"
SCENARIOS = ("convert", "convert-trace", "inspect", "kernels")
#: The dump a trace with no dump of its own is converted with.
DEFAULT_DUMP = DUMPS / "ad_dsv3"


@pytest.fixture(scope="module")
def previous_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory holding a store, copied into each case's logdir."""
    logdir = tmp_path_factory.mktemp("fuzz-previous")
    convert(ConvertOptions(DUMPS / "ad_llama", logdir, run=RUN))
    return logdir / RUN


def _logdir(tmp: Path, previous_run: Path) -> Path:
    logdir = tmp / "logs"
    shutil.copytree(previous_run, logdir / RUN)
    return logdir


@pytest.mark.parametrize("case_id", case_ids("cli"))
def test_cli_case(case_id: str, tmp_path: Path, previous_run: Path) -> None:
    i = case_index(case_id)
    scenario = SCENARIOS[i % len(SCENARIOS)]
    rotation = i // len(SCENARIOS)
    rng = case_rng(case_id + "/command")
    if scenario == "convert":
        dump = build_dump(case_id, tmp_path, rotation)
        logdir = _logdir(tmp_path, previous_run)
        before = snapshot(logdir / RUN)
        run = run_cli(dump.case, ["convert", str(dump.target), "--logdir", str(logdir), "--run", RUN,
                                  "--stages", *dump.stages, "-q"], dump.directory, tmp_path)
        check_store_after(dump.case, logdir / RUN, before, failed=run.code != 0)
        check_not_accepted_if_invalid(dump, accepted=run.code == 0)
        return
    trace = build_trace(case_id, tmp_path, rotation)
    if scenario == "convert-trace":
        logdir = _logdir(tmp_path, previous_run)
        before = snapshot(logdir / RUN)
        run = run_cli(trace.case, ["convert", str(trace.dump or DEFAULT_DUMP), "--logdir", str(logdir),
                                   "--run", RUN, "--trace", str(trace.path), "-q"], trace.path, tmp_path)
        check_store_after(trace.case, logdir / RUN, before, failed=run.code != 0)
    elif scenario == "inspect":
        run_cli(trace.case, ["inspect", str(trace.path)] + (["--json"] if rng.random() < 0.5 else []),
                trace.path, tmp_path)
    else:
        out = tmp_path / "kernels.json"
        args = ["kernels", str(trace.path), "-q"] + (["-o", str(out)] if rng.random() < 0.5 else [])
        if trace.dump is not None and rng.random() < 0.5:
            args += ["--dump", str(trace.dump)]
        run = run_cli(trace.case, args, trace.path, tmp_path)
        if run.code != 0 and out.exists():
            pytest.fail(f"{trace.case.describe()}\nkernels failed but wrote {out}", pytrace=False)
