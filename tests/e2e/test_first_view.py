"""The panel for every run (at 1280x800 and 1600x1000, on a real-depth untraced export and on the
demo): a readable first view of any layer (its skeleton, its main group open), one GPU time per
layer, "no trace" instead of zeros, search that lights up collapsed groups, identical layers
marked, choosers that show whole labels, translated input captions, and TensorBoard landing on
the AD Layers tab (headless Chromium against a real tensorboard)."""
from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.e2e.conftest import DEEP_RUN, TensorBoard
from tests.e2e.panel import drawn, open_panel, panel_frame, ready, seq, shot, wait_compare
from tests.e2e.test_legible import READABLE_PX, TEXT_SIZES, rect

SIZES = [(1280, 800), (1600, 1000)]
SIZE_IDS = ["1280x800", "1600x1000"]

#: (run, layer, top-level groups in view at least): untraced layers of the real-depth export (137
#: nodes, attention+moe; 1,032 nodes, gated delta net + moe), and the demo's traced MoE layer. The
#: gated delta net's main group is wider and taller than the view by itself (about 960 nodes, most
#: of them its own, not in sub-groups): the groups after it are out of view there.
LAYERS = [(DEEP_RUN, 3, 2), (DEEP_RUN, 0, 1), ("dsv3_decode", 3, 3)]
LAYER_IDS = ["deep_attention", "deep_gdn", "demo_moe"]

#: Every top-level group of the layer drawn, as a box: where it is on screen and whether it is open.
TOP_GROUPS = """(layer) => {
  const pane = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  const out = [];
  for (const g of document.querySelectorAll('[data-testid=group-box]')) {
    const id = g.dataset.groupId || '';
    if (!id.startsWith(`L${layer}/`) || id.slice(`L${layer}/`.length).includes('/')) continue;
    const r = (g.querySelector('rect.cbox') || g.querySelector('rect.box')).getBoundingClientRect();
    const inView = r.right > pane.left && r.left < pane.right && r.bottom > pane.top && r.top < pane.bottom;
    out.push({id, open: g.dataset.collapsed === 'false', inView, x: r.left, y: r.top});
  }
  return out;
}"""


#: The public ids of the elements of a test id that are lit up as holding search hits.
LIT = "(t) => [...document.querySelectorAll(`[data-testid=${t}].hit`)].map(e => e.dataset.groupId)"


def sized(page: Any, size: tuple[int, int]) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})


def main_group(doc: dict[str, Any]) -> str:
    """The group with the most GPU time, else the most nodes (the panel's choice)."""
    times: dict[str, float] = {}
    counts: dict[str, int] = {}
    for n in doc["nodes"]:
        times[n["group"]] = times.get(n["group"], 0.0) + n["time_us"]
        counts[n["group"]] = counts.get(n["group"], 0) + 1
    timed = any(v > 0 for v in times.values())
    return max(times if timed else counts, key=lambda g: times[g] if timed else counts[g])


def fmt_us(us: float) -> str:
    """The panel's fmtUs for 10 µs to 1 ms."""
    return f"{round(us)} µs" if us >= 100 else f"{us:.1f}".rstrip("0").rstrip(".") + " µs"


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("run, layer, least", LAYERS, ids=LAYER_IDS)
def test_first_view_is_the_layer_skeleton_with_its_main_group_open(
        page: Any, tb: TensorBoard, size: tuple[int, int], run: str, layer: int, least: int) -> None:
    sized(page, size)
    doc = tb.api("layer", run=run, layer=layer)
    open_panel(page, tb, run=run, layer=layer)
    shot(page, f"first_view_{run}_{layer}_{size[0]}")
    groups = page.evaluate(TOP_GROUPS, layer)
    names = {g["id"].split("/", 1)[1].split("~")[0] for g in groups}
    assert names == {n["group"] for n in doc["nodes"]}, (names, groups)
    main = main_group(doc)
    opened = [g for g in groups if g["open"]]
    # The main group is open, every other top-level group a collapsed, titled box.
    assert [g["id"] for g in opened] == [f"L{layer}/{main}"], groups
    # Its header is in view, as is the layer's left edge and title.
    assert opened[0]["inView"], opened
    pane = rect(page, "[data-testid=graph]")
    box = rect(page, f"[data-group-id='L{layer}'] > rect.cbox")
    assert pane["x"] - 1 <= box["x"] <= pane["x"] + pane["w"] / 2, (pane, box)
    assert pane["y"] - 1 <= box["y"] <= pane["y"] + 40, (pane, box)
    # Node text at its full size.
    sizes = page.evaluate(TEXT_SIZES, "[data-testid=graph-node] text.l, [data-testid=group-box] text.l")
    assert sizes and min(sizes) >= READABLE_PX - 0.05, sorted(sizes)[:5]
    in_view = [g for g in groups if g["inView"]]
    # The main group and the groups drawn before it are in view (after a main group taller than
    # the view, the rest of the skeleton is below the fold).
    assert len(in_view) >= min(len(groups), least), groups
    timeline = rect(page, "[data-testid=timeline]")
    if doc.get("trace_summary") is None:
        # No trace: the timeline is the one line that says so.
        assert timeline["h"] <= 40, timeline
        assert "no trace" in page.locator("[data-testid=timeline-info]").inner_text()
    else:
        assert timeline["h"] >= 100, timeline


