"""Browser tests of the panel's comparison, stage and overview views, the minimap, the keyboard
help, the language switch and SVG/PNG export, against a real tensorboard (see conftest.py).

Screenshots go to test-artifacts/e2e/.
"""
from __future__ import annotations

import shutil
import struct
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

from tests.e2e.panel import (
    ARTIFACTS,
    compare_hash,
    drawn,
    panel_frame,
    ready,
    seq,
    shot,
    wait_compare,
    wait_stage,
)

SVG_NS = "{http://www.w3.org/2000/svg}"


# ------------------------------------------------------------------------------------------ helpers

def wait_layer(page, after: int = 0, timeout: int = 30000) -> int:
    return drawn(page, after, timeout)["seq"]


def layer_seq(page) -> int:
    return seq(page)


def runs_by_name(api) -> dict:
    return {r["run"]: r for r in api("runs")["runs"]}


#: The ``data-node-id`` of every element matched.
NODE_IDS = "els => els.map(e => e.dataset.nodeId)"


def node_ids(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector, NODE_IDS)


def status_ids(page, pane: str, status: str) -> list[str]:
    return page.eval_on_selector_all(
        f"[data-testid=compare-pane-{pane}] g[data-testid=graph-node][data-status={status}]",
        "els => els.map(e => e.getAttribute('data-node-id'))")


