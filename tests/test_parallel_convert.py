"""Converting stages in worker processes (``convert --jobs N``): the same run store, row for row,
and the same progress output as a serial run; a bad stage fails with the serial message and
leaves no store and no worker behind; only a stage that carries its predecessor's layers waits
for them."""
from __future__ import annotations

import multiprocessing
import re
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tb_ad_layer import convert as convert_module
from tb_ad_layer.cli import main
from tb_ad_layer.errors import InputError
from tb_ad_layer.progress import Progress
from tb_ad_layer.stage_pool import StagePool, run_in_process
from tb_ad_layer.store.writer import store_path
from tests.conftest import DUMPS

DSV3 = DUMPS / "ad_dsv3"
TRACE = Path(__file__).parent / "fixtures" / "traces" / "ad_dsv3_decode_streams.sqlite"
_TIMES = re.compile(r"\[ *[0-9.]+s\]|in [0-9.]+ ?s\b|tfevents\S*")


@pytest.fixture(autouse=True)
def _workers_for_small_dumps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixtures are far smaller than what is worth a worker: use workers anyway."""
    monkeypatch.setattr(convert_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")


def rows(store: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, in rowid order where it has one."""
    conn = sqlite3.connect(store)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: conn.execute(f"SELECT * FROM {t}").fetchall() for t in tables}
    finally:
        conn.close()


def run(capsys: pytest.CaptureFixture[str], logdir: Path, *args: str) -> tuple[int, str]:
    code = main(["convert", str(args[0]), "--logdir", str(logdir), "--run", "r", *args[1:]])
    return code, _TIMES.sub("T", capsys.readouterr().err).replace(str(logdir), "LOGDIR")


@pytest.mark.parametrize("extra", [(), ("--trace", str(TRACE), "--phase", "decode")],
                         ids=["dumps", "with_trace"])
def test_workers_write_the_serial_store(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        extra: tuple[str, ...]) -> None:
    code1, out1 = run(capsys, tmp_path / "serial", DSV3, "--stages", "all", "--jobs", "1", *extra)
    code2, out2 = run(capsys, tmp_path / "parallel", DSV3, "--stages", "all", "--jobs", "2",
                      *extra)
    assert code1 == code2 == 0
    serial = rows(store_path(tmp_path / "serial", "r"))
    parallel = rows(store_path(tmp_path / "parallel", "r"))
    assert serial == parallel
    assert len(serial["layers"]) == 20 and len(serial["stages"]) == 4
    assert out1 == out2
    assert [line[2:].split(":")[0] for line in out1.splitlines()
            if line.startswith("T [")] == [f"[{k}/4] {p.name}" for k, p in
                                  enumerate(sorted(DSV3.glob("*.txt")), 1)]
    assert multiprocessing.active_children() == []


def test_a_bad_stage_fails_as_serially_and_leaves_nothing(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "dump"
    shutil.copytree(DSV3, dump, ignore=shutil.ignore_patterns("*.json", "*.md"))
    # Two bad stages: the first in stage order is the one reported, as a serial run does.
    for name in ("040_pattern_matcher_match_rope_pattern.txt", "085_compile_compile_model.txt"):
        path = dump / name
        path.write_text(path.read_text().replace(" = ", " == ", 40))
    code1, out1 = run(capsys, tmp_path / "serial", dump, "--stages", "all", "--jobs", "1")
    code2, out2 = run(capsys, tmp_path / "parallel", dump, "--stages", "all", "--jobs", "3")
    assert code1 == code2 == 2
    assert out1 == out2
    assert "040_pattern_matcher" in out2.splitlines()[-1]
    assert not (tmp_path / "serial").exists() and not (tmp_path / "parallel").exists()
    assert multiprocessing.active_children() == []


def _chain(task: tuple[int, bool], fetch: Callable[[], Any], publish: Callable[[Any], None],
           progress: Progress) -> list[int]:
    """Task ``(k, carries)``: a list of the tasks that handed it on, ending in ``k``."""
    k, carries = task
    if k == 3:
        raise InputError("task 3 is bad", path="three")
    before = fetch() if carries else []
    progress(f"task {k}")
    publish(before + [k])
    return list(before + [k])


@pytest.mark.parametrize("jobs", [1, 3])
def test_only_a_carrying_task_waits_for_the_one_before(jobs: int) -> None:
    tasks = [(0, False), (1, True), (2, True), (3, False), (4, True)]
    progress = Progress(quiet=True)
    if jobs == 1:
        outcomes = run_in_process(_chain, tasks, progress)
        got = [next(outcomes) for _ in range(3)]
        with pytest.raises(InputError, match="three: task 3 is bad"):
            next(outcomes)
    else:
        with StagePool(_chain, tasks, jobs) as pool:
            outcomes = pool.results(progress)
            got = [next(outcomes) for _ in range(3)]
            with pytest.raises(InputError, match="three: task 3 is bad"):
                next(outcomes)
    assert got == [[0], [0, 1], [0, 1, 2]]
    assert multiprocessing.active_children() == []
