"""Every graph pane after the moves that relayout or rescale it (at 1280x800 and 1600x1000, on the
real-depth untraced export and on the demo, headless Chromium against a real tensorboard):

- never an empty pane: after Expand all, zooming out and in, collapsing a group and a layer switch,
  the layer view and both comparison panes show at least one readable label and the layer's left
  edge;
- the comparison's state: both panes' open groups and places survive a reload of TensorBoard and
  travel with the Link button;
- "no trace" for a stage without kernel times in the stage view and the overview (compare has its
  own test in test_first_view.py), never a zero or a -100 %.
"""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

import pytest

from tests.e2e.conftest import DEEP_RUN, TensorBoard
from tests.e2e.panel import drawn, open_panel, panel_frame, ready, seq, shot, wait_compare, wait_stage
from tests.e2e.test_first_view import READABLE_IN, SIZE_IDS, SIZES, sized

#: (run, layer, another layer to switch to): a real-depth untraced export (attention+moe; gated
#: delta net + moe, 1,032 nodes, wider than the view) and the demo's traced MoE layer.
CASES = [(DEEP_RUN, 3, 0), (DEEP_RUN, 0, 3), ("dsv3_decode", 3, 1)]
CASE_IDS = ["deep_attention", "deep_gdn", "demo_moe"]


#: The layer boxes a pane draws: where each is, relative to the pane.
LAYER_BOXES = """(pane) => {
  const root = document.querySelector(`[data-testid=${pane}]`);
  const p = root.getBoundingClientRect();
  const out = [];
  for (const g of root.querySelectorAll('[data-testid=group-box]')) {
    const id = g.dataset.groupId || '';
    if (!/^L\\d+$/.test(id)) continue;
    const r = (g.querySelector('rect.cbox') || g.querySelector('rect.box')).getBoundingClientRect();
    out.push({id, left: r.left - p.left, top: r.top - p.top, bottom: r.bottom - p.top,
              w: p.width, h: p.height});
  }
  return out;
}"""

#: Open groups of a pane below the layer whose header is in view: id, and where the header is.
OPEN_HEADERS = """(pane) => {
  const root = document.querySelector(`[data-testid=${pane}]`);
  const p = root.getBoundingClientRect();
  const out = [];
  for (const g of root.querySelectorAll('[data-testid=group-box][data-collapsed=false]')) {
    const id = g.dataset.groupId || '';
    if (!id.includes('/')) continue;
    const r = (g.querySelector('rect.cbox') || g.querySelector('rect.box')).getBoundingClientRect();
    const x = Math.max(r.left, p.left + 4);
    if (r.right < x + 80 || x > p.right - 60 || r.top < p.top + 4 || r.top > p.bottom - 30) continue;
    out.push({id, x, y: r.top, depth: id.split('/').length});
  }
  return out;
}"""


def left_edge_in_view(page: Any, pane: str) -> dict[str, Any] | None:
    """The layer box whose left edge is in the pane (and some of its height), if any."""
    boxes = page.evaluate(LAYER_BOXES, pane)
    for b in boxes:
        if -1 <= b["left"] <= b["w"] - 8 and b["bottom"] > 0 and b["top"] < b["h"]:
            return b
    return None


def check_pane(page: Any, pane: str, what: str, edge: bool = True) -> None:
    assert page.evaluate(READABLE_IN, pane) >= 1, f"{pane}: no readable label after {what}"
    assert not edge or left_edge_in_view(page, pane), (
        f"{pane}: the layer's left edge is out of view after {what}", page.evaluate(LAYER_BOXES, pane))


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("run, layer, other", CASES, ids=CASE_IDS)
def test_layer_view_keeps_a_label_and_the_left_edge_in_view(page: Any, tb: TensorBoard, size: tuple[int, int],
                                                            run: str, layer: int, other: int) -> None:
    sized(page, size)
    open_panel(page, tb, run=run, layer=layer)
    check_pane(page, "graph", "opening")
    s = seq(page)
    page.evaluate("window.__adLayer.setDepth('all')")
    drawn(page, s)
    check_pane(page, "graph", "Expand all")
    # The right-most open group in view collapsed: the layer shrinks, its left edge stays in view.
    heads = page.evaluate(OPEN_HEADERS, "graph")
    assert heads, "no open group in view after Expand all"
    right = max(heads, key=lambda g: (g["x"], -g["depth"]))
    s = seq(page)
    page.evaluate("(g) => window.__adLayer.toggleGroup(g)", right["id"])
    drawn(page, s)
    shot(page, f"panes_layer_collapse_{run}_{layer}_{size[0]}")
    check_pane(page, "graph", f"collapsing {right['id']}")
    for _ in range(3):
        page.click("[data-testid=graph-zoom-in]")
    ready(page)
    # Zooming in holds the left edge while text stays in view there (a wide layer's left part may
    # be empty: then it zooms at the centre); a readable label in any case.
    check_pane(page, "graph", "zooming in", edge=False)
    for _ in range(14):
        page.click("[data-testid=graph-zoom-out]")
    ready(page)
    check_pane(page, "graph", "zooming out")
    s = seq(page)
    page.select_option("[data-testid=layer-select]", str(other))
    drawn(page, s)
    shot(page, f"panes_layer_switch_{run}_{layer}_{size[0]}")
    check_pane(page, "graph", f"switching to layer {other}")