def test_tensorboard_opens_on_the_ad_layers_tab_with_a_traced_run(page: Any, tb: TensorBoard) -> None:
    page.goto(tb.url("/"))
    frame = panel_frame(page)
    listing = tb.get("/data/plugins_listing")
    enabled = [name for name, e in json.loads(listing[1]).items() if e["enabled"]]
    assert enabled[0] == "ad_layer", enabled
    state = frame.evaluate("window.__adLayer.state()")
    runs = {r["run"]: r for r in tb.api("runs")["runs"]}
    assert runs[state["run"]]["trace"], state["run"]


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_a_layer_gpu_time_is_one_figure(page: Any, tb: TensorBoard, size: tuple[int, int]) -> None:
    sized(page, size)
    run, layer = "dsv3_decode", 3
    info = next(r for r in tb.api("runs")["runs"] if r["run"] == run)
    us = next(L for L in info["layers"] if L["layer"] == layer)["gpu_time_us"]
    doc = tb.api("layer", run=run, layer=layer)
    assert us == doc["trace_summary"]["total_duration_us"]
    want = fmt_us(us)
    open_panel(page, tb, run=run, layer=layer)
    option = page.locator(f"[data-testid=layer-select] option[value='{layer}']").inner_text()
    assert option.endswith(want), option
    head = page.locator(f"[data-group-id='L{layer}'] > text.chead").first.text_content() or ""
    assert want in head, head
    details = page.locator("[data-testid=details]").inner_text()
    assert re.search(rf"GPU time \(sum of its kernels\)\s+{re.escape(want)}", details), details
    # Stream shares are of the layer's span, in the side panel as on the timeline.
    assert "of the layer's span" in details
    lanes = page.evaluate("window.__adLayer.timelineLanes()")
    side = [int(m) for m in re.findall(r"busy (\d+)% of the layer's span", details)]
    lane = [round(100 * x["busyShare"]) for x in lanes]
    assert side and all(any(abs(s - v) <= 1 for v in lane) for s in side), (side, lanes)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_a_stage_without_kernel_times_says_no_trace_in_compare(page: Any, tb: TensorBoard,
                                                                size: tuple[int, int]) -> None:
    sized(page, size)
    run = "dsv3_decode"
    info = next(r for r in tb.api("runs")["runs"] if r["run"] == run)
    first = min(s["index"] for s in info["stages"])
    page.goto(tb.panel(view="compare", arun=run, astage=info["default_stage"], alayer=3,
                       brun=run, bstage=first, blayer=3))
    wait_compare(page)
    shot(page, f"compare_untraced_stage_{size[0]}")
    assert page.locator("[data-testid=compare-notrace-b]").count() == 1
    total = page.locator("[data-testid=compare-layer-delta]").inner_text()
    assert "no trace" in total and "−100" not in total and "→ 0 µs" not in total, total
    table = page.locator("[data-testid=delta-table]").inner_text()
    assert "−100" not in table, table


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_search_lights_up_collapsed_groups_and_summary_cards(page: Any, tb: TensorBoard,
                                                              size: tuple[int, int]) -> None:
    sized(page, size)
    run, layer = DEEP_RUN, 3
    doc = tb.api("layer", run=run, layer=layer)
    main = main_group(doc)
    other = next(n for n in doc["nodes"] if n["group"] not in (main, "norm"))
    open_panel(page, tb, run=run, layer=layer)
    page.fill("[data-testid=search-input]", other["id"])
    ready(page)
    lit = page.evaluate(LIT, "group-box")
    assert f"L{layer}/{other['group']}" in lit, (other, lit)
    page.evaluate("window.__adLayer.setGraphScale(0.3)")
    ready(page)
    cards = page.evaluate(LIT, "group-summary")
    shot(page, f"search_cards_{size[0]}")
    assert f"L{layer}" in cards or f"L{layer}/{other['group']}" in cards, cards


