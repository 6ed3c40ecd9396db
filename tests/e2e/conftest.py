"""Fixtures of every browser end-to-end suite: one generated logdir, real ``tensorboard`` processes
(one per path prefix, shared by the session) and headless Chromium driven by Playwright.

The logdir is built once per session with the real converter: ``tools/make_demo.py`` (DeepSeek-V3
style decode/prefill runs with traces, an unfused run, a Llama run), a ``hostile`` run whose store
maps a kernel named like C++ markup onto a node, a ``notrace`` run (the same dump as ``hostile``,
no trace), and a ``large`` run holding the large layers of ``tests/large_layer.py``. Each test gets a
fresh browser page; its screenshot is written to ``test-artifacts/e2e/<test>.png`` (also when it
fails), and any console error, page error or dialog fails the test. Helpers that drive the panel
and wait on its state are in ``tests/e2e/panel.py``.

Chromium is required: when ``/usr/bin/chromium`` (or ``$CHROMIUM``) is missing the tests fail with
a message saying so (CI installs it); they never skip.
"""
from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlparse

import msgspec
import pytest

from tests.e2e.panel import ARTIFACTS
from tests.large_layer import large_layer_dump
from tests.tensorboard_process import TensorBoardProcess, http_get, running_tensorboard

REPO = Path(__file__).resolve().parents[2]
STATIC = REPO / "tb_ad_layer" / "plugin" / "static"
HOSTILE = "void k<float, &foo>(T* <script>alert(1)</script>)"
HOSTILE_RUN = "hostile"
NOTRACE_RUN = "notrace"
LARGE_RUN = "large"
#: A real-depth untraced export (Qwen3-Next, 48 layers, 38,723 nodes), converted from a directory
#: named like the run, so the model recorded is the run's name too.
DEEP_RUN = "qwen3_next"
DEEP_EXPORT = REPO / "tests" / "fixtures" / "deep_exports" / "qwen3_next_80b"
PREFIX = "/tb"
START_DEADLINE_S = 90.0
VIEWPORT = {"width": 1500, "height": 950}

# ------------------------------------------------------------------------------- logdir

def _hostile_attacher(target: dict[str, Any]):
    """The plugin tests' fake decode trace, with the first mapped kernel renamed to HOSTILE (both
    its full and its short name) in the kernel rows and in the node's kernels the layer document
    is built with."""
    from tests.plugin.fake_trace import fake_attacher

    inner = fake_attacher()

    class Writer:
        def __init__(self, w: Any) -> None:
            self._w = w

        def __getattr__(self, name: str) -> Any:
            return getattr(self._w, name)

        def add_kernels(self, rows: Any) -> None:
            rows = list(rows)
            for i, r in enumerate(rows):
                if r[10] is not None and r[9] == 0:  # first kernel mapped onto a layer-0 node
                    target["node"] = r[10]
                    rows[i] = (HOSTILE, HOSTILE, *r[2:])
                    break
            self._w.add_kernels(rows)

    def attach(lg: Any, writer: Any) -> Any:
        mapped = inner(lg, Writer(writer) if writer is not None else None)
        kernels = mapped.node_kernels.get(target.get("node"))
        if not kernels:
            raise AssertionError("hostile kernel: no mapped node found")
        kernels[0] = msgspec.structs.replace(kernels[0], name=HOSTILE, kernel=HOSTILE)
        return mapped

    return attach


@pytest.fixture(scope="session")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("e2e")
    root = base / "logs"
    r = subprocess.run([sys.executable, "tools/make_demo.py", "--out", str(root)], cwd=REPO,
                       capture_output=True, text=True)
    assert r.returncode == 0, f"tools/make_demo.py failed:\n{r.stdout}\n{r.stderr}"
    from tb_ad_layer.convert import convert
    from tb_ad_layer.options import ConvertOptions
    from tests.conftest import DUMPS

    target: dict[str, Any] = {}
    convert(ConvertOptions(DUMPS / "ad_dsv3", root, run=HOSTILE_RUN),
            attach_trace=_hostile_attacher(target))
    convert(ConvertOptions(DUMPS / "ad_dsv3", root, run=NOTRACE_RUN))
    (root / "hostile_node.txt").write_text(target["node"], encoding="utf-8")
    deep = base / DEEP_RUN
    deep.mkdir()
    name = "001_export_export_to_gm.txt"
    (deep / name).write_bytes(gzip.decompress((DEEP_EXPORT / f"{name}.gz").read_bytes()))
    convert(ConvertOptions(deep, root, run=DEEP_RUN))
    big = large_layer_dump(base)
    r = subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", "convert", str(big), "--logdir", str(root),
                        "--run", LARGE_RUN, "-q"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, f"converting {big} failed:\n{r.stdout}\n{r.stderr}"
    return root