def dblclick_header(page: Any, head: dict[str, Any]) -> None:
    page.mouse.dblclick(head["x"] + 30, head["y"] + 7)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("run, layer, other", CASES, ids=CASE_IDS)
def test_both_compare_panes_keep_a_label_and_the_left_edge_in_view(
        page: Any, tb: TensorBoard, size: tuple[int, int], run: str, layer: int, other: int) -> None:
    sized(page, size)
    info = next(r for r in tb.api("runs")["runs"] if r["run"] == run)
    stage = info["default_stage"]
    page.goto(tb.panel(view="compare", arun=run, astage=stage, alayer=layer,
                       brun=run, bstage=stage, blayer=other))
    wait_compare(page)
    shot(page, f"panes_compare_open_{run}_{layer}_{size[0]}")
    panes = ("compare-pane-a", "compare-pane-b")
    for p in panes:
        check_pane(page, p, "opening")
    page.click("[data-testid=compare-expand-all]")
    ready(page)
    shot(page, f"panes_compare_expanded_{run}_{layer}_{size[0]}")
    for p in panes:
        check_pane(page, p, "Expand all")
    # Collapse the right-most open group in view of pane A (the synchronised B follows).
    heads = page.evaluate(OPEN_HEADERS, "compare-pane-a")
    assert heads, "no open group in view in pane A after Expand all"
    right = max(heads, key=lambda g: (g["x"], -g["depth"]))
    before = page.evaluate("window.__adLayer.compare().drawn")
    dblclick_header(page, right)
    page.wait_for_function("(d) => window.__adLayer.compare().drawn.a > d.a", arg=before)
    ready(page)
    assert right["id"] not in page.evaluate("window.__adLayer.compare().expanded.a")
    shot(page, f"panes_compare_collapse_{run}_{layer}_{size[0]}")
    for p in panes:
        check_pane(page, p, f"collapsing {right['id']}")
    for _ in range(3):
        page.click("[data-testid=compare-pane-a-zoom-in]")
    ready(page)
    shot(page, f"panes_compare_zoomed_{run}_{layer}_{size[0]}")
    for p in panes:
        check_pane(page, p, "zooming in", edge=False)
    for _ in range(14):
        page.click("[data-testid=compare-pane-b-zoom-out]")
    ready(page)
    for p in panes:
        check_pane(page, p, "zooming out")
    # Another layer on side B.
    before = page.evaluate("window.__adLayer.compare().drawn")
    page.select_option("[data-testid=compare-b-layer]", str(layer))
    wait_compare(page, before)
    shot(page, f"panes_compare_switch_{run}_{layer}_{size[0]}")
    for p in panes:
        check_pane(page, p, "switching B's layer")