def test_identical_layers_are_marked_in_the_chooser_and_the_overview(page: Any, tb: TensorBoard) -> None:
    info = next(r for r in tb.api("runs")["runs"] if r["run"] == DEEP_RUN)
    same = {L["layer"]: L["same_as"] for L in info["layers"]}
    layer, first = next((k, v) for k, v in same.items() if v is not None)
    open_panel(page, tb, run=DEEP_RUN, layer=layer)
    option = page.locator(f"[data-testid=layer-select] option[value='{layer}']").inner_text()
    assert option.endswith(f"≡ layer {first}"), option
    page.goto(tb.panel(run=DEEP_RUN, layer=layer, view="overview"))
    page.wait_for_function("() => { const h = window.__adLayer; return !!h && !!h.overview"
                           " && !h.overview().loading && h.overview().bars > 0; }")
    ready(page)
    marked = page.evaluate("Object.fromEntries([...document.querySelectorAll("
                           "'[data-testid=overview-bar][data-same-as]')]"
                           ".map(e => [e.dataset.layer, Number(e.dataset.sameAs)]))")
    assert marked == {str(k): v for k, v in same.items() if v is not None}
    assert f"≡ layer {first}" in page.locator("[data-testid=overview-side-layer]").inner_text()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_choosers_show_whole_labels_and_no_doubled_run_name(page: Any, tb: TensorBoard,
                                                             size: tuple[int, int]) -> None:
    sized(page, size)
    open_panel(page, tb, run=DEEP_RUN, layer=3)
    runs = page.locator("[data-testid=run-select] option").all_inner_texts()
    assert DEEP_RUN in runs and f"{DEEP_RUN} · {DEEP_RUN}" not in runs, runs
    for sel in ("layer-select", "run-select"):
        fits = page.evaluate("""(s) => { const el = document.querySelector(`[data-testid=${s}]`);
            const o = el.selectedOptions[0]; const c = document.createElement('canvas').getContext('2d');
            c.font = getComputedStyle(el).font;
            return {text: o.textContent, title: el.title, need: c.measureText(o.textContent).width,
                    have: el.clientWidth}; }""", sel)
        assert fits["title"].startswith(fits["text"]), fits
        if sel == "layer-select":
            assert fits["need"] <= fits["have"], fits


