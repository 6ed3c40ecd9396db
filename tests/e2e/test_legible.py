"""The panel is legible at first sight and stays so on large layers: readable default view, summary
cards when zoomed out, folded repeats, folded inputs, node cards whose durations always show, and a
minimap that never covers the graph (headless Chromium against a real tensorboard)."""
from __future__ import annotations

from typing import Any

from tests.e2e.conftest import HOSTILE, HOSTILE_RUN, LARGE_RUN, TensorBoard
from tests.e2e.panel import drawn, open_panel, ready, seq, shot, wait_compare

#: On-screen node text at the default view (CSS px), and the least any summary card text may be.
READABLE_PX = 11
LEGIBLE_PX = 8

TEXT_SIZES = """(sel) => {
  const pane = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  const out = [];
  for (const t of document.querySelectorAll(sel)) {
    const r = t.getBoundingClientRect();
    if (!r.width || getComputedStyle(t).display === 'none') continue;
    if (r.right < pane.left || r.left > pane.right || r.bottom < pane.top || r.top > pane.bottom) continue;
    out.push(parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a);
  }
  return out;
}"""


#: Sizes of the on-screen text of `sel` inside the group `group` (its public id).
TEXT_SIZES_IN = """({sel, group}) => {
  const pane = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  const g = document.querySelector(`[data-group-id='${group}'] > rect.cbox`).getBoundingClientRect();
  const out = [];
  for (const t of document.querySelectorAll(sel)) {
    const r = t.getBoundingClientRect();
    if (!r.width || getComputedStyle(t).display === 'none') continue;
    const inside = (b) => r.right >= b.left && r.left <= b.right && r.bottom >= b.top && r.top <= b.bottom;
    if (!inside(pane) || !inside(g)) continue;
    out.push(parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a);
  }
  return out;
}"""


def rect(target: Any, selector: str) -> dict[str, float]:
    return target.evaluate("(s) => { const r = document.querySelector(s).getBoundingClientRect();"
                           " return {x: r.left, y: r.top, w: r.width, h: r.height}; }", selector)


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
            and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"])


def hottest_group(doc: dict[str, Any]) -> str:
    times: dict[str, float] = {}
    for n in doc["nodes"]:
        times[n["group"]] = times.get(n["group"], 0.0) + n["time_us"]
    return max(times, key=lambda g: times[g])


def largest_layer(tb: TensorBoard, run: str) -> int:
    info = next(r for r in tb.api("runs")["runs"] if r["run"] == run)
    return max(info["layers"], key=lambda L: L["node_count"])["layer"]


def test_default_view_is_readable_and_shows_the_hottest_group(page: Any, tb: TensorBoard) -> None:
    run, layer = "dsv3_decode", 3
    doc = tb.api("layer", run=run, layer=layer)
    open_panel(page, tb, run=run, layer=layer)
    shot(page, "legible_default_view")
    sizes = page.evaluate(TEXT_SIZES, "[data-testid=graph-node] text.l")
    assert len(sizes) >= 5, "no node text on screen at the default view"
    assert min(sizes) >= READABLE_PX - 0.05, sorted(sizes)[:5]
    pane = rect(page, "[data-testid=graph]")
    # The view starts at the layer's top ...
    top = rect(page, f"[data-group-id='L{layer}']")
    assert pane["y"] <= top["y"] <= pane["y"] + 40, (pane, top)
    # ... with the group that holds most of the layer's GPU time in view.
    hot = hottest_group(doc)
    box = rect(page, f"[data-group-id='L{layer}/{hot}']")
    assert overlaps(box, pane), (hot, box, pane)
    assert box["y"] < pane["y"] + pane["h"] * 0.6, "the hottest group starts below the fold"


