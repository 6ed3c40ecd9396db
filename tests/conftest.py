"""Shared fixtures (paths to the committed dumps and to the real traces in ../shared) and the kind
of every test.

Kinds (pytest markers, registered in pyproject.toml): ``unit`` (fast, in-process, small inputs:
``python -m pytest -m unit`` is the quick run), ``integration`` (real-depth fixtures, the real
traces in ../shared, the ``tb-ad-layer`` command or another Python in a process of its own, a
real TensorBoard: anything slow), ``browser`` (tests/e2e), ``fuzz`` (tests/fuzz) and
``packaging`` (tests/packaging). A test's kind comes from where it is: its directory
(``DIRECTORY_KINDS``), then ``INTEGRATION`` for the slow files and tests of the unit
directories; a kind marker on the test (or its class or module) overrides both.
tests/test_kinds.py fails on a test without exactly one kind."""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DUMPS = REPO / "tests" / "fixtures" / "dumps"
SHARED = REPO.parent / "shared"
SHARED_TRACES = SHARED / "traces"
REAL_WRITER = SHARED / "dumps" / "real_writer"
_STALE_NOTE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """Test the sources as they are: when a source changed since the compiled modules were
    built, run the sources everywhere (this process and the CLI and TensorBoard processes the
    tests start) instead of one refusal warning per process breaking the tests that read
    stderr. A fresh build (scripts/setup.sh, CI) tests the compiled modules."""
    from tb_ad_layer import _compiled

    verdict = _compiled.check()
    if verdict.modules and verdict.reason:
        os.environ[_compiled.PURE_ENV] = "1"
        _STALE_NOTE.append(f"compiled modules are stale ({verdict.reason}): testing the "
                           f"sources; bash scripts/setup.sh compiles them again")


KINDS = ("unit", "integration", "browser", "fuzz", "packaging")

# The kind of the tests of each directory: the test file's own directory, not its parents, so
# that a new directory has no kind (and tests/test_kinds.py fails) until it is named here.
DIRECTORY_KINDS = {
    "tests": "unit",
    "tests/analysis": "unit",
    "tests/compile_log": "unit",
    "tests/contract": "unit",
    "tests/live": "unit",
    "tests/dump": "unit",
    "tests/layers": "unit",
    "tests/plugin": "unit",
    "tests/store": "unit",
    "tests/trace": "unit",
    "tests/e2e": "browser",
    "tests/fuzz": "fuzz",
    "tests/packaging": "packaging",
}