# ----------------------------------------------------------------------------- compare state


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_compare_panes_open_groups_and_places_survive_reload_and_link(page: Any, tb: TensorBoard,
                                                                       size: tuple[int, int]) -> None:
    sized(page, size)
    run = DEEP_RUN
    stage = next(r for r in tb.api("runs")["runs"] if r["run"] == run)["default_stage"]
    page.goto(tb.url("/#ad_layer"))
    frame = panel_frame(page)
    frame.evaluate("([a, b]) => window.__adLayer.openCompare(a, b)",
                   [{"run": run, "stage": stage, "layer": 3}, {"run": run, "stage": stage, "layer": 4}])
    wait_compare(frame)
    # Collapse an open group of pane A by its header (B follows), then drag pane A.
    heads = frame.evaluate(OPEN_HEADERS, "compare-pane-a")
    assert heads, "no open group in view in pane A"
    head = min(heads, key=lambda g: (g["depth"], g["y"]))
    box = frame.frame_element().bounding_box()
    before = frame.evaluate("window.__adLayer.compare().drawn")
    page.mouse.dblclick(box["x"] + head["x"] + 30, box["y"] + head["y"] + 7)
    frame.wait_for_function("(d) => window.__adLayer.compare().drawn.a > d.a", arg=before)
    ready(frame)
    assert head["id"] not in frame.evaluate("window.__adLayer.compare().expanded.a")
    pane = frame.evaluate("(() => { const r = document.querySelector('[data-testid=compare-pane-a]')"
                          ".getBoundingClientRect();"
                          " return {x: r.left, y: r.top, w: r.width, h: r.height}; })()")
    cx, cy = box["x"] + pane["x"] + pane["w"] / 2, box["y"] + pane["y"] + pane["h"] / 2
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx - 60, cy - 90, steps=6)
    page.mouse.up()
    want = frame.evaluate("window.__adLayer.compare()")
    frame.wait_for_function(
        "(v) => { const p = new URLSearchParams(location.hash.slice(1)); const at = p.get('aat');"
        " if (!at) return false; const [x, y] = at.split(':')[1].split(',').map(Number);"
        " return Math.abs(x - v.x) < 1 && Math.abs(y - v.y) < 1 && !!p.get('aopen'); }",
        arg=want["views"]["a"])
    ready(frame)
    want = frame.evaluate("window.__adLayer.compare()")
    top = unquote(page.url)
    assert "p.ad_layer.aopen=" in top and "p.ad_layer.bat=" in top, top

    def same(st: dict[str, Any]) -> None:
        for side in ("a", "b"):
            assert sorted(st["expanded"][side]) == sorted(want["expanded"][side]), side
            v, w = st["views"][side], want["views"][side]
            assert abs(v["x"] - w["x"]) <= 1 and abs(v["y"] - w["y"]) <= 1, (side, v, w)
            assert abs(v["k"] - w["k"]) <= 1e-3, (side, v, w)

    page.reload()
    frame = panel_frame(page)
    st = wait_compare(frame)
    shot(page, f"compare_state_restored_{size[0]}")
    same(st)
    # Link: TensorBoard's URL of this comparison, with both panes' groups and places.
    frame.click("[data-testid=copy-link]")
    link = frame.get_attribute("[data-testid=copy-link]", "data-url")
    assert link and "aopen" in link and "bat" in link, link
    other = page.context.new_page()
    other.set_viewport_size({"width": size[0], "height": size[1]})
    other.goto(link)
    f2 = panel_frame(other)
    same(wait_compare(f2))
    other.close()
    # Another pair of sides opens on its own first view.
    before = frame.evaluate("window.__adLayer.compare().drawn")
    frame.select_option("[data-testid=compare-b-layer]", "5")
    wait_compare(frame, before)
    assert "aopen" not in frame.evaluate("location.hash") and "bat" not in frame.evaluate("location.hash")


# ----------------------------------------------------------------------------- no trace