def test_zoomed_out_groups_become_summary_cards(page: Any, tb: TensorBoard) -> None:
    run, layer = "dsv3_decode", 3
    doc = tb.api("layer", run=run, layer=layer)
    open_panel(page, tb, run=run, layer=layer, depth=4)
    assert page.locator("[data-testid=group-summary]:visible").count() == 0
    page.evaluate("window.__adLayer.setGraphScale(0.3)")
    ready(page)
    shot(page, "legible_summary_cards")
    cards = page.locator("[data-testid=group-summary]:visible")
    assert cards.count() >= 3
    # Node text is no longer drawn (it would be 3 px); card text is readable.
    assert page.evaluate(TEXT_SIZES, "[data-testid=graph-node] text.l") == []
    sizes = page.evaluate(TEXT_SIZES, "[data-testid=group-summary] text")
    assert sizes and min(sizes) >= LEGIBLE_PX, sizes
    hot = hottest_group(doc)
    card = page.locator(f"[data-testid=group-summary][data-group-id='L{layer}/{hot}']")
    texts = card.locator("text").all_text_contents()
    members = [n for n in doc["nodes"] if n["group"] == hot]
    assert texts[0] == hot
    assert f"{len(members)} nodes" in texts
    assert any(t.startswith("GPU ") for t in texts)
    assert any(t.startswith("⚡") for t in texts), texts
    # Zoomed in again, the nodes come back.
    page.evaluate("window.__adLayer.setGraphScale(1)")
    ready(page)
    assert page.locator("[data-testid=group-summary]:visible").count() == 0
    assert page.evaluate(TEXT_SIZES, "[data-testid=graph-node] text.l")


def test_large_layer_folds_repeats_and_opens_them_on_demand(page: Any, tb: TensorBoard) -> None:
    layer = largest_layer(tb, LARGE_RUN)
    doc = tb.api("layer", run=LARGE_RUN, layer=layer)
    assert len(doc["nodes"]) >= 900, len(doc["nodes"])
    t = open_panel(page, tb, run=LARGE_RUN, layer=layer)
    shot(page, "legible_large_layer")
    assert t["nodes"] == len(doc["nodes"])
    # Far fewer boxes than nodes: the repeated blocks are folded into groups that say how many.
    assert t["leaves"] * 4 < len(doc["nodes"]), t
    folds = page.eval_on_selector_all(
        "[data-testid=group-box][data-collapsed=true][data-repeat]",
        "els => els.map((e) => [e.dataset.groupId, Number(e.dataset.repeat), Number(e.dataset.period)])")
    assert folds, "no folded repeats"
    gid, count, period = max(folds, key=lambda f: f[1] * f[2])
    assert count >= 10 and count * period >= 100, folds
    # Sub-groups are drawn as boxes.
    subs = page.eval_on_selector_all("[data-testid=group-box]",
                                     "els => els.map((e) => e.dataset.groupId.split('/').length)")
    assert max(subs) >= 3
    # Expanding the fold draws its blocks.
    before = page.locator("[data-testid=graph-node]").count()
    s = seq(page)
    page.evaluate("(g) => window.__adLayer.toggleGroup(g)", gid)
    t2 = drawn(page, s)
    assert page.locator(f"[data-group-id='{gid}']").get_attribute("data-collapsed") == "false"
    assert page.locator("[data-testid=graph-node]").count() >= before + count * period - 1
    assert t2["leaves"] > t["leaves"]
    shot(page, "legible_large_layer_fold_open")
    # The expanded fold is on screen (its top-left in view) and its node text is legible there.
    pane = rect(page, "[data-testid=graph]")
    box = rect(page, f"[data-group-id='{gid}'] > rect.cbox")
    assert overlaps(box, pane), (box, pane)
    assert pane["x"] <= box["x"] < pane["x"] + pane["w"], (box, pane)
    assert pane["y"] <= box["y"] < pane["y"] + pane["h"], (box, pane)
    sizes = page.evaluate(TEXT_SIZES_IN, {"sel": "[data-testid=graph-node] text.l", "group": gid})
    assert len(sizes) >= 5, "no node text of the expanded fold on screen"
    assert min(sizes) >= LEGIBLE_PX, sorted(sizes)[:5]
    # Collapsed again, it is still on screen, all of it.
    s = seq(page)
    page.evaluate("(g) => window.__adLayer.toggleGroup(g)", gid)
    drawn(page, s)
    box = rect(page, f"[data-group-id='{gid}'] rect.box")
    assert pane["x"] <= box["x"] and box["x"] + box["w"] <= pane["x"] + pane["w"], (box, pane)
    assert pane["y"] <= box["y"] and box["y"] + box["h"] <= pane["y"] + pane["h"], (box, pane)
    shot(page, "legible_large_layer_fold")


