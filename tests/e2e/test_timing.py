"""Browser tests of the Timing view (where a step's time goes) and of the report's figures in the
layer view (tails on nodes, a layer's breakdown in its details, the critical path on the
timeline), against a real tensorboard (see conftest.py). Every figure is checked against
``api/report`` / ``api/diff``: the panel shows the records the command line prints.

Screenshots go to test-artifacts/e2e/.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import _start_tensorboard
from tests.e2e.panel import drawn, open_panel, ready, shot

MEMORY = "memory"
MAX_ROWS = 60


def open_timing(page: Any, tb: Any, **state: Any) -> dict:
    """Opens the Timing view on a run and waits until its report is shown."""
    page.goto(tb.panel(view="timing", **state))
    ready(page)
    page.wait_for_function(
        "() => { const h = window.__adLayer; if (!h || !h.timingView) return false;"
        " const s = h.timingView(); return !s.loading && s.run !== null; }")
    ready(page)
    return page.evaluate("window.__adLayer.timingView()")


def data_us(page: Any, selector: str, key: str) -> list[tuple[str, float]]:
    """(data-<key>, data-us) of every element matched."""
    return [tuple(x) for x in page.eval_on_selector_all(
        selector, f"els => els.map(e => [e.dataset.{key}, Number(e.dataset.us)])")]


def test_timing_view_shows_the_report_figures(page: Any, tb: Any) -> None:
    run = "dsv3_decode"
    rep = tb.api("report", run=run)
    st = open_timing(page, tb, run=run)
    layers = rep["layers"] + ([rep["outside"]] if rep["outside"] else [])
    assert st["bars"] == len(layers) and st["findings"] == len(rep["findings"])
    # The step, its categories (memory operations apart) and its streams.
    step = rep["step"]
    for field in ("gpu_time_us", "span_us", "busy_us", "idle_us", "memory_us"):
        got = page.get_attribute(f"[data-testid=timing-step] [data-field={field}]", "data-us")
        assert float(got) == step[field], field
    assert data_us(page, "[data-testid=timing-categories] .barrow", "category") == [
        (c["category"], c["gpu_time_us"]) for c in rep["categories"] if c["category"] != MEMORY]
    assert page.eval_on_selector_all(
        "[data-testid=timing-streams] tbody tr",
        "els => els.map(e => [e.dataset.stream,"
        " ...[...e.querySelectorAll('td[data-us]')].map(td => Number(td.dataset.us))])"
    ) == [[s["stream"], s["busy_us"], s["idle_us"]] for s in rep["streams"]]
    # One bar per layer (and the work outside them), each the layer's GPU time.
    bars = data_us(page, "[data-testid=timing-bar]", "layer")
    assert bars == [(str(L["layer"]) if L["layer"] is not None else "outside", L["gpu_time_us"])
                    for L in layers]
    # The per-layer table: GPU time and each category, as the report has them.
    rows = page.eval_on_selector_all(
        "[data-testid=timing-layers] tbody tr",
        """els => els.map(e => ({layer: e.dataset.layer,
              gpu: Number(e.children[2].dataset.us),
              cats: Object.fromEntries([...e.querySelectorAll('td[data-category][data-us]')]
                                        .map(td => [td.dataset.category, Number(td.dataset.us)]))}))""")
    assert len(rows) == len(layers)
    for row, L in zip(rows, layers, strict=True):
        assert row["layer"] == (str(L["layer"]) if L["layer"] is not None else "outside")
        assert row["gpu"] == L["gpu_time_us"]
        assert row["cats"] == {c["category"]: c["gpu_time_us"] for c in L["categories"]}
    # Findings in the report's order, with their time at stake.
    assert data_us(page, "[data-testid=timing-findings] li", "kind") == [
        (f["kind"], f["time_at_stake_us"]) for f in rep["findings"]]
    # Overlap of every layer with communication; roofline rows; the host's gaps.
    comm = {(str(L["layer"]) if L["layer"] is not None else "outside"): L["overlap"]
            for L in layers if L["overlap"]["communication_us"] > 0}
    overlap = page.eval_on_selector_all(
        "[data-testid=timing-overlap] tbody tr",
        "els => els.map(e => [e.dataset.layer, Number(e.children[4].dataset.us)])")
    assert dict(overlap) == {k: o["exposed_us"] for k, o in comm.items()}
    roofline = page.locator("[data-testid=timing-roofline] tbody tr").count()
    assert roofline == min(MAX_ROWS, len(rep["roofline"]))
    if rep["host"]["gaps"]:
        assert page.locator("[data-testid=timing-gaps] tbody tr").count() == min(12, len(rep["host"]["gaps"]))
    if rep["gpu"]["entry"] is None:
        assert "GPU" in page.inner_text("[data-testid=timing-gpu]")
    shot(page, "timing_view")


def test_a_run_without_a_trace_says_so_in_one_line(page: Any, tb: Any) -> None:
    page.goto(tb.panel(view="timing", run="notrace"))
    ready(page)
    line = page.wait_for_selector("[data-testid=timing-no-trace]")
    assert "notrace" in line.inner_text()
    assert page.locator("[data-testid=timing-body] > *").count() == 1


def test_the_diff_against_another_run(page: Any, tb: Any) -> None:
    a, b = "dsv3_decode", "dsv3_decode_unfused"
    exp = tb.api("diff", a_run=a, b_run=b)
    open_timing(page, tb, run=a)
    assert page.locator("[data-testid=timing-diff-sec]").count() == 0
    # Choosing the comparison's B run shows the verdict of api/diff.
    page.select_option("[data-testid=timing-diff-select]", b)
    page.wait_for_function("() => window.__adLayer.timingView().diff !== null")
    ready(page)
    assert page.get_attribute("[data-testid=timing-verdict]", "data-verdict") == exp["verdict"]
    for kind in ("regressions", "improvements"):
        n = min(MAX_ROWS, len(exp[kind]))
        assert page.locator(f"[data-testid=timing-{kind}] tbody tr").count() == n
        if n:
            got = data_us(page, f"[data-testid=timing-{kind}] tbody tr", "level")
            assert [lv for lv, _ in got] == [e["level"] for e in exp[kind][:n]]
    shot(page, "timing_diff")
    # The run compared with is in the URL: a reload shows the diff again.
    assert "vs=dsv3_decode_unfused" in page.evaluate("location.hash")
    page.reload()
    ready(page)
    page.wait_for_function("() => window.__adLayer.timingView().diff !== null")
    assert page.get_attribute("[data-testid=timing-verdict]", "data-verdict") == exp["verdict"]


def test_a_finding_opens_its_node_in_the_layer_view(page: Any, tb: Any) -> None:
    run = "llama_decode"
    rep = tb.api("report", run=run)
    first = next(f for f in rep["findings"] if f["layer"] is not None and f["node"])
    open_timing(page, tb, run=run)
    link = page.locator("[data-testid=timing-finding-open]").first
    assert link.get_attribute("data-node") == first["node"]
    link.click()
    drawn(page)
    state = page.evaluate("window.__adLayer.state()")
    assert page.evaluate("window.__adLayer.view()") == "layer" and state["layer"] == first["layer"]
    assert state["selected"] == first["node"]
    assert page.inner_text("[data-testid=details-id]") == f"%{first['node']}"
    # Its details show the node's roofline as the report has it.
    roof = next(r for r in rep["roofline"] if r["layer"] == first["layer"] and r["node"] == first["node"])
    text = page.inner_text("[data-testid=details-roofline]")
    assert f"{roof['peak_share'] * 100:.1f}%" in text and roof["formula"] in text
    shot(page, "timing_finding_opened")


def test_critical_path_and_breakdown_in_the_layer_view(page: Any, tb: Any) -> None:
    run = "dsv3_decode"
    rep = tb.api("report", run=run)
    L0 = next(L for L in rep["layers"] if L["layer"] == 0)
    open_panel(page, tb, run=run, layer=0)
    toggle = page.locator("[data-testid=timeline-critpath]")
    page.wait_for_function("() => !document.querySelector('[data-testid=timeline-critpath]').disabled")
    ready(page)
    # The layer's details: GPU time by group and by category, from the report.
    assert data_us(page, "[data-testid=details-breakdown] [data-group]", "group") == [
        (g["group"], g["gpu_time_us"]) for g in L0["groups"]]
    assert data_us(page, "[data-testid=details-breakdown] [data-category]", "category") == [
        (c["category"], c["gpu_time_us"]) for c in L0["categories"]]
    assert page.evaluate("window.__adLayer.timelineMarks()") is None
    assert page.locator("[data-testid=timeline-critpath-legend]").is_hidden()
    toggle.click()
    marks = page.evaluate("window.__adLayer.timelineMarks()")
    # Every kernel of the report's critical path is a kernel of the timeline, and is drawn.
    assert marks["path"] == sorted(s["kernel_id"] for s in L0["critical_path"]["steps"])
    assert marks["exposed"] == len(L0["overlap"]["exposed"]) > 0
    assert toggle.get_attribute("aria-pressed") == "true"
    assert page.locator("[data-testid=timeline-critpath-legend]").is_visible()
    shot(page, "timeline_critical_path")
    # The whole step: every layer's path.
    page.click("[data-testid=timeline-scope-all]")
    page.wait_for_function(
        "(n) => { const m = window.__adLayer.timelineMarks(); return !!m && m.path.length === n; }",
        arg=sum(len(L["critical_path"]["steps"])
                for L in rep["layers"] + ([rep["outside"]] if rep["outside"] else [])))
    toggle.click()
    assert page.evaluate("window.__adLayer.timelineMarks()") is None
    assert page.locator("[data-testid=timeline-critpath-legend]").is_hidden()


# --------------------------------------------------------------------------- a run with a tail

@pytest.fixture
def tails_tb(tmp_path: Path, panel_built: None) -> Iterator[Any]:
    """A TensorBoard of its own over a run whose node ``jittery`` has a p99 twice its median."""
    from tests.analysis.builder import K, L, N, build

    logdir = tmp_path / "logs"
    nodes = [N("steady", "aten.mul.Tensor"), N("jittery", "aten.add.Tensor", inputs=["steady"])]
    kernels = [K("elementwise", 0, 10, node="steady", median=10, p90=10.2, p99=10.5, max=11, replays=100),
               K("elementwise", 10, 20, node="jittery", median=10, p90=12, p99=20, max=31, replays=100)]
    build(logdir, "tails", [L(0, nodes=nodes)], kernels)
    gen = _start_tensorboard(logdir, tmp_path, "")
    yield next(gen)
    gen.close()


def test_a_flagged_tail_is_marked_on_its_node(page: Any, tails_tb: Any) -> None:
    rep = tails_tb.api("report", run="tails")
    jittery = next(x for x in rep["tails"] if x["node"] == "jittery")
    assert jittery["flagged"]
    open_timing(page, tails_tb, run="tails")
    assert page.eval_on_selector_all("[data-testid=timing-tails] tbody tr",
                                     "els => els.map(e => e.dataset.node)") == ["jittery"]
    assert data_us(page, "[data-testid=timing-tails] tbody tr td[data-us]", "x") == [
        (None, jittery[k]) for k in ("p50_us", "p90_us", "p99_us", "max_us")]
    # The tail finding opens the node; the graph marks it "p99", and its details list the tail.
    assert page.locator("[data-testid=timing-findings] li").first.get_attribute("data-kind") == "tail"
    page.locator("[data-testid=timing-finding-open]").first.click()
    drawn(page)
    ready(page)
    page.wait_for_function("() => window.__adLayer.tailNodes().length > 0")
    assert page.evaluate("window.__adLayer.tailNodes()") == ["jittery"]
    marked = page.eval_on_selector_all("g[data-testid=graph-node][data-tail=p99]",
                                       "els => els.map(e => e.dataset.nodeId)")
    assert marked == ["jittery"]
    sec = page.locator("[data-testid=details-tail]")
    assert sec.get_attribute("data-flagged") == "true"
    text = sec.inner_text()
    for v in ("10 µs", "12 µs", "20 µs", "31 µs"):
        assert v in text
    shot(page, "tail_marked")