@pytest.fixture(scope="session")
def hostile_node(logdir: Path) -> str:
    return (logdir / "hostile_node.txt").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------- tensorboard

class TensorBoard:
    """A running ``tensorboard`` process: ``url(path)`` and JSON helpers for its plugin API."""

    def __init__(self, port: int, prefix: str, log: Path) -> None:
        self.port = port
        self.prefix = prefix
        self.log = log

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{self.prefix}{path}"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    def get(self, path: str) -> tuple[int, bytes, dict[str, str]]:
        return http_get(self.port, self.prefix + path)

    def api(self, route: str, **params: Any) -> Any:
        q = f"?{urlencode({k: v for k, v in params.items() if v is not None})}" if params else ""
        status, body, _ = self.get(f"/data/plugin/ad_layer/api/{route}{q}")
        assert status == 200, f"api/{route}{q}: {status} {body[:300]!r}"
        return json.loads(body)

    @property
    def panel_url(self) -> str:
        """The panel page as TensorBoard serves it to its plugin iframe (same HTML, base and CSP)."""
        return self.url("/data/plugin_entry.html?name=ad_layer")

    def panel(self, **state: Any) -> str:
        """URL of the panel page with a view state in the hash."""
        h = "&".join(f"{k}={v}" for k, v in state.items())
        return self.panel_url + (f"#{h}" if h else "")


def _start_tensorboard(logdir: Path, workdir: Path, prefix: str) -> Iterator[TensorBoard]:
    def plugin_listed(tb: TensorBoardProcess) -> bool:
        status, body, _ = tb.get("/data/plugins_listing", 2.0)
        return status == 200 and "ad_layer" in json.loads(body)

    with running_tensorboard(logdir, workdir, prefix=prefix, ready=plugin_listed,
                             deadline_s=START_DEADLINE_S) as tb:
        yield TensorBoard(tb.port, prefix, tb.log)


@pytest.fixture(scope="session")
def panel_built() -> None:
    for f in ("index.js", "layout_worker.js"):
        if not (STATIC / f).is_file():
            pytest.fail(f"the panel is not built ({STATIC / f} missing): run `npm ci && npm run build` "
                        "in frontend/", pytrace=False)


@pytest.fixture(scope="session")
def tb(logdir: Path, panel_built: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TensorBoard]:
    yield from _start_tensorboard(logdir, tmp_path_factory.mktemp("tb"), "")


@pytest.fixture(scope="session")
def tb_prefixed(logdir: Path, panel_built: None,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[TensorBoard]:
    yield from _start_tensorboard(logdir, tmp_path_factory.mktemp("tb_prefix"), PREFIX)


@pytest.fixture(scope="session")
def api(tb: TensorBoard) -> Any:
    """GET a plugin API route as JSON: api("compare", a_run=..., ...)."""
    return tb.api


@pytest.fixture(scope="session")
def panel_url(tb: TensorBoard) -> str:
    return tb.panel_url


# ------------------------------------------------------------------------------- browser

@pytest.fixture(scope="session")
def browser(shared_browser: Any) -> Any:
    return shared_browser


def _ignored(url: str) -> bool:
    """Failures that are TensorBoard's, not the panel's: no favicon, and TensorBoard 2.21's own
    stylesheet loading /font-roboto/*.woff2 from the server root even under --path_prefix."""
    path = urlparse(url).path
    return path.endswith("/favicon.ico") or path.startswith("/font-roboto/")


class Problems(list):
    """Console errors, page errors and dialogs seen by one page."""

    def attach(self, page: Any) -> None:
        def on_console(m: Any) -> None:
            url = (m.location or {}).get("url", "")
            if m.type == "error" and not _ignored(url) and "favicon" not in m.text:
                self.append(f"console.error: {m.text} ({url})")

        def on_dialog(d: Any) -> None:
            self.append(f"dialog opened: {d.type} {d.message!r}")
            d.dismiss()

        page.on("console", on_console)
        page.on("pageerror", lambda e: self.append(f"pageerror: {e}"))
        page.on("dialog", on_dialog)


def _artifact_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid.split("::")[-1]).strip("_")


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh page; after the test, its screenshot and a check that nothing went wrong in it."""
    ctx = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, locale="en-US", accept_downloads=True)
    pg = ctx.new_page()
    problems = Problems()
    problems.attach(pg)
    pg.problems = problems  # type: ignore[attr-defined]
    try:
        yield pg
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for i, p in enumerate(ctx.pages):
            suffix = "" if i == 0 else f"_{i + 1}"
            try:
                p.screenshot(path=str(ARTIFACTS / f"{_artifact_name(request.node.nodeid)}{suffix}.png"))
            except Exception:  # a closed page has nothing to show
                pass
        assert not problems, "problems in the page:\n  " + "\n  ".join(problems)
    finally:
        ctx.close()