def test_large_layer_default_view_shows_the_layer_title(page: Any, tb: TensorBoard) -> None:
    """A layer far wider than the view opens at its top-left corner, title included, with node
    text at full size and nodes on screen."""
    layer = largest_layer(tb, LARGE_RUN)
    open_panel(page, tb, run=LARGE_RUN, layer=layer)
    shot(page, "legible_large_layer_default_view")
    pane = rect(page, "[data-testid=graph]")
    box = rect(page, f"[data-group-id='L{layer}'] > rect.cbox")
    assert box["w"] > pane["w"], "the layer fits the view: nothing to check"
    title = rect(page, f"[data-group-id='L{layer}'] > text.chead")
    assert pane["x"] <= title["x"] and title["x"] + title["w"] <= pane["x"] + pane["w"], (title, pane)
    assert pane["y"] <= title["y"] and title["y"] + title["h"] <= pane["y"] + pane["h"], (title, pane)
    assert page.text_content(f"[data-group-id='L{layer}'] > text.chead").startswith(f"▾ Layer {layer}")
    assert pane["x"] <= box["x"] < pane["x"] + 40 and pane["y"] <= box["y"] < pane["y"] + 40, (box, pane)
    sizes = page.evaluate(TEXT_SIZES, "[data-testid=graph-node] text.l")
    assert len(sizes) >= 5, "no node text on screen at the default view"
    assert min(sizes) >= READABLE_PX - 0.05, sorted(sizes)[:5]


def test_inputs_of_one_kind_fold_and_do_not_set_the_width(page: Any, tb: TensorBoard) -> None:
    run, layer = "dsv3_decode", 3
    doc = tb.api("layer", run=run, layer=layer)
    kinds: dict[str, int] = {}
    for x in doc["external_inputs"]:
        k = x.get("kind") or x["label"]
        kinds[k] = kinds.get(k, 0) + 1
    many = max(kinds, key=lambda k: kinds[k])
    assert kinds[many] >= 3, kinds
    open_panel(page, tb, run=run, layer=layer, depth=4)
    inputs = page.eval_on_selector_all(
        "[data-testid=input-node]",
        "els => els.map((e) => [e.dataset.count || '1', e.dataset.inputIds || e.dataset.nodeId])")
    assert len(inputs) == len(kinds)
    folded = [i for i in inputs if int(i[0]) == kinds[many]]
    assert folded, inputs
    members = [x["id"] for x in doc["external_inputs"] if (x.get("kind") or x["label"]) == many]
    assert sorted(folded[0][1].split()) == sorted(members)
    # The row of inputs is narrower than the layer's own content.
    span = page.evaluate("""() => {
      const xs = (sel) => [...document.querySelectorAll(sel)].map((e) => e.getBoundingClientRect());
      const ext = (rs) => [Math.min(...rs.map((r) => r.left)), Math.max(...rs.map((r) => r.right))];
      const [il, ir] = ext(xs('[data-testid=input-node] rect.box'));
      const [nl, nr] = ext(xs('[data-testid=graph-node] rect.box, .c.d2 > rect.cbox'));
      return [ir - il, nr - nl];
    }""")
    assert span[0] < span[1], span