def save_download(download, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    dst = ARTIFACTS / name
    shutil.copyfile(download.path(), dst)
    return dst


def read_png(data: bytes) -> tuple[int, int, bytes]:
    """Decodes a PNG's header and image data; returns (width, height, raw scanlines)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos = 8
    width = height = 0
    idat = b""
    color_type = bit_depth = None
    seen_end = False
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        ctype = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(ctype + body) & 0xFFFFFFFF == crc, f"bad CRC in {ctype!r}"
        if ctype == b"IHDR":
            width, height, bit_depth, color_type = struct.unpack(">IIBB", body[:10])
        elif ctype == b"IDAT":
            idat += body
        elif ctype == b"IEND":
            seen_end = True
            break
        pos += 12 + length
    assert seen_end, "no IEND chunk"
    raw = zlib.decompress(idat)
    channels = {6: 4, 2: 3, 0: 1, 4: 2}[color_type]
    assert bit_depth == 8
    assert len(raw) == height * (1 + width * channels), "image data does not match the header size"
    return width, height, raw


def check_comparison(page, api, a: tuple, b: tuple, name: str) -> dict:
    """Opens a comparison and checks the status counts and deltas against api/compare."""
    page.goto(page.panel_url + compare_hash(a, b))
    st = wait_compare(page)
    exp = api("compare", a_run=a[0], a_stage=a[1], a_layer=a[2], b_run=b[0], b_stage=b[1], b_layer=b[2])
    assert st["sides"] == {"a": {"run": a[0], "stage": a[1], "layer": a[2]},
                           "b": {"run": b[0], "stage": b[1], "layer": b[2]}}
    # The legend shows exactly the API's counts ...
    for s in ("same", "changed", "only_a", "only_b"):
        assert page.inner_text(f"[data-testid=compare-count-{s}]") == str(exp["counts"][s]), s
    # ... and the panes colour exactly those nodes (everything is expanded for layers this size).
    a_changed = {m["a"] for m in exp["matches"] if m["status"] == "changed"}
    b_changed = {m["b"] for m in exp["matches"] if m["status"] == "changed"}
    a_same = {m["a"] for m in exp["matches"] if m["status"] == "same"}
    assert set(status_ids(page, "a", "changed")) == a_changed
    assert set(status_ids(page, "b", "changed")) == b_changed
    assert set(status_ids(page, "a", "same")) == a_same
    assert set(status_ids(page, "a", "only_a")) == set(exp["only_a"])
    assert set(status_ids(page, "b", "only_b")) == set(exp["only_b"])
    assert status_ids(page, "a", "only_b") == [] and status_ids(page, "b", "only_a") == []
    # Only nodes carry a status colour, never the groups around them (msProbe flags the parent).
    assert page.locator("[data-testid^=compare-pane] [data-testid=group-box][data-status]").count() == 0
    # The delta table: one row per group, the whole-layer row, values as the API computed them.
    rows = page.eval_on_selector_all("[data-testid=delta-row]",
                                     "els => els.map(e => [e.dataset.group, Number(e.dataset.delta)])")
    assert sorted(g for g, _ in rows) == sorted(g["group"] for g in exp["groups"])
    by_group = {g["group"]: g["delta_us"] for g in exp["groups"]}
    # Kernel times are a stage's: a traced run's other stages have none, and then no deltas.
    timed = [api("layer", run=r, stage=st, layer=L)["trace_summary"] is not None for r, st, L in (a, b)]
    if not all(timed):
        missing = page.eval_on_selector_all("[data-testid=delta-row]",
                                            "els => els.map(e => e.dataset.missing)")
        assert all(missing) and all(d != d for _, d in rows), rows  # NaN: no data-delta
        assert "no trace" in page.inner_text("[data-testid=compare-layer-delta]")
        shot(page, name)
        return exp
    for g, d in rows:
        assert d == pytest.approx(by_group[g], abs=1e-3)
    whole = float(page.get_attribute("[data-testid=delta-layer]", "data-delta"))
    assert whole == pytest.approx(exp["layer"]["delta_us"], abs=1e-3)
    # Matched nodes whose time changed (by at least 0.05 µs) carry a delta badge, on both sides.
    for side, key in (("a", "a"), ("b", "b")):
        badges = page.eval_on_selector_all(
            f"[data-testid=compare-pane-{side}] g[data-testid=graph-node]:has(.mbadge)",
            "els => els.map(e => [e.dataset.nodeId,"
            " e.querySelector('.mbadge').classList.contains('slower') ? 1 : -1])")
        ids = {m[key]: m["delta_us"] for m in exp["matches"] if abs(m["delta_us"]) >= 0.05}
        assert {i for i, _ in badges} == set(ids)
        for i, sign in badges:
            assert sign == (1 if ids[i] > 0 else -1)
    shot(page, name)
    return exp


# ------------------------------------------------------------------------------------------ compare

@pytest.fixture
def cpage(page, panel_url):
    page.panel_url = panel_url
    return page


def test_compare_decode_vs_unfused_counts_and_deltas(cpage, api):
    page = cpage
    runs = runs_by_name(api)
    a = ("dsv3_decode", runs["dsv3_decode"]["default_stage"], 3)
    b = ("dsv3_decode_unfused", runs["dsv3_decode_unfused"]["default_stage"], 3)
    exp = check_comparison(page, api, a, b, "compare_decode_vs_unfused")
    assert exp["counts"]["changed"] + exp["counts"]["only_a"] + exp["counts"]["only_b"] > 0
    # A non-zero delta table, sorted by size (largest |Δ| first) by default.
    rows = page.eval_on_selector_all("[data-testid=delta-row]",
                                     "els => els.map(e => Number(e.dataset.delta))")
    assert rows and any(abs(d) > 0 for d in rows)
    assert [abs(d) for d in rows] == sorted((abs(d) for d in rows), reverse=True)
    assert abs(float(page.get_attribute("[data-testid=delta-layer]", "data-delta"))) > 0
    # Sorting by Δ%: by size, then reversed on a second click.
    page.click("[data-testid=delta-sort-pct]")
    pct = {g["group"]: abs(g["delta_pct"]) for g in exp["groups"] if g["delta_pct"] is not None}
    order = page.eval_on_selector_all("[data-testid=delta-row]", "els => els.map(e => e.dataset.group)")
    assert [g for g in order if g in pct] == sorted(pct, key=lambda g: -pct[g])
    page.click("[data-testid=delta-sort-pct]")
    order2 = page.eval_on_selector_all("[data-testid=delta-row]", "els => els.map(e => e.dataset.group)")
    assert [g for g in order2 if g in pct] == sorted(pct, key=lambda g: pct[g])


def open_decode_vs_unfused(page, api):
    """Opens layer 3 of dsv3_decode against dsv3_decode_unfused; returns the API's comparison."""
    runs = runs_by_name(api)
    a = ("dsv3_decode", runs["dsv3_decode"]["default_stage"], 3)
    b = ("dsv3_decode_unfused", runs["dsv3_decode_unfused"]["default_stage"], 3)
    page.goto(page.panel_url + compare_hash(a, b))
    wait_compare(page)
    return api("compare", a_run=a[0], a_stage=a[1], a_layer=a[2], b_run=b[0], b_stage=b[1], b_layer=b[2])


def test_compare_unmatched_list_jumps_to_node(cpage, api):
    page = cpage
    exp = open_decode_vs_unfused(page, api)
    # Only-left list: every unmatched A node, and a click selects and centres it.
    page.click("[data-testid=unmatched-tab-only_a]")
    items = node_ids(page, "[data-testid=unmatched-list-only_a] [data-testid=unmatched-item]")
    assert sorted(items) == sorted(exp["only_a"])
    target = items[len(items) // 2]
    page.click(f"[data-testid=unmatched-list-only_a] [data-testid=unmatched-item][data-node-id='{target}']")
    page.wait_for_function("(id) => window.__adLayer.compare().selected.a === id", arg=target)
    ready(page)
    node = page.locator(f"[data-testid=compare-pane-a] [data-node-id='{target}']")
    assert "sel" in (node.get_attribute("class") or "")
    nb = node.bounding_box()
    pb = page.locator("[data-testid=compare-pane-a]").bounding_box()
    cx, cy = nb["x"] + nb["width"] / 2, nb["y"] + nb["height"] / 2
    assert pb["x"] <= cx <= pb["x"] + pb["width"], "jumped-to node is not in view"
    assert pb["y"] <= cy <= pb["y"] + pb["height"], "jumped-to node is not in view"
    # Only-right list, through the keyboard too (N steps through the unmatched nodes of both sides).
    page.click("[data-testid=unmatched-tab-only_b]")
    items_b = node_ids(page, "[data-testid=unmatched-list-only_b] [data-testid=unmatched-item]")
    assert sorted(items_b) == sorted(exp["only_b"])
    page.locator("[data-testid=compare-pane-a]").click(position={"x": 5, "y": 5})
    page.keyboard.press("n")
    page.wait_for_function("() => { const s = window.__adLayer.compare().selected; return !!(s.a || s.b); }")
    # A matched node selects its partner on the other side.
    m = next(x for x in exp["matches"] if x["status"] == "changed")
    page.evaluate("([id]) => window.__adLayer.compareJump('a', id)", [m["a"]])
    page.wait_for_function("(ids) => { const s = window.__adLayer.compare().selected;"
                           " return s.a === ids[0] && s.b === ids[1]; }", arg=[m["a"], m["b"]])
    assert page.inner_text("[data-testid=compare-selection-status]") == "changed"
    shot(page, "compare_jump_selected")


def test_compare_panes_follow_each_other(cpage, api):
    page = cpage
    exp = open_decode_vs_unfused(page, api)
    # Collapse a group on the left: the same group collapses on the right.
    d = page.evaluate("window.__adLayer.compare().drawn")
    moe = "[data-group-id='L3/moe']"
    page.locator(f"[data-testid=compare-pane-a] {moe} > text.chead").dispatch_event("dblclick")
    wait_compare(page, d)
    assert page.locator(f"[data-testid=compare-pane-a] {moe}[data-collapsed=true]").count() == 1
    assert page.locator(f"[data-testid=compare-pane-b] {moe}[data-collapsed=true]").count() == 1
    # Zoom with the wheel over the left pane: the right pane zooms by the same factor.
    v0 = page.evaluate("window.__adLayer.compare().views")
    box = page.locator("[data-testid=compare-pane-a]").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -240)
    # Wait for the condition, not a fixed time: both panes zoomed, by the same factor.
    page.wait_for_function(
        "([ka, kb]) => { const v = window.__adLayer.compare().views;"
        " return v.a.k !== ka && Math.abs(v.a.k / ka - v.b.k / kb) < 1e-3; }",
        arg=[v0["a"]["k"], v0["b"]["k"]])
    v1 = page.evaluate("window.__adLayer.compare().views")
    fa = v1["a"]["k"] / v0["a"]["k"]
    fb = v1["b"]["k"] / v0["b"]["k"]
    assert fa > 1.05 and fb == pytest.approx(fa, rel=1e-3)
    # Pan (drag) the right pane: the left one moves by the same amount.
    bb = page.locator("[data-testid=compare-pane-b]").bounding_box()
    sx, sy = bb["x"] + bb["width"] * 0.7, bb["y"] + bb["height"] * 0.8
    page.mouse.move(sx, sy)
    page.mouse.down()
    page.mouse.move(sx - 60, sy - 90, steps=6)
    page.mouse.up()
    page.wait_for_function(
        "([ax, bx]) => { const v = window.__adLayer.compare().views;"
        " return v.b.x !== bx && Math.abs((v.a.x - ax) - (v.b.x - bx)) < 0.5; }",
        arg=[v1["a"]["x"], v1["b"]["x"]])
    v2 = page.evaluate("window.__adLayer.compare().views")
    assert v2["b"]["x"] - v1["b"]["x"] == pytest.approx(-60, abs=2)
    assert v2["a"]["x"] - v1["a"]["x"] == pytest.approx(v2["b"]["x"] - v1["b"]["x"], abs=0.5)
    assert v2["a"]["y"] - v1["a"]["y"] == pytest.approx(v2["b"]["y"] - v1["b"]["y"], abs=0.5)
    # Collapsed groups show how many nodes of each status they hold; the counts add up.
    d = page.evaluate("window.__adLayer.compare().drawn")
    page.click("[data-testid=compare-collapse]")
    wait_compare(page, d)
    shot(page, "compare_collapsed_groups")
    for side, only in (("a", "only_a"), ("b", "only_b")):
        attrs = page.eval_on_selector_all(
            f"[data-testid=compare-pane-{side}] [data-testid=group-box][data-collapsed=true]",
            "els => els.map(e => e.getAttribute('data-status-counts') || '')")
        assert attrs, "no collapsed groups"
        total: dict[str, int] = {}
        for a_ in attrs:
            for part in filter(None, a_.split(",")):
                k, v = part.split(":")
                total[k] = total.get(k, 0) + int(v)
        assert total.get("changed", 0) == exp["counts"]["changed"]
        assert total.get(only, 0) == exp["counts"][only]
        assert total.get("same", 0) == exp["counts"]["same"]
        badges = page.eval_on_selector_all(
            f"[data-testid=compare-pane-{side}] [data-testid=group-box][data-collapsed=true] .mbadge text",
            "els => els.map(e => e.textContent)")
        assert any(("~" in t_ or "−" in t_ or "+" in t_) for t_ in badges)


#: Each matched pair's box (left, top) relative to its pane, and whether it is on screen there.
PAIR_POSITIONS = """(pairs) => {
  const at = (side, id) => {
    const p = document.querySelector(`[data-testid=compare-pane-${side}]`).getBoundingClientRect();
    const n = document.querySelector(
      `[data-testid=compare-pane-${side}] [data-node-id='${CSS.escape(id)}'] rect.box`);
    if (!n) return null;
    const r = n.getBoundingClientRect();
    const on = r.right > p.left && r.left < p.right && r.bottom > p.top && r.top < p.bottom;
    return {x: r.left - p.left, y: r.top - p.top, on};
  };
  return pairs.map(([a, b]) => [a, at('a', a), at('b', b)]);
}"""


@pytest.mark.parametrize("a_run, b_run, layer", [("notrace", "notrace", 1), ("notrace", "hostile", 1),
                                                 ("hostile", "notrace", 1),
                                                 ("dsv3_decode", "dsv3_decode_unfused", 3)])
def test_compare_panes_open_aligned(cpage, api, a_run: str, b_run: str, layer: int) -> None:
    """Synchronised panes open at one zoom with the same node at the same place on screen: the
    same layer against itself, against the same graph with a trace (whose node cards, with their
    kernels, are taller), and against another build of it (whose pane head wraps)."""
    page = cpage
    runs = runs_by_name(api)
    a = (a_run, runs[a_run]["default_stage"], layer)
    b = (b_run, runs[b_run]["default_stage"], layer)
    page.goto(page.panel_url + compare_hash(a, b))
    st = wait_compare(page)
    shot(page, f"compare_aligned_{a_run}_{b_run}")
    assert st["views"]["a"]["k"] == st["views"]["b"]["k"], st["views"]
    # The two graphs start at one height on screen, however the heads above them wrap.
    tops = page.evaluate("""() => ["a", "b"].map((s) => [
        document.querySelector(`[data-testid=compare-head-${s}]`).getBoundingClientRect().height,
        document.querySelector(`[data-testid=compare-pane-${s}]`).getBoundingClientRect().top])""")
    assert tops[0][1] == tops[1][1], tops

    res = api("compare", a_run=a[0], a_stage=a[1], a_layer=a[2], b_run=b[0], b_stage=b[1], b_layer=b[2])
    pairs = [[m["a"], m["b"]] for m in res["matches"]]
    assert len(pairs) == res["counts"]["same"] + res["counts"]["changed"] > 10
    shown = [(i, pa, pb) for i, pa, pb in page.evaluate(PAIR_POSITIONS, pairs)
             if pa and pb and pa["on"] and pb["on"]]
    assert shown, "no matched node on screen in both panes"
    aligned = [i for i, pa, pb in shown if abs(pa["x"] - pb["x"]) < 0.5 and abs(pa["y"] - pb["y"]) < 0.5]
    assert aligned, [(i, pa, pb) for i, pa, pb in shown][:5]
    if a_run == b_run:
        assert st["views"]["a"] == st["views"]["b"]
        assert len(aligned) == len(shown)


def test_compare_manual_matching(cpage, api):
    """Two unmatched nodes can be matched by hand; counts, colours and the link follow; undo works."""
    page = cpage
    exp = open_decode_vs_unfused(page, api)
    xa = next(i for i in exp["only_a"] if i.startswith("flashinfer_mla_with_cache"))
    xb = next(i for i in exp["only_b"] if i.startswith("torch_mla"))
    page.click("[data-testid=unmatched-tab-only_a]")
    page.click(f"[data-testid=unmatched-item][data-side=a][data-node-id='{xa}']")
    page.click("[data-testid=unmatched-tab-only_b]")
    page.click(f"[data-testid=unmatched-item][data-side=b][data-node-id='{xb}']")
    page.wait_for_selector("[data-testid=compare-manual-match]")
    shot(page, "compare_manual_pick")
    page.click("[data-testid=compare-manual-match]")
    page.wait_for_function("() => window.__adLayer.compare().manual.length === 1")
    c = exp["counts"]
    assert page.inner_text("[data-testid=compare-count-only_a]") == str(c["only_a"] - 1)
    assert page.inner_text("[data-testid=compare-count-only_b]") == str(c["only_b"] - 1)
    matched = sum(int(page.inner_text(f"[data-testid=compare-count-{s}]")) for s in ("changed", "same"))
    assert matched == c["changed"] + c["same"] + 1
    for side, x in (("a", xa), ("b", xb)):
        status = page.get_attribute(f"[data-testid=compare-pane-{side}] [data-node-id='{x}']", "data-status")
        assert status in ("changed", "same")
    assert f"mp={xa}%3E{xb}" in page.evaluate("location.hash")
    # The link reproduces the pair.
    page.reload()
    wait_compare(page)
    assert page.evaluate("window.__adLayer.compare().manual") == [[xa, xb]]
    assert page.inner_text("[data-testid=compare-count-only_a]") == str(c["only_a"] - 1)
    # Selecting the pair shows it as matched by hand, with its delta; unmatching restores the API's answer.
    page.evaluate("([id]) => window.__adLayer.compareJump('a', id)", [xa])
    page.wait_for_selector("[data-testid=compare-manual-unmatch]")
    shot(page, "compare_manual_matched")
    page.click("[data-testid=compare-manual-unmatch]")
    page.wait_for_function("() => window.__adLayer.compare().manual.length === 0")
    for k in ("same", "changed", "only_a", "only_b"):
        assert page.inner_text(f"[data-testid=compare-count-{k}]") == str(c[k])
    assert "mp=" not in page.evaluate("location.hash")


@pytest.mark.parametrize("what", ["layer3_vs_layer10", "stage2_vs_stage3", "prefill_vs_decode"])
def test_compare_other_pairs_from_the_same_view(cpage, api, what):
    page = cpage
    runs = runs_by_name(api)
    dec = runs["dsv3_decode"]
    if what == "layer3_vs_layer10":
        a, b = ("dsv3_decode", dec["default_stage"], 3), ("dsv3_decode", dec["default_stage"], 10)
    elif what == "stage2_vs_stage3":
        st = sorted(s["index"] for s in dec["stages"])
        a, b = ("dsv3_decode", st[-2], 3), ("dsv3_decode", st[-1], 3)
    else:
        a = ("dsv3_prefill", runs["dsv3_prefill"]["default_stage"], 3)
        b = ("dsv3_decode", dec["default_stage"], 3)
    exp = check_comparison(page, api, a, b, f"compare_{what}")
    if what == "layer3_vs_layer10":
        assert exp["counts"]["same"] > 0  # two MoE layers of one run are mostly the same
    if what == "prefill_vs_decode":
        assert abs(exp["layer"]["delta_us"]) > 0
        assert page.locator("[data-testid=compare-pane-a] g[data-testid=graph-node] .mbadge").count() > 0


def test_compare_choosers_switch_sides(cpage, api):
    page = cpage
    runs = runs_by_name(api)
    dec = runs["dsv3_decode"]
    a, b = ("dsv3_decode", dec["default_stage"], 3), ("dsv3_decode", dec["default_stage"], 4)
    page.goto(page.panel_url + compare_hash(a, b))
    st = wait_compare(page)
    page.select_option("[data-testid=compare-b-layer]", "10")
    st2 = wait_compare(page, st["drawn"])
    assert st2["sides"]["b"]["layer"] == 10
    assert "blayer=10" in page.evaluate("location.hash")
    page.click("[data-testid=compare-swap]")
    st3 = wait_compare(page, st2["drawn"])
    assert st3["sides"]["a"]["layer"] == 10 and st3["sides"]["b"]["layer"] == 3
    exp = api("compare", a_run="dsv3_decode", a_stage=dec["default_stage"], a_layer=10, b_run="dsv3_decode",
              b_stage=dec["default_stage"], b_layer=3)
    assert page.inner_text("[data-testid=compare-count-same]") == str(exp["counts"]["same"])


def test_svg_ids_are_unique_and_each_pane_uses_its_own(cpage, api):
    page = cpage
    open_decode_vs_unfused(page, api)
    page.click("[data-testid=view-stages]")
    wait_stage(page)
    page.click("[data-testid=view-layer]")
    ready(page)
    found = page.evaluate("""() => {
      const ids = [...document.querySelectorAll('[id]')].map((e) => e.id);
      const foreign = [];
      for (const svg of document.querySelectorAll('svg')) {
        for (const el of svg.querySelectorAll('[marker-end]')) {
          const id = el.getAttribute('marker-end').replace(/^url\\(#|\\)$/g, '');
          if (!svg.querySelector(`[id="${id}"]`)) foreign.push(id);
        }
      }
      return {ids, foreign, svgs: document.querySelectorAll("svg .vp").length,
              refs: document.querySelectorAll("svg [marker-end]").length};
    }""")
    assert found["svgs"] >= 4  # the layer view, both comparison panes, the stage view
    assert len(found["ids"]) == len(set(found["ids"])), sorted(found["ids"])
    assert found["refs"] > 10 and not found["foreign"], found["foreign"][:5]


# ------------------------------------------------------------------------------------------ stages

def test_stage_stepping_highlights_removed_nodes(page, panel_url, api):
    stages = sorted(api("stages", run="dsv3_decode", layer=3)["stages"], key=lambda s: s["index"])
    pos = next(i for i, s in enumerate(stages) if s["removed"])
    target, prev = stages[pos], stages[pos - 1]
    page.goto(panel_url + f"#view=stages&run=dsv3_decode&layer=3&stage={prev['index']}")
    st = wait_stage(page)
    assert st["stage"] == prev["index"]
    cards = page.eval_on_selector_all("[data-testid=stage-card]",
                                      "els => els.map(e => Number(e.dataset.stage))")
    assert cards == [s["index"] for s in stages]
    # Step forward: the transform that removes nodes.
    page.click("[data-testid=stage-next]")
    st = wait_stage(page, st["draws"])
    assert st["stage"] == target["index"]
    # The stage view's own stage is in the URL; the panel's stage (the other views') stays put.
    assert f"ss={target['index']}" in page.evaluate("location.hash")
    assert page.evaluate("window.__adLayer.state().stage") == prev["index"]
    selected = page.get_attribute("[data-testid=stage-card][aria-selected=true]", "data-stage")
    assert selected == str(target["index"])
    # Removed nodes are listed (they are not in this stage's graph) ...
    listed = node_ids(page, "[data-testid=stage-removed-item]")
    assert sorted(listed) == sorted(target["removed"])
    drawn_after = set(node_ids(page, "[data-testid=stage-pane] g[data-testid=graph-node]"))
    assert not drawn_after & set(target["removed"])
    # ... added and changed nodes are highlighted in it ...
    added = node_ids(page, "[data-testid=stage-pane] [data-status=added]")
    assert sorted(added) == sorted(target["added"])
    changed = node_ids(page, "[data-testid=stage-pane] [data-status=changed]")
    assert sorted(changed) == sorted(target["changed"])
    shot(page, "stages_after")
    # ... and the previous stage's graph shows the removed ones highlighted.
    page.click("[data-testid=stage-side-before]")
    st = wait_stage(page, st["draws"])
    removed = node_ids(page, "[data-testid=stage-pane] [data-status=removed]")
    assert sorted(removed) == sorted(target["removed"])
    assert page.inner_text("[data-testid=stage-count-removed]").strip() == str(len(target["removed"]))
    shot(page, "stages_before_removed")
    # Clicking a removed node selects it there.
    rid = target["removed"][len(target["removed"]) // 2]
    page.click(f"[data-testid=stage-removed-item][data-node-id='{rid}']")
    page.wait_for_function("(id) => window.__adLayer.stages().selected === id", arg=rid)
    # Keyboard stepping: ] forward, [ back.
    page.locator("[data-testid=stage-pane]").click(position={"x": 5, "y": 5})
    page.keyboard.press("]")
    st = wait_stage(page, st["draws"])
    assert st["stage"] == stages[min(pos + 1, len(stages) - 1)]["index"]
    page.keyboard.press("[")
    st = wait_stage(page, st["draws"])
    assert st["stage"] == target["index"]
    # Stepping through stages did not change the stage behind the user's back: the layer view
    # opens at the stage it had, which still holds the nodes the next transform removes.
    seq = layer_seq(page)
    page.click("[data-testid=view-layer]")
    wait_layer(page, seq)
    assert page.input_value("[data-testid=stage-select]") == str(prev["index"])
    page.evaluate("window.__adLayer.setDepth('all')")
    ready(page)
    shown = set(node_ids(page, "[data-testid=graph] g[data-testid=graph-node]"))
    assert set(target["removed"]) <= shown
    # Back in the stage view, it is still at the stage it was stepped to.
    page.click("[data-testid=view-stages]")
    ready(page)
    assert page.evaluate("window.__adLayer.stages().stage") == target["index"]


# ------------------------------------------------------------------------------------------ overview

def test_overview_bar_opens_layer(page, panel_url, api):
    ov = api("overview", run="dsv3_decode")
    page.goto(panel_url + "#view=overview&run=dsv3_decode&layer=0")
    page.wait_for_function("(n) => document.querySelectorAll('[data-testid=overview-bar]').length === n",
                           arg=len(ov["layers"]))
    kinds = page.eval_on_selector_all("[data-testid=overview-bar]",
                                      "els => els.map(e => [Number(e.dataset.layer), e.dataset.kind])")
    assert kinds == [[L["layer"], L["kind"]] for L in ov["layers"]]
    # Stacked by group where the run has a trace.
    L3 = next(L for L in ov["layers"] if L["layer"] == 3)
    segs = page.eval_on_selector_all("[data-testid=overview-bar][data-layer='3'] rect.seg",
                                     "els => els.map(e => e.dataset.group)")
    assert set(segs) == {g for g, v in L3["groups"].items() if v > 0}
    # Per-group totals of the current layer.
    rows = page.eval_on_selector_all("[data-testid=overview-groups] tr[data-group]",
                                     "els => els.map(e => e.dataset.group)")
    L0 = ov["layers"][0]
    assert set(rows) == set(L0["groups"]) | set(L0.get("group_counts", {}))
    shot(page, "overview")
    seq = layer_seq(page)
    page.locator("[data-testid=overview-bar][data-layer='7'] rect.seg").first.click()
    wait_layer(page, seq)
    assert page.evaluate("window.__adLayer.view()") == "layer"
    assert page.input_value("[data-testid=layer-select]") == "7"
    assert page.locator("[data-group-id='L7']").count() == 1
    assert "layer=7" in page.evaluate("location.hash")
    shot(page, "overview_opened_layer7")


def test_overview_shows_the_time_outside_the_layers(page, panel_url, api):
    run = "dsv3_decode"
    ov = api("overview", run=run)
    out = ov["outside_gpu_time_us"]
    assert out and out > 0, ov
    layers_us = sum(L["gpu_time_us"] for L in ov["layers"])
    share = f"{100 * out / (layers_us + out):.1f}%"
    page.goto(panel_url + f"#view=overview&run={run}&layer=0")
    ready(page)
    # A bar of its own after the layers', its height to the layers' as its time to theirs.
    bar = page.locator("[data-testid=overview-outside]")
    assert bar.count() == 1
    heights = page.evaluate("""() => {
      const rects = (sel) => [...document.querySelectorAll(sel)].map((e) => e.getBoundingClientRect());
      const h = (sel) => rects(sel).reduce((a, r) => a + r.height, 0);
      const out = '[data-testid=overview-outside] rect.seg';
      return {out: h(out), l0: h("[data-testid=overview-bar][data-layer='0'] rect.seg"),
              outX: rects(out)[0].left,
              lastX: Math.max(...rects('[data-testid=overview-bar] rect.seg').map((r) => r.left))};

    }""")
    l0 = next(L for L in ov["layers"] if L["layer"] == 0)["gpu_time_us"]
    assert abs(heights["out"] / heights["l0"] - out / l0) < 0.02, (heights, out, l0)
    assert heights["outX"] > heights["lastX"]
    # Its share of the stage's GPU time is in sight above it and in the model summary.
    assert page.text_content("[data-testid=overview-outside] text.oval") == share
    summary = page.inner_text("[data-testid=overview-summary]")
    assert "Outside the layers" in summary and share in summary and "GPU time, total" in summary, summary
    page.hover("[data-testid=overview-outside] rect.seg")
    page.wait_for_selector("[data-testid=overview-side-outside]")
    assert share in page.inner_text("[data-testid=overview-side-outside]")
    shot(page, "overview_outside_layers")
    # The whole stage's summary in the layer view has it beside the groups.
    page.goto(panel_url + f"#run={run}&layer=all")
    wait_layer(page)
    row = page.inner_text("[data-testid=details-outside]")
    assert row.startswith("Outside the layers") and share in row, row
    shot(page, "stage_summary_outside_layers")
    # Another stage of the run (the trace maps onto the last) and a run without a trace: nothing,
    # not "0 µs", not "null".
    first = min(s["index"] for s in runs_by_name(api)[run]["stages"])
    for where in (f"run={run}&stage={first}", "run=notrace"):
        page.goto(panel_url + f"#view=overview&{where}&layer=0")
        page.wait_for_selector("[data-testid=overview-summary]")
        ready(page)
        assert page.locator("[data-testid=overview-outside]").count() == 0, where
        assert page.locator("[data-testid=overview-legend-outside]").count() == 0, where
        text = page.inner_text("[data-testid=overview-view]")
        assert "µs" not in text and "null" not in text and "GPU time, total" not in text, (where, text)
        assert "Outside the layers" in text, where  # its node count is still given
    page.goto(panel_url + "#run=notrace&layer=all")
    wait_layer(page)
    assert page.locator("[data-testid=details-outside]").count() == 0


def test_every_view_follows_the_shared_state(page, panel_url, api):
    """Run, stage, layer and selection are one state: a choice made in one view (or a link) is
    what every other view shows."""
    runs = runs_by_name(api)
    stages = sorted(s["index"] for s in runs["dsv3_decode"]["stages"])
    page.goto(panel_url + "#view=overview&run=dsv3_decode&layer=3")
    page.wait_for_selector("[data-testid=overview-bar].cur[data-layer='3']")
    ready(page)
    # The layer chooser moves the overview's outline; the stage chooser its figures.
    page.select_option("[data-testid=layer-select]", "5")
    page.wait_for_selector("[data-testid=overview-bar].cur[data-layer='5']")
    page.select_option("[data-testid=stage-select]", str(stages[-2]))
    ready(page)
    transform = next(s["transform"] for s in runs["dsv3_decode"]["stages"] if s["index"] == stages[-2])
    assert page.inner_text("[data-testid=overview-title]").endswith(transform)
    # The stage view opens on that layer and stage.
    page.click("[data-testid=view-stages]")
    st = wait_stage(page)
    assert (st["layer"], st["stage"]) == (5, stages[-2])
    # A link followed in the stage view: the layer view shows its layer with its node selected.
    doc = api("layer", run="dsv3_decode", layer=7)
    node = doc["nodes"][len(doc["nodes"]) // 2]["id"]
    s0 = seq(page)
    page.evaluate("(n) => { location.hash = `#run=dsv3_decode&layer=7&node=${n}`; }", node)
    drawn(page, s0)
    assert page.evaluate("window.__adLayer.view()") == "layer"
    assert page.input_value("[data-testid=layer-select]") == "7"
    assert page.evaluate("window.__adLayer.state().selected") == node
    assert page.locator(f"[data-testid=graph] [data-node-id='{node}'].sel").count() == 1
    # The theme is shared too: every pane follows the toggle.
    page.click("[data-testid=theme-toggle]")
    ready(page)
    theme = page.evaluate("document.documentElement.dataset.theme")
    assert page.evaluate("window.__adLayer.state().theme") == theme


# ------------------------------------------------------------------------------------------ language

def test_language_switch_changes_text_and_survives_reload(page, panel_url):
    page.goto(panel_url + "#run=dsv3_decode&layer=1")
    wait_layer(page)
    assert page.inner_text("[data-testid=view-compare]") == "Compare"
    assert page.inner_text("[data-testid=view-overview]") == "Overview"
    with page.expect_navigation():
        page.click("[data-testid=lang-toggle]")
    wait_layer(page)
    assert page.inner_text("[data-testid=view-compare]") == "对比"
    assert page.inner_text("[data-testid=view-stages]") == "阶段"
    assert page.inner_text("[data-testid=lang-toggle]") == "English"
    assert page.evaluate("localStorage.getItem('adLayer.lang')") == "zh"
    page.reload()
    wait_layer(page)
    assert page.inner_text("[data-testid=view-compare]") == "对比"
    assert "run=dsv3_decode" in page.evaluate("location.hash")
    # The new views speak Chinese too.
    page.click("[data-testid=view-compare]")
    wait_compare(page)
    legend = page.inner_text("[data-testid=compare-legend]")
    assert "相同" in legend and "仅左侧" in legend and "same" not in legend
    page.keyboard.press("?")
    assert page.inner_text("#adl-help-title") == "键盘快捷键"
    shot(page, "language_zh_help")
    page.keyboard.press("Escape")
    page.click("[data-testid=view-stages]")
    wait_stage(page)
    assert "之后" in page.inner_text("[data-testid=stage-side]")
    shot(page, "language_zh_stages")
    with page.expect_navigation():
        page.click("[data-testid=lang-toggle]")
    page.wait_for_selector("[data-testid=view-compare]")
    assert page.inner_text("[data-testid=view-compare]") == "Compare"


# ------------------------------------------------------------------------------------------ export

def _check_svg(path: Path, texts_expected: list[str]) -> ET.Element:
    root = ET.parse(path).getroot()  # parses as XML or raises
    assert root.tag == f"{SVG_NS}svg"
    w, h = float(root.get("width")), float(root.get("height"))
    assert w > 100 and h > 100
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    # Self-contained: no references outside the file, styles inline (no class-based CSS needed).
    for el in root.iter():
        for k, v in el.attrib.items():
            assert "http" not in v or k == "xmlns", f"external reference {k}={v}"
            if k.endswith("href"):
                assert v.startswith("#"), f"external href {v}"
        assert el.get("class") is None
    assert root.find(f".//{SVG_NS}style") is None
    styled = [el for el in root.iter(f"{SVG_NS}rect") if "fill:" in (el.get("style") or "") or el.get("fill")]
    assert len(styled) > 10
    texts = {(el.text or "") for el in root.iter(f"{SVG_NS}text")}
    for t_ in texts_expected:
        assert t_ in texts, f"{t_!r} not in the SVG's text"
    return root


def test_export_svg_and_png_open(page, panel_url, api):
    runs = runs_by_name(api)
    doc = api("layer", run="dsv3_decode", stage=runs["dsv3_decode"]["default_stage"], layer=3)
    page.goto(panel_url + "#run=dsv3_decode&layer=3&depth=4")
    wait_layer(page)
    with page.expect_download() as d:
        page.click("[data-testid=export-svg]")
    dl = d.value
    assert dl.suggested_filename.endswith(".svg")
    svg_path = save_download(dl, "export_layer3.svg")
    labels = sorted({n["label"] for n in doc["nodes"] if n["node_kind"] == "call"})
    root = _check_svg(svg_path, labels[:8])
    # Every node of the layer is in the file (text of off-screen nodes included).
    all_text = {(el.text or "") for el in root.iter(f"{SVG_NS}text")}
    assert sum(1 for lab in labels if lab in all_text) == len(labels)
    with page.expect_download() as d:
        page.click("[data-testid=export-png]")
    dl = d.value
    assert dl.suggested_filename.endswith(".png")
    png_path = save_download(dl, "export_layer3.png")
    w, h, raw = read_png(png_path.read_bytes())
    assert w == pytest.approx(2 * float(root.get("width")), abs=2)
    assert h == pytest.approx(2 * float(root.get("height")), abs=2)
    assert len(set(raw)) > 16, "blank image"

    # The comparison view exports both panes side by side.
    dec = runs["dsv3_decode"]
    unfused = runs["dsv3_decode_unfused"]
    page.goto(panel_url + compare_hash(("dsv3_decode", dec["default_stage"], 3),
                                       ("dsv3_decode_unfused", unfused["default_stage"], 3)))
    wait_compare(page)
    with page.expect_download() as d:
        page.click("[data-testid=export-svg]")
    croot = _check_svg(save_download(d.value, "export_compare.svg"), [])
    titles = [el.text or "" for el in croot.iter(f"{SVG_NS}text")
              if (el.text or "").startswith(("A · ", "B · "))]
    assert any(t_.startswith("A · dsv3_decode") for t_ in titles)
    assert any(t_.startswith("B · dsv3_decode_unfused") for t_ in titles)
    with page.expect_download() as d:
        page.click("[data-testid=export-png]")
    read_png(save_download(d.value, "export_compare.png").read_bytes())

    # The overview too.
    page.click("[data-testid=view-overview]")
    page.wait_for_selector("[data-testid=overview-bar]")
    with page.expect_download() as d:
        page.click("[data-testid=export-png]")
    w, h, _ = read_png(save_download(d.value, "export_overview.png").read_bytes())
    assert w > 200 and h > 100
    with page.expect_download() as d:
        page.click("[data-testid=export-svg]")
    _check_svg(save_download(d.value, "export_overview.svg"), ["3", "7"])


def test_existing_downloads_still_offered(page, panel_url, api):
    page.goto(panel_url + "#run=dsv3_decode&layer=3")
    wait_layer(page)
    for tid in ("download-json", "download-dot", "download-trace"):
        href = page.get_attribute(f"[data-testid={tid}]", "href")
        assert href.startswith("api/download/"), href  # relative: works under --path_prefix
        r = page.request.get(page.evaluate("(h) => new URL(h, document.baseURI).href", href))
        assert r.ok, (tid, r.status)
        assert len(r.body()) > 20


# ------------------------------------------------------------------------------------------ minimap, help

def test_minimap_moves_the_view_and_help_overlay(page, panel_url):
    page.goto(panel_url + "#run=dsv3_decode&layer=all")
    wait_layer(page)
    assert page.evaluate("window.__adLayer.minimapShown()"), "no minimap for the whole stage"
    mm = page.locator("[data-testid=minimap] canvas")
    box = mm.bounding_box()
    v0 = page.evaluate("window.__adLayer.graphView()")
    # Click near the bottom of the minimap: the view moves down there (same zoom).
    page.mouse.click(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.9)
    page.wait_for_function("(y0) => window.__adLayer.graphView().y < y0 - 50", arg=v0["y"])
    v1 = page.evaluate("window.__adLayer.graphView()")
    assert v1["k"] == pytest.approx(v0["k"])
    assert v1["y"] < v0["y"] - 50
    # Drag along it.
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.9)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.3, steps=5)
    page.mouse.up()
    page.wait_for_function("(y1) => window.__adLayer.graphView().y > y1 + 50", arg=v1["y"])
    v2 = page.evaluate("window.__adLayer.graphView()")
    assert v2["y"] > v1["y"] + 50
    shot(page, "minimap_all_layers")
    # M hides it, M shows it again.
    page.locator("[data-testid=graph]").focus()
    page.keyboard.press("m")
    page.wait_for_function("() => !window.__adLayer.minimapShown()")
    assert not page.is_visible("[data-testid=minimap]")
    page.keyboard.press("m")
    page.wait_for_function("() => window.__adLayer.minimapShown()")
    assert page.is_visible("[data-testid=minimap]")
    # "?" opens the keyboard help; Escape closes it; the button opens it too.
    page.keyboard.press("?")
    assert page.is_visible("[data-testid=help-overlay]")
    txt = page.text_content("[data-testid=help-overlay]")
    for s_ in ("Keyboard shortcuts", "Compare view", "Stage view", "minimap"):
        assert s_ in txt
    shot(page, "help_overlay")
    page.keyboard.press("Escape")
    assert not page.is_visible("[data-testid=help-overlay]")
    page.click("[data-testid=help-button]")
    assert page.is_visible("[data-testid=help-overlay]")
    page.click("[data-testid=help-close]")
    assert not page.is_visible("[data-testid=help-overlay]")
    # Number keys switch views.
    page.keyboard.press("4")
    page.wait_for_selector("[data-testid=overview-bar]")
    assert page.evaluate("window.__adLayer.view()") == "overview"


# ----------------------------------------------------------------------------------------- inside TensorBoard


def test_panel_in_tensorboard_tab(page, tb):
    """The AD Layers tab of TensorBoard's own UI loads the panel in its iframe, views included."""
    page.goto(f"{tb.base_url}/#ad_layer")
    frame = panel_frame(page)
    assert frame.query_selector("[data-testid=view-tabs]"), "panel not loaded in TensorBoard's tab"
    frame.click("[data-testid=view-overview]")
    frame.wait_for_selector("[data-testid=overview-bar]", timeout=20000)
    ready(frame)
    shot(page, "tensorboard_tab_overview")