# The files, and single tests (``file::name``: every parameter of it), of the unit directories
# that are integration tests, with why and the seconds they took in one run of their directory
# on a 2-core machine under a load of 5-6, the converter running from its sources (a quiet
# machine takes about half). Everything else in those directories is the quick run.
INTEGRATION = {
    # The command, or a tool, in processes of its own.
    "tests/plugin/test_no_converter_loaded.py": "a fresh interpreter answers every route: 14 s",
    "tests/analysis/test_host_tables.py": "the real traces in ../shared: 15 s",
    "tests/analysis/test_generated_trace.py": "generated traces converted: 3 s",
    "tests/analysis/test_trace_dims.py": "generated traces with recorded shapes converted: 10 s",
    "tests/analysis/test_report.py::test_the_analysis_reads_the_run_store_only": "1 process: 3 s",
    "tests/test_demo_logs.py": "tools/make_demo.py regenerates demo_logs/: 24 s",
    "tests/test_cli_trace.py": "tools/make_traces.py makes its trace: 4 s",
    "tests/test_ranks.py": "generated 8-rank and 2-rank traces converted; the real 2-GPU trace: 13 s",
    "tests/test_cli_convert.py::test_bad_arguments_exit_2_one_line": "5 processes: 8 s",
    "tests/test_cli_convert.py::test_help_has_examples": "1 process",
    "tests/test_cli_convert.py::test_bad_graph_exit_2_one_line_nothing_written": "3 processes: 3 s",
    "tests/test_cli_convert.py::test_doubts_about_the_final_stage_are_warning_lines_also_when_quiet":
        "4 processes on a 61-layer dump: 13 s",
    "tests/dump/test_real_writer.py::test_every_file_converts_through_the_cli": "11 processes: 19 s",
    "tests/dump/test_damaged_dumps.py::test_dump_path_not_utf8_is_refused": "1 process",
    "tests/trace/test_damaged_traces.py::test_trace_path_not_utf8_is_refused": "2 processes: 2 s",
    "tests/store/test_temp_files.py::test_stop_signal_to_a_real_converter_leaves_no_temp_file":
        "processes converting a generated 30-layer dump: 4 s",
    "tests/store/test_temp_files.py::test_temp_file_of_a_killed_converter_is_removed_by_the_next":
        "the same: 1 s",
    "tests/layers/test_linear_time.py::test_many_readers_of_one_value_convert_in_linear_work":
        "counts executed lines in a process of its own: 1 s",
    # Real depth: the 13 architectures of tests/fixtures/ad_stages (26-92 layers) through their
    # stages, the 96 of tests/fixtures/deep_exports, the 48- and 61-layer benchmark dumps.
    "tests/layers/test_ad_stages.py": "184 s",
    "tests/dump/test_ad_stage_fixtures.py": "61 s",
    "tests/layers/test_deep_exports.py": "53 s",
    "tests/layers/test_doubts.py::test_no_doubt_on_a_full_size_export": "7 s",
    # Sweeps of every stage of every dump fixture beside the layering checks that the quick run
    # keeps (tests/layers/test_membership.py): the fixtures' own well-formedness, the documents,
    # the doubts, and trace generation through the trace pipeline.
    "tests/dump/test_model_fixtures.py": "the generator's checker; the benchmark dumps: 23 s",
    "tests/contract/test_contract.py::test_documents_the_layers_code_builds_decode": "13 s",
    "tests/layers/test_doubts.py::test_no_doubt_on_a_real_export": "6 s",
    "tests/trace/test_inferred_layers.py": "683 s",
    "tests/trace/test_dump_plans.py": "411 s",
    "tests/trace/test_final_stage_traces.py": "75 s",
    # The real traces in ../shared/traces.
    "tests/trace/test_real_traces.py": "28 s",
    "tests/trace/test_ingest.py::test_kernel_sequences_of_profiler_graph_trace": "6 s",
    "tests/trace/test_reader.py::test_dispatch_by_content_not_extension": "3 s",
    # A real TensorBoard process; twelve conversions under four reading threads.
    "tests/plugin/test_tensorboard_process.py": "18 s",
    "tests/plugin/test_discovery.py::test_store_replaced_while_being_read_never_fails": "6 s",
}

# When set, collection writes {node id: [kinds]} of every collected test to this file.
KINDS_REPORT_ENV = "TB_AD_LAYER_KINDS_REPORT"
COLLECTED_KINDS = pytest.StashKey[dict[str, list[str]]]()


def kind_by_location(path: str, nodeid: str) -> str | None:
    """The kind of the test ``nodeid`` in ``path`` (relative to the checkout, with ``/``) by
    where it is; None for a directory ``DIRECTORY_KINDS`` does not name."""
    names = nodeid.split("[", 1)[0].split("::")[1:]
    if any("::".join([path, *names[:k]]) in INTEGRATION for k in range(len(names) + 1)):
        return "integration"
    return DIRECTORY_KINDS.get(path.rpartition("/")[0])