def test_node_cards_elide_long_kernel_names_in_the_middle(page: Any, tb: TensorBoard,
                                                          hostile_node: str) -> None:
    open_panel(page, tb, run=HOSTILE_RUN, layer=0)
    assert page.evaluate("(id) => window.__adLayer.selectNode(id)", hostile_node)
    ready(page)
    lines = page.evaluate("""(n) => { const g = document.querySelector(`[data-node-id='${n}']`);
        const w = g.querySelector('rect.box').getBBox().width;
        return [...g.querySelectorAll('text.l.kernel')]
          .map((t) => [t.textContent, t.getBBox().x + t.getBBox().width, w]); }""",
                          hostile_node)
    assert lines
    text, right, width = next(line for line in lines if line[0].startswith("⚡ void k<"))
    assert "…" in text and (text.endswith(" µs") or text.endswith(" ms")), text
    assert HOSTILE[-12:] in text, text  # the name's end survives the elision
    assert right <= width, (text, right, width)  # the duration is inside the card


def test_minimap_never_covers_the_graph(page: Any, tb: TensorBoard) -> None:
    layer = largest_layer(tb, LARGE_RUN)
    open_panel(page, tb, run=LARGE_RUN, layer=layer)
    page.evaluate("window.__adLayer.setDepth('all')")
    ready(page)
    assert page.evaluate("window.__adLayer.minimapShown()")
    mm = rect(page, "[data-testid=minimap]")
    assert mm["w"] > 0 and not overlaps(mm, rect(page, "[data-testid=graph]"))
    shot(page, "legible_minimap")


#: Vertical centres of the visible toolbar controls (one per row they sit on), and their boxes.
TOOLBAR = """() => { const out = [];
  for (const el of document.querySelectorAll('[data-testid=toolbar] > *')) {
  if (el.closest('[hidden]') || el.classList.contains('spacer') || el.classList.contains('break')) continue;
  const r = el.getBoundingClientRect(); if (!r.width) continue;
  out.push({x: r.left, y: r.top, w: r.width, h: r.height}); } return out; }"""


def test_toolbar_fits_two_rows_at_1500_px_and_stays_usable_at_1024(page: Any, tb: TensorBoard) -> None:
    for width, most_rows in ((1500, 2), (1024, 4)):
        page.set_viewport_size({"width": width, "height": 768})
        open_panel(page, tb, run="dsv3_decode", layer=3)
        boxes = page.evaluate(TOOLBAR)
        rows = {round(b["y"] + b["h"] / 2) for b in boxes}
        assert len(rows) <= most_rows, (width, sorted(rows))
        # Every control is inside the window, none over another, and the graph keeps its room.
        assert all(b["x"] >= 0 and b["x"] + b["w"] <= width for b in boxes), (width, boxes)
        for i, a in enumerate(boxes):
            assert not any(overlaps(a, b) for b in boxes[i + 1:]), (width, a)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert rect(page, "[data-testid=graph]")["h"] >= 300, width
        shot(page, f"toolbar_{width}")
    # The comparison view has its own choosers: the toolbar takes one row, the two sides' choosers
    # (whole names, as wide as they need) one row, its buttons that row or the next.
    page.set_viewport_size({"width": 1500, "height": 950})
    page.click("[data-testid=view-compare]")
    wait_compare(page)
    assert len({round(b["y"] + b["h"] / 2) for b in page.evaluate(TOOLBAR)}) == 1
    bar = page.eval_on_selector_all(
        "[data-testid=compare-view] .adl-vbar > *",
        "els => els.filter((e) => e.getBoundingClientRect().width)"
        ".map((e) => { const r = e.getBoundingClientRect(); return Math.round(r.top + r.height / 2); })")
    sides = page.eval_on_selector_all(
        "[data-testid=compare-side-a], [data-testid=compare-side-b]",
        "els => els.map((e) => { const r = e.getBoundingClientRect();"
        " return Math.round(r.top + r.height / 2); })")
    assert len(sides) == 2 and len(set(sides)) == 1, sides
    assert len(set(bar)) <= 2, bar
