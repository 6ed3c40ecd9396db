"""No conversion leaves its temporary store ``.run.sqlite.tmp-<pid>`` behind: not when creating
the store fails, not when anything raises later, not when the converter is stopped by SIGTERM or
SIGHUP; and one killed outright (SIGKILL) has its leftover removed by the next conversion, while
the temporary file of a conversion still running is never touched."""
from __future__ import annotations

import hashlib
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tb_ad_layer.convert import convert
from tb_ad_layer.errors import InputError
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.store import writer as writer_module
from tb_ad_layer.store.writer import StoreWriter, remove_stale_temp_files, store_path, temp_path
from tests.conftest import DUMPS, REPO

RUN = "r"
CLI = [sys.executable, "-m", "tb_ad_layer.cli"]


def temp_files(directory: Path) -> list[Path]:
    return sorted(directory.glob(".run.sqlite.tmp-*")) if directory.exists() else []


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def big_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DeepSeek-V3-like dump directory large enough that converting all of its stages takes
    seconds: a stop signal lands while the temporary store is being written."""
    out = tmp_path_factory.mktemp("big") / "dsv3"
    subprocess.run([sys.executable, str(REPO / "tools" / "make_ad_dump.py"), "--model", "dsv3",
                    "--layers", "30", "--unfused-moe", "--experts", "64", "--stages", "all",
                    "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    return out


@pytest.fixture
def previous(tmp_path: Path) -> Path:
    """A logdir where run ``r`` already holds a store (the one a failure must leave intact)."""
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run=RUN))
    return store_path(tmp_path, RUN)


def start_convert(dump: Path, logdir: Path, **popen: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(CLI + ["convert", str(dump), "--logdir", str(logdir), "--run", RUN,
                                   "--stages", "all", "-q"], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def wait_for_temp_file(proc: subprocess.Popen[str], directory: Path) -> Path:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = temp_files(directory)
        if found:
            return found[0]
        assert proc.poll() is None, f"converter ended first: {proc.communicate()}"
        time.sleep(0.002)
    raise AssertionError("the converter never created its temporary store")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_stop_signal_to_a_real_converter_leaves_no_temp_file(
        big_dump: Path, previous: Path, signum: int) -> None:
    before = digest(previous)
    proc = start_convert(big_dump, previous.parents[3])
    tmp = wait_for_temp_file(proc, previous.parent)
    assert tmp == temp_path(previous, proc.pid)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    name = signal.Signals(signum).name
    assert err == f"tb-ad-layer: stopped by {name}; no partial output was left behind\n"
    assert temp_files(previous.parent) == []
    assert digest(previous) == before


def test_temp_file_of_a_killed_converter_is_removed_by_the_next(big_dump: Path,
                                                                 previous: Path) -> None:
    """SIGKILL cannot be caught: the leftover stays until the next conversion into that
    directory, which removes it once its process is gone."""
    before = digest(previous)
    proc = start_convert(big_dump, previous.parents[3])
    tmp = wait_for_temp_file(proc, previous.parent)
    proc.kill()
    proc.communicate(timeout=60)
    assert tmp.exists() and digest(previous) == before
    convert(ConvertOptions(DUMPS / "ad_llama", previous.parents[3], run=RUN))
    assert temp_files(previous.parent) == []


def test_temp_file_of_a_live_process_is_left_alone(previous: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = temp_path(previous, sleeper.pid)
        live.write_bytes(b"SQLite format 3\x00 being written by a live converter")
        dead = temp_path(previous, dead_pid())
        dead.write_bytes(b"SQLite format 3\x00 left by a dead converter")
        convert(ConvertOptions(DUMPS / "ad_llama", previous.parents[3], run=RUN))
        assert temp_files(previous.parent) == [live]
        assert remove_stale_temp_files(previous.parent) == []
    finally:
        sleeper.kill()
        sleeper.wait()
    assert remove_stale_temp_files(previous.parent) == [live]


def test_names_that_only_look_like_temp_files_are_left_alone(previous: Path) -> None:
    others = [previous.with_name(n) for n in (".run.sqlite.tmp-", ".run.sqlite.tmp-0",
                                              ".run.sqlite.tmp-12x", "run.sqlite.tmp-1",
                                              ".run.sqlite.tmp-99999999999")]
    for p in others:
        p.write_bytes(b"")
    convert(ConvertOptions(DUMPS / "ad_llama", previous.parents[3], run=RUN))
    assert all(p.exists() for p in others)


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_failure_while_creating_the_store_leaves_nothing(tmp_path: Path) -> None:
    """A real converter whose first write to the new store fails (the file size limit stands
    in for a full disk): one line naming the store, exit status 2, no temporary file."""
    logdir = tmp_path / "logs"

    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # fail the write instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    proc = start_convert(DUMPS / "ad_dsv3", logdir, preexec_fn=limit_file_size)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"tb-ad-layer: error: {store_path(logdir, RUN)}: cannot create the "
                          f"run store:"), err
    assert not logdir.exists()  # the directories made for the store are gone too


class Boom(Exception):
    pass


def _raise(*_args: object, **_kwargs: object) -> None:
    raise Boom("failed here")


def _interrupt(*_args: object) -> None:
    raise KeyboardInterrupt


def _disk_full(*_args: object) -> None:
    raise OSError(28, "No space left on device")


#: Where to fail inside a conversion: (what to patch, attribute, replacement, expected error).
FAILURES: dict[str, tuple[Any, str, Callable[..., Any], type[BaseException]]] = {
    "creating_tables": (StoreWriter, "set_meta", _raise, Boom),
    "sqlite_error_on_create": (writer_module, "DDL", "CREATE TABLE meta (;", InputError),
    "adding_a_stage": (StoreWriter, "add_encoded_stage", _raise, Boom),
    "adding_layers": (StoreWriter, "add_encoded_layers", _raise, Boom),
    "interrupted": (StoreWriter, "add_file", _interrupt, KeyboardInterrupt),
    "moving_into_place": (writer_module.os, "replace", _disk_full, InputError),
}


@pytest.mark.parametrize("where", FAILURES)
def test_failure_anywhere_leaves_no_temp_file(previous: Path, where: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    target, name, replacement, error = FAILURES[where]
    before = digest(previous)
    monkeypatch.setattr(target, name, replacement)
    with pytest.raises(error):
        convert(ConvertOptions(DUMPS / "ad_dsv3", previous.parents[3], run=RUN, stages=("all",)))
    assert temp_files(previous.parent) == []
    assert digest(previous) == before


def test_failure_in_a_trace_attacher_leaves_no_temp_file(previous: Path) -> None:
    with pytest.raises(Boom):
        convert(ConvertOptions(DUMPS / "ad_dsv3", previous.parents[3], run=RUN), attach_trace=_raise)
    assert temp_files(previous.parent) == []


def test_failure_into_a_new_run_removes_its_directories(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(StoreWriter, "add_encoded_layers", _raise)
    with pytest.raises(Boom):
        convert(ConvertOptions(DUMPS / "ad_dsv3", tmp_path / "logs", run="a/b"))
    assert not (tmp_path / "logs").exists()