def untraced_stage(tb: TensorBoard, run: str) -> tuple[int, int]:
    """The run's traced (final) stage and its first stage, which has no kernel times."""
    info = next(r for r in tb.api("runs")["runs"] if r["run"] == run)
    first = min(s["index"] for s in info["stages"])
    assert first != info["default_stage"] and info["trace"]
    return info["default_stage"], first


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_the_stage_view_says_no_trace_for_a_stage_without_kernel_times(page: Any, tb: TensorBoard,
                                                                       size: tuple[int, int]) -> None:
    sized(page, size)
    run, layer = "dsv3_decode", 3
    final, first = untraced_stage(tb, run)
    us = tb.api("layer", run=run, layer=layer)["trace_summary"]["total_duration_us"]
    page.goto(tb.panel(run=run, layer=layer, view="stages", ss=first))
    wait_stage(page)
    shot(page, f"stages_untraced_{size[0]}")
    info = page.locator("[data-testid=stage-info]").inner_text()
    el = page.locator("[data-testid=stage-gpu-time]")
    assert el.get_attribute("data-timed") == "false" and "no trace" in el.inner_text(), info
    assert not re.search(r"(?<![\d.])0 µs|−100|-100", info), info
    # The traced final stage has its time; the stage before it has none: no change is computed.
    s = page.evaluate("window.__adLayer.stages().draws")
    page.goto(tb.panel(run=run, layer=layer, view="stages", ss=final))
    wait_stage(page, 0)
    del s
    el = page.locator("[data-testid=stage-gpu-time]")
    assert el.get_attribute("data-timed") == "true"
    want = page.evaluate("window.__adLayer.state()")
    assert want["run"] == run
    text = el.inner_text()
    assert re.search(r"\d µs", text), text
    prev = page.locator("[data-testid=stage-gpu-time-prev]")
    assert prev.count() == 1 and "no trace" in prev.inner_text()
    info = page.locator("[data-testid=stage-info]").inner_text()
    assert "%" not in info and "−" not in info.split("\n", 3)[-1], info
    assert f"{round(us)}" in text or f"{us:.1f}".rstrip("0").rstrip(".") in text, (us, text)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_the_overview_says_no_trace_for_a_stage_without_kernel_times(page: Any, tb: TensorBoard,
                                                                     size: tuple[int, int]) -> None:
    sized(page, size)
    run = "dsv3_decode"
    _, first = untraced_stage(tb, run)
    page.goto(tb.panel(run=run, stage=first, layer=3, view="overview"))
    page.wait_for_function("() => { const h = window.__adLayer; return !!h && !!h.overview"
                           " && !h.overview().loading && h.overview().bars > 0; }")
    ready(page)
    shot(page, f"overview_untraced_{size[0]}")
    side = page.locator("[data-testid=overview-side-layer]").inner_text()
    assert "no trace" in side, side
    view = page.locator("[data-testid=overview-view]").inner_text()
    assert not re.search(r"(?<![\d.])0 µs|−100|-100 ?%", view), view


# ----------------------------------------------------------------------------- whole names

#: The chosen entry of a chooser: its text, the width it needs in the chooser's font and the width
#: the chooser has for text (less its padding and arrow).
FITS = """(s) => { const el = document.querySelector(`[data-testid=${s}]`);
  const o = el.selectedOptions[0]; const c = document.createElement('canvas').getContext('2d');
  const cs = getComputedStyle(el); c.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
  return {text: o.textContent, need: c.measureText(o.textContent).width,
          have: el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20,
          options: [...el.options].map((x) => x.textContent)}; }"""


def assert_whole(page: Any, testids: list[str]) -> None:
    for sel in testids:
        fits = page.evaluate(FITS, sel)
        assert fits["need"] <= fits["have"], (sel, fits)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_run_and_stage_choosers_show_whole_names(browser: Any, tb: TensorBoard, size: tuple[int, int],
                                                 lang: str) -> None:
    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]}, locale="en-US")
    try:
        page = ctx.new_page()
        page.add_init_script(f"localStorage.setItem('adLayer.lang', '{lang}')")
        runs = {r["run"]: r for r in tb.api("runs")["runs"]}
        for run in (DEEP_RUN, "dsv3_decode"):
            first = min(s["index"] for s in runs[run]["stages"])
            open_panel(page, tb, run=run, layer=3, stage=first)
            assert_whole(page, ["run-select", "stage-select", "layer-select"])
            options = page.evaluate(FITS, "run-select")["options"]
            assert not [o for o in options if re.search(r"^(\S+) · \1\b", o)], options
        shot(page, f"choosers_layer_{lang}_{size[0]}")
        info = runs[DEEP_RUN]
        page.goto(tb.panel(view="compare", arun=DEEP_RUN, astage=info["default_stage"], alayer=3,
                           brun="dsv3_decode", bstage=min(s["index"] for s in runs["dsv3_decode"]["stages"]),
                           blayer=3))
        wait_compare(page)
        shot(page, f"choosers_compare_{lang}_{size[0]}")
        assert_whole(page, [f"compare-{s}-{c}" for s in "ab" for c in ("run", "stage", "layer")])
        if lang == "zh":
            # Every caption of the choosers and the comparison's bar is in Chinese.
            captions = page.evaluate("""() => [...document.querySelectorAll(
                '[data-testid=toolbar] .grp > label, [data-testid=compare-view] .adl-vbar button,'
                + ' [data-testid=compare-view] .adl-vbar label, [data-testid=compare-legend] .item')]
                .filter((e) => e.getBoundingClientRect().width).map((e) => e.textContent.trim())
                .filter((x) => /[A-Za-z]{3}/.test(x) && !/[\\u4e00-\\u9fff]/.test(x))""")
            assert not captions, captions
            stage_opts = page.evaluate(FITS, "compare-a-stage")["options"]
            assert not [o for o in stage_opts if "final" in o], stage_opts
    finally:
        ctx.close()
