"""Every test has exactly one kind (unit, integration, browser, fuzz, packaging; tests/conftest.py
gives them by location): a test without one would be left out of every ``-m`` run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import (
    COLLECTED_KINDS,
    DIRECTORY_KINDS,
    INTEGRATION,
    KINDS,
    KINDS_REPORT_ENV,
    REPO,
    kind_by_location,
)


def problems(kinds: dict[str, list[str]]) -> list[str]:
    """One line per test without exactly one kind."""
    return [f"{nodeid}: no kind: name its directory in DIRECTORY_KINDS (tests/conftest.py) or mark it"
            if not found else f"{nodeid}: {len(found)} kinds ({', '.join(found)}): keep one"
            for nodeid, found in kinds.items() if len(found) != 1]


def unmatched_entries(nodeids: list[str]) -> list[str]:
    """The entries of INTEGRATION that name none of the tests ``nodeids``."""
    bases = {n.split("[", 1)[0] for n in nodeids}
    return [e for e in INTEGRATION if not any(b == e or b.startswith(f"{e}::") for b in bases)]


def test_the_location_rules() -> None:
    assert kind_by_location("tests/dump/test_reader.py", "tests/dump/test_reader.py::test_bad_input[x]") \
        == "unit"
    assert kind_by_location("tests/e2e/test_panel.py", "tests/e2e/test_panel.py::test_x") == "browser"
    assert kind_by_location("tests/test_demo_logs.py", "tests/test_demo_logs.py::test_x") == "integration"
    # A test named in the table, with its parameters, and in a class of a file named there.
    t = "tests/test_cli_convert.py::test_bad_arguments_exit_2_one_line"
    assert kind_by_location(t.split("::")[0], f"{t}[args0-no such directory]") == "integration"
    assert kind_by_location("tests/test_cli_convert.py", f"{t}_too") == "unit"
    assert kind_by_location("tests/test_cli_trace.py", "tests/test_cli_trace.py::TestA::test_b") \
        == "integration"
    # A new directory has no kind until it is named in DIRECTORY_KINDS; a parent's does not count.
    assert kind_by_location("tests/newdir/test_x.py", "tests/newdir/test_x.py::test_y") is None
    assert kind_by_location("elsewhere/test_x.py", "elsewhere/test_x.py::test_y") is None
    assert problems({"a": ["unit"], "b": [], "c": ["unit", "integration"]}) == [
        "b: no kind: name its directory in DIRECTORY_KINDS (tests/conftest.py) or mark it",
        "c: 2 kinds (unit, integration): keep one"]


def test_the_tables_name_registered_kinds_and_unit_directories() -> None:
    assert set(DIRECTORY_KINDS.values()) <= set(KINDS)
    for entry in INTEGRATION:
        directory = entry.split("::", 1)[0].rpartition("/")[0]
        assert DIRECTORY_KINDS.get(directory) == "unit", entry


def test_every_test_of_this_session_has_one_kind(request: pytest.FixtureRequest) -> None:
    """The tests this session collected (all of them for ``python -m pytest -m unit``), as
    collection saw them before ``-m`` deselected any."""
    kinds = request.config.stash[COLLECTED_KINDS]
    found = problems(kinds)
    assert not found, "\n".join(found)


@pytest.mark.integration
def test_every_test_of_the_suite_has_one_kind(tmp_path: Path) -> None:
    """The whole suite, collected in a process of its own (an explicit kind: by location this
    file is unit)."""
    report = tmp_path / "kinds.json"
    env = dict(os.environ, **{KINDS_REPORT_ENV: str(report)})
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "tests"], cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    kinds: dict[str, list[str]] = json.loads(report.read_text(encoding="utf-8"))
    found = problems(kinds)
    assert not found, "\n".join(found)
    stale = unmatched_entries(list(kinds))
    assert not stale, f"INTEGRATION names no test: {stale}"
    counts = Counter(k for found in kinds.values() for k in found)
    assert set(counts) == set(KINDS), counts
    assert len(kinds) > 4000 and counts["unit"] > len(kinds) / 3, counts