def kinds_of(item: pytest.Item) -> list[str]:
    """The kind markers of a test (its own, its class's and its module's), each once."""
    return list(dict.fromkeys(m.name for m in item.iter_markers() if m.name in KINDS))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its kind before ``-m`` selects by kind (tryfirst: ahead of pytest's
    own deselection), and remember every test's kinds for tests/test_kinds.py."""
    collected: dict[str, list[str]] = {}
    for item in items:
        if not kinds_of(item):
            try:
                path = item.path.resolve().relative_to(REPO).as_posix()
            except ValueError:
                path = ""
            kind = kind_by_location(path, item.nodeid)
            if kind is not None:
                item.add_marker(kind)
        collected[item.nodeid] = kinds_of(item)
    config.stash[COLLECTED_KINDS] = collected
    report = os.environ.get(KINDS_REPORT_ENV)
    if report:
        Path(report).write_text(json.dumps(collected), encoding="utf-8")


#: The module-level names tests use for inputs in ../shared (the real traces and the dumps of
#: AutoDeploy's own writer). A test naming one, or parametrized with a path inside ../shared,
#: needs ../shared.
SHARED_NAMES = frozenset({"SHARED", "SHARED_TRACES", "REAL_WRITER", "REAL", "REAL_DUMPS", "H100",
                          "NSIGHT_GRAPH", "HTA", "B300", "HF_QWEN", "needs_shared"})
NO_SHARED_REASON = (f"needs ../shared (real traces and real-writer dumps), which is not beside "
                    f"this clone ({SHARED}); CI has it and runs this test")


def _code_names(code: Any) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            yield from _code_names(const)


def _names_shared(func: Any, seen: set[int]) -> bool:
    """Whether ``func``, or a function of the test modules it calls by a global name, names one
    of :data:`SHARED_NAMES`."""
    code = getattr(func, "__code__", None)
    if code is None or id(code) in seen:
        return False
    seen.add(id(code))
    names = set(_code_names(code))
    if SHARED_NAMES & names:
        return True
    scope = getattr(func, "__globals__", {})
    return any(_names_shared(scope[n], seen) for n in names
               if callable(scope.get(n)) and getattr(scope[n], "__module__", "").startswith("tests"))


def needs_shared(item: pytest.Item) -> bool:
    """Whether the test reads ../shared: it (or a helper of the tests it calls) names one of
    :data:`SHARED_NAMES`, or one of its parameters is a path inside ../shared."""
    if _names_shared(getattr(item, "function", None), set()):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(isinstance(v, Path) and SHARED in v.parents for v in params.values())


def pytest_collection_finish(session: pytest.Session) -> None:
    """Without ../shared beside the clone, the tests that read it skip and say why; under CI,
    which always has it, they run (and fail if it is missing)."""
    if SHARED.is_dir() or os.environ.get("CI"):
        return
    skip = pytest.mark.skip(reason=NO_SHARED_REASON)
    for item in session.items:
        if needs_shared(item):
            item.add_marker(skip)


def pytest_report_header(config: pytest.Config) -> list[str]:
    from tb_ad_layer._compiled import describe

    return [f"tb-ad-layer converter: {describe()}", *_STALE_NOTE]


@pytest.fixture
def dumps() -> Path:
    return DUMPS


def write_dump(path: Path, body: str, module: str = "(root)", transform: str = "compile_model",
               stage: str = "compile") -> Path:
    """Write a dump file in TensorRT-LLM's layout around ``body`` (node lines)."""
    banner = "=" * 80
    path.write_text(f"# Transform: {transform}\n# Stage: {stage}\n# GraphModules found: 1\n\n\n"
                    f"{banner}\n# GraphModule: {module}\n{banner}\n\n{body.strip()}\n",
                    encoding="utf-8")
    return path


CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic"]


@pytest.fixture(scope="session")
def shared_browser() -> Iterator[Any]:
    """One headless Chromium for every browser suite of the session: Playwright's sync API
    allows one running instance per thread, so the suites cannot each start their own."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(f"Chromium not found at {CHROMIUM}: the end-to-end tests need Debian's "
                    "chromium (apt-get install chromium; scripts/test.sh does this) or "
                    "CHROMIUM=<path>", pytrace=False)
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
    finally:
        pw.stop()