def test_input_captions_are_translated(browser: Any, tb: TensorBoard) -> None:
    ctx = browser.new_context(viewport={"width": 1600, "height": 1000}, locale="zh-CN")
    try:
        page = ctx.new_page()
        page.add_init_script("localStorage.setItem('adLayer.lang', 'zh')")
        open_panel(page, tb, run=DEEP_RUN, layer=3)
        shot(page, "first_view_zh")
        captions = page.evaluate("[...document.querySelectorAll('[data-testid=input-node] text.l')]"
                                 ".map(t => t.textContent)")
        assert captions, "no input nodes"
        english = {"KV cache", "batch metadata", "RoPE cache", "attention mask", "shape value",
                   "position ids", "residual", "token embedding"}
        assert captions and not english & set(captions), captions
        assert any(re.search(r"[\u4e00-\u9fff]", c) for c in captions), captions
    finally:
        ctx.close()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_reload_keeps_the_open_groups_and_the_view_position(page: Any, tb: TensorBoard,
                                                            size: tuple[int, int]) -> None:
    sized(page, size)
    layer = 3
    open_panel(page, tb, run=DEEP_RUN, layer=layer)
    closed = next(g["id"] for g in page.evaluate(TOP_GROUPS, layer) if not g["open"])
    s = seq(page)
    page.evaluate("(g) => window.__adLayer.toggleGroup(g)", closed)
    drawn(page, s)
    # A drag pans the view: its place goes into the URL.
    pane = rect(page, "[data-testid=graph]")
    cx, cy = pane["x"] + pane["w"] / 2, pane["y"] + pane["h"] / 2
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx - 150, cy - 120, steps=6)
    page.mouse.up()
    page.wait_for_function("(v) => { const p = new URLSearchParams(location.hash.slice(1));"
                           " const at = p.get('at'); if (!at) return false;"
                           " const [x, y] = at.split(':')[1].split(',').map(Number);"
                           " return Math.abs(x - v.x) < 1 && Math.abs(y - v.y) < 1; }",
                           arg=page.evaluate("window.__adLayer.graphView()"))
    ready(page)
    want_open = sorted(page.evaluate("window.__adLayer.expanded()"))
    want_view = page.evaluate("window.__adLayer.graphView()")
    assert f"L{layer}/{closed.split('/', 1)[1]}" in want_open
    assert "open=" in page.url and "at=" in page.url, page.url
    page.reload()
    drawn(page)
    shot(page, f"state_restored_{size[0]}")
    assert sorted(page.evaluate("window.__adLayer.expanded()")) == want_open
    view = page.evaluate("window.__adLayer.graphView()")
    assert abs(view["x"] - want_view["x"]) <= 1 and abs(view["y"] - want_view["y"]) <= 1, (view, want_view)
    assert abs(view["k"] - want_view["k"]) <= 1e-3, (view, want_view)
    # Another layer opens on its own first view (the place is for layer 3 only).
    s = seq(page)
    page.select_option("[data-testid=layer-select]", "4")
    drawn(page, s)
    assert "at=" not in page.url and "open=" not in page.url, page.url


#: Text on screen in a pane at 8 px or more (node text, group titles, summary cards).
READABLE_IN = """(pane) => {
  const p = document.querySelector(`[data-testid=${pane}]`).getBoundingClientRect();
  let n = 0;
  for (const t of document.querySelectorAll(`[data-testid=${pane}] text`)) {
    const r = t.getBoundingClientRect();
    if (!r.width || getComputedStyle(t).display === 'none' || !t.textContent.trim()) continue;
    if (r.right < p.left || r.left > p.right || r.bottom < p.top || r.top > p.bottom) continue;
    if (parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a >= 8) n++;
  }
  return n;
}"""


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_no_pane_is_ever_empty(page: Any, tb: TensorBoard, size: tuple[int, int]) -> None:
    sized(page, size)
    open_panel(page, tb, run=DEEP_RUN, layer=0)
    s = seq(page)
    page.evaluate("window.__adLayer.setDepth('all')")
    drawn(page, s)
    assert page.evaluate(READABLE_IN, "graph") >= 1
    for _ in range(12):  # zoomed out as far as it goes, then dragged far away
        page.click("[data-testid=graph-zoom-out]")
    ready(page)
    pane = rect(page, "[data-testid=graph]")
    page.mouse.move(pane["x"] + 50, pane["y"] + 50)
    page.mouse.down()
    page.mouse.move(pane["x"] + pane["w"] - 10, pane["y"] + pane["h"] - 10, steps=8)
    page.mouse.up()
    ready(page)
    shot(page, f"never_empty_layer_{size[0]}")
    assert page.evaluate(READABLE_IN, "graph") >= 1
    # Both comparison panes after Expand all and zooming out.
    page.goto(tb.panel(view="compare", arun=DEEP_RUN, astage=0, alayer=3, brun=DEEP_RUN, bstage=0, blayer=0))
    wait_compare(page)
    page.click("[data-testid=compare-expand-all]")
    ready(page)
    for side in ("a", "b"):
        for _ in range(12):
            page.click(f"[data-testid=compare-pane-{side}-zoom-out]")
        ready(page)
        assert page.evaluate(READABLE_IN, f"compare-pane-{side}") >= 1, side
    shot(page, f"never_empty_compare_{size[0]}")
