"""Shared fixtures: paths to the committed dumps and to the real traces in ../shared."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DUMPS = REPO / "tests" / "fixtures" / "dumps"
SHARED_TRACES = REPO.parent / "shared" / "traces"
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
