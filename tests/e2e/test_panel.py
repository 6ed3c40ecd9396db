"""The panel in headless Chromium against a real ``tensorboard`` serving a converted logdir.

Every check compares what the browser shows with what the plugin's API says, through the panel's
``window.__adLayer`` test hook and its ``data-testid`` / ``data-node-id`` / ``data-group-id``
attributes. See conftest.py for the logdir, the processes and the per-test screenshots.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import pytest

from tests.e2e.conftest import DEEP_RUN, HOSTILE, HOSTILE_RUN, LARGE_RUN, NOTRACE_RUN, PREFIX, TensorBoard
from tests.e2e.panel import drawn, open_panel, panel_frame, seq, settle, shot
from tests.tensorboard_process import http_get

RUNS = {"dsv3_decode", "dsv3_prefill", "dsv3_decode_unfused", "dsv3_tp4", "llama_decode",
        "llama_torch_compile",
        "qwen3_export_model", HOSTILE_RUN, NOTRACE_RUN, LARGE_RUN, DEEP_RUN}


def layer_doc(tb: TensorBoard, run: str, layer: int) -> dict[str, Any]:
    return tb.api("layer", run=run, layer=layer)


def node_with_kernels(doc: dict[str, Any], at_least: int = 2, not_in: tuple[str, ...] = ()) -> dict[str, Any]:
    for n in doc["nodes"]:
        if len(n["kernels"]) >= at_least and n["id"] not in not_in:
            return n
    raise AssertionError(f"no node with {at_least}+ kernels in layer {doc['layer']}")


def drawn_ids(target: Any, testid: str = "graph-node") -> set[str]:
    return set(target.evaluate(
        "(t) => [...document.querySelectorAll(`[data-testid=${t}]`)]"
        ".map((e) => e.getAttribute('data-node-id'))",
        testid))


def centre(page: Any, node_or_group: str) -> None:
    """Brings a node or group into view (selecting it), then clears the selection."""
    assert page.evaluate("(id) => window.__adLayer.selectNode(id)", node_or_group), node_or_group
    settle(page)
    page.keyboard.press("Escape")
    page.wait_for_function("() => window.__adLayer.state().selected === null")


# ----------------------------------------------------------------------------- TensorBoard UI

def check_tab_in_tensorboard(page: Any, tb: TensorBoard) -> Any:
    status, body, _ = tb.get("/data/plugins_listing")
    import json

    listing = json.loads(body)
    assert status == 200 and listing["ad_layer"]["tab_name"] == "AD Layers"
    assert listing["ad_layer"]["enabled"] is True
    page.goto(tb.url("/"))
    tab = page.get_by_text("AD Layers", exact=True)
    tab.first.wait_for(state="visible", timeout=30000)
    tab.first.click()
    page.wait_for_url("**#ad_layer*")
    frame = panel_frame(page)
    drawn(frame)
    runs = set(frame.evaluate(
        "() => [...document.querySelectorAll('[data-testid=run-select] option')].map((o) => o.value)"))
    assert runs == RUNS
    assert frame.locator("[data-testid=graph-node]").count() > 0
    return frame


def test_tab_appears_in_tensorboard_and_panel_draws(page: Any, tb: TensorBoard) -> None:
    frame = check_tab_in_tensorboard(page, tb)
    # The panel inside TensorBoard's iframe shows the run it opened with, layer by layer.
    run = frame.input_value("[data-testid=run-select]")
    layer = frame.evaluate("window.__adLayer.state().layer")
    doc = layer_doc(tb, run, int(layer))
    s = seq(frame)
    frame.evaluate("window.__adLayer.setDepth('all')")
    drawn(frame, s)
    assert frame.locator("[data-testid=graph-node]").count() == len(doc["nodes"])


# ----------------------------------------------------------------------------- graph

@pytest.mark.parametrize("run,layer", [("dsv3_decode", 3), ("dsv3_decode_unfused", 4), ("llama_decode", 1)])
def test_layer_renders_every_node(page: Any, tb: TensorBoard, run: str, layer: int) -> None:
    doc = layer_doc(tb, run, layer)
    t = open_panel(page, tb, run=run, layer=layer)
    s = seq(page)
    page.select_option("[data-testid=depth-select]", "all")
    t = drawn(page, s)
    settle(page)
    assert page.input_value("[data-testid=run-select]") == run
    assert page.input_value("[data-testid=layer-select]") == str(layer)
    assert t["nodes"] == len(doc["nodes"])
    assert drawn_ids(page) == {n["id"] for n in doc["nodes"]}
    assert page.locator("[data-testid=graph-node]").count() == len(doc["nodes"])
    # External inputs: one input node each, or one per kind with its members listed.
    inputs = page.evaluate("""() => [...document.querySelectorAll('[data-testid=input-node]')].map((e) =>
        (e.getAttribute('data-input-ids') || e.getAttribute('data-node-id')).split(' '))""")
    assert sorted(i for ids in inputs for i in ids) == sorted(x["id"] for x in doc["external_inputs"])
    # Every drawn box lies inside the scene and no two nodes of the layer overlap.
    boxes = page.evaluate("""() => [...document.querySelectorAll('[data-testid=graph-node] rect.box')]
      .map((r) => { const b = r.getBBox(), m = r.getCTM();
        return [b.x * m.a + m.e, b.y * m.d + m.f, b.width * m.a, b.height * m.d]; })""")
    assert len(boxes) == len(doc["nodes"])
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            overlap = (a[0] < b[0] + b[2] - 0.5 and b[0] < a[0] + a[2] - 0.5
                       and a[1] < b[1] + b[3] - 0.5 and b[1] < a[1] + a[3] - 0.5)
            assert not overlap, f"boxes overlap: {a} {b}"


def test_group_collapses_and_expands(page: Any, tb: TensorBoard) -> None:
    doc = layer_doc(tb, "dsv3_decode", 3)
    members = {n["id"] for n in doc["nodes"] if n["group"] == "moe" and n["sub_group"] == "moe_router"}
    assert len(members) >= 3
    open_panel(page, tb, run="dsv3_decode", layer=3, depth=4)
    gid = "L3/moe/moe_router"
    group = page.locator(f"[data-group-id='{gid}']")
    assert group.get_attribute("data-collapsed") == "false"
    centre(page, gid)
    s = seq(page)
    page.dblclick(f"[data-group-id='{gid}'] .chead")
    drawn(page, s)
    settle(page)
    assert group.get_attribute("data-collapsed") == "true"
    assert not (drawn_ids(page) & members), "collapsed group still shows its nodes"
    assert page.locator("[data-testid=graph-node]").count() == len(doc["nodes"]) - len(members)
    assert gid not in page.evaluate("window.__adLayer.state().expanded")
    shot(page, "test_group_collapses_and_expands_collapsed")
    s = seq(page)
    page.dblclick(f"[data-group-id='{gid}'][data-collapsed=true]")
    drawn(page, s)
    settle(page)
    assert group.get_attribute("data-collapsed") == "false"
    assert members <= drawn_ids(page)
    assert page.locator("[data-testid=graph-node]").count() == len(doc["nodes"])


# ----------------------------------------------------------------------------- graph <-> timeline

def test_node_click_highlights_kernels_and_kernel_click_selects_node(page: Any, tb: TensorBoard) -> None:
    run, layer = "dsv3_decode", 3
    doc = layer_doc(tb, run, layer)
    tl = tb.api("timeline", run=run, layer=layer)
    by_node: dict[str, set[int]] = {}
    for s in tl["streams"]:
        for k in s["kernels"]:
            if k["node"]:
                by_node.setdefault(k["node"], set()).add(k["id"])
    node = node_with_kernels(doc, 2)
    assert len(by_node[node["id"]]) == len(node["kernels"])
    open_panel(page, tb, run=run, layer=layer)
    centre(page, node["id"])
    assert page.evaluate("window.__adLayer.kernelsHighlighted()") == []

    # node -> kernels
    page.click(f"[data-testid=graph-node][data-node-id='{node['id']}']")
    page.wait_for_function("(id) => window.__adLayer.state().selected === id", arg=node["id"])
    assert set(page.evaluate("window.__adLayer.kernelsHighlighted()")) == by_node[node["id"]]
    assert f"node={node['id']}" in page.evaluate("location.hash")
    assert page.locator(f"[data-node-id='{node['id']}'].sel").count() == 1
    shot(page, "test_node_click_highlights_kernels_node_selected")

    # kernel -> node: click a kernel of another node on the timeline canvas
    def on_timeline(k: int) -> bool:
        return bool(page.evaluate("(k) => window.__adLayer.kernelPoint(k)", k))

    other = next(n for n in doc["nodes"] if n["id"] != node["id"] and by_node.get(n["id"])
                 and any(on_timeline(k) for k in by_node[n["id"]]))
    kid = next(k for k in sorted(by_node[other["id"]]) if on_timeline(k))
    pt = page.evaluate("(k) => window.__adLayer.kernelPoint(k)", kid)
    hit = page.evaluate("([x, y]) => window.__adLayer.kernelAt(x, y)", [pt["x"], pt["y"]])
    assert hit and hit["node"] == other["id"], hit
    box = page.locator("[data-testid=timeline-canvas]").bounding_box()
    page.mouse.click(box["x"] + pt["x"], box["y"] + pt["y"])
    page.wait_for_function("(id) => window.__adLayer.state().selected === id", arg=other["id"])
    settle(page)
    assert page.locator(f"[data-node-id='{other['id']}'].sel").count() == 1
    assert set(page.evaluate("window.__adLayer.kernelsHighlighted()")) == by_node[other["id"]]
    assert f"node={other['id']}" in page.evaluate("location.hash")


# ----------------------------------------------------------------------------- search

def test_search_expands_to_a_node_in_a_collapsed_group(page: Any, tb: TensorBoard) -> None:
    doc = layer_doc(tb, "dsv3_decode", 3)
    target = next(n for n in doc["nodes"]
                  if n["op"].startswith("trtllm.noaux_tc_op") or "noaux_tc_op" in n["id"])
    gid = f"L3/{target['group']}/{target['sub_group']}"
    open_panel(page, tb, run="dsv3_decode", layer=3)
    s = seq(page)
    page.select_option("[data-testid=depth-select]", "1")  # only the layer box: every group collapsed
    drawn(page, s)
    settle(page)
    assert page.locator(f"[data-node-id='{target['id']}']").count() == 0
    assert page.locator("[data-testid=graph-node]").count() == 0
    page.fill("[data-testid=search-input]", target["id"])
    page.press("[data-testid=search-input]", "Enter")
    page.wait_for_function("(id) => window.__adLayer.state().selected === id", arg=target["id"],
                           timeout=15000)
    settle(page)
    assert page.locator(f"[data-node-id='{target['id']}']").count() == 1
    assert page.locator(f"[data-node-id='{target['id']}'].sel").count() == 1
    assert page.locator(f"[data-group-id='{gid}']").get_attribute("data-collapsed") == "false"
    assert page.text_content("[data-testid=search-count]").strip().startswith("1 /")
    assert target["id"] in page.evaluate("window.__adLayer.searchHits()")
    # The node is on screen: its box intersects the graph pane.
    pane = page.locator("[data-testid=graph]").bounding_box()
    b = page.locator(f"[data-node-id='{target['id']}'] rect.box").bounding_box()
    assert b and pane["x"] <= b["x"] + b["width"] / 2 <= pane["x"] + pane["width"]
    assert pane["y"] <= b["y"] + b["height"] / 2 <= pane["y"] + pane["height"]


# ----------------------------------------------------------------------------- hostile names

def test_hostile_kernel_name_is_shown_as_text(page: Any, tb: TensorBoard, hostile_node: str) -> None:
    doc = layer_doc(tb, HOSTILE_RUN, 0)
    node = next(n for n in doc["nodes"] if n["id"] == hostile_node)
    assert node["kernels"][0]["name"] == HOSTILE  # the store really holds it
    page.goto(tb.panel(run=HOSTILE_RUN, layer=0))
    drawn(page)
    scripts_before = page.evaluate("document.querySelectorAll('script').length")
    page.evaluate("(id) => window.__adLayer.selectNode(id)", hostile_node)
    settle(page)
    full = page.locator("[data-testid=kernel-full-name]")
    full.first.wait_for(state="attached")
    texts = full.all_text_contents()
    assert HOSTILE in texts, texts
    shown = full.filter(has_text=HOSTILE).first
    assert shown.is_visible()
    # Shown as text, nothing injected: no new script element, no element from the name's markup.
    assert page.evaluate("document.querySelectorAll('script').length") == scripts_before
    assert page.evaluate("[...document.querySelectorAll('script')]"
                         ".some((s) => s.textContent.includes('alert'))") is False
    assert page.evaluate(
        "document.querySelectorAll('[data-testid=ad-layer-root] script, svg script').length") == 0
    # The node's label in the graph (SVG text) carries the short name as text too.
    assert page.evaluate("""(n) => [...document.querySelectorAll(
          `[data-node-id='${n}'] text, [data-node-id='${n}'] tspan`)]
        .some((t) => t.textContent.includes('k<float, &foo'))""", hostile_node)
    # And the timeline knows the kernel under that name.
    tl = tb.api("timeline", run=HOSTILE_RUN, layer=0)
    kid = next(k["id"] for s in tl["streams"] for k in s["kernels"] if k["name"] == HOSTILE)
    assert kid in page.evaluate("window.__adLayer.kernelsHighlighted()")
    page.mouse.move(5, 5)
    shown.scroll_into_view_if_needed()


# ----------------------------------------------------------------------------- URL state

def test_url_hash_restores_the_view_after_reload(page: Any, tb: TensorBoard) -> None:
    run, layer = "dsv3_prefill", 5
    doc = layer_doc(tb, run, layer)
    node = node_with_kernels(doc, 1)
    open_panel(page, tb, run=run, layer=layer)
    page.click("[data-testid=color-time]")
    centre(page, node["id"])
    page.click(f"[data-testid=graph-node][data-node-id='{node['id']}']")
    page.wait_for_function("(id) => window.__adLayer.state().selected === id", arg=node["id"])
    s = seq(page)
    page.select_option("[data-testid=depth-select]", "2")
    drawn(page, s)
    settle(page)
    url = page.url
    frag = urlparse(url).fragment
    assert all(part in frag for part in (f"run={run}", f"layer={layer}", "color=time", "depth=2")), frag
    page.reload()
    drawn(page)
    settle(page)
    st = page.evaluate("window.__adLayer.state()")
    assert (st["run"], st["layer"], st["colorMode"], st["depth"]) == (run, layer, "time", 2), st
    assert page.input_value("[data-testid=run-select]") == run
    assert page.input_value("[data-testid=layer-select]") == str(layer)
    assert page.input_value("[data-testid=depth-select]") == "2"
    # At depth 2 the node is inside a collapsed group: the selection is that group.
    sel = st["selected"]
    assert sel and (sel == node["id"] or sel == f"L{layer}/{node['group']}"), sel
    sel_el = page.locator(f"[data-node-id='{sel}'].sel, [data-group-id='{sel}'].sel")
    assert sel_el.count() == 1
    # A second browser page opened on the same URL shows the same view.
    other = page.context.new_page()
    other.goto(url)
    drawn(other)
    assert other.evaluate("window.__adLayer.state().selected") == sel
    assert other.evaluate("window.__adLayer.state().colorMode") == "time"
    other.close()


def test_phase_chooser_filters_runs_and_is_kept_in_the_hash(page: Any, tb: TensorBoard) -> None:
    open_panel(page, tb, run="dsv3_decode", layer=3)
    all_runs = page.eval_on_selector_all("[data-testid=run-select] option", "os => os.map(o => o.value)")
    assert {"dsv3_decode", "dsv3_prefill", "llama_decode"} <= set(all_runs)
    s = seq(page)
    page.select_option("[data-testid=phase-select]", "prefill")
    drawn(page, s)
    settle(page)
    runs = page.eval_on_selector_all("[data-testid=run-select] option", "os => os.map(o => o.value)")
    assert runs == ["dsv3_prefill"], runs
    assert page.evaluate("window.__adLayer.state().run") == "dsv3_prefill"
    assert "phase=prefill" in urlparse(page.url).fragment
    page.reload()
    drawn(page)
    assert page.input_value("[data-testid=phase-select]") == "prefill"
    assert page.eval_on_selector_all("[data-testid=run-select] option",
                                     "os => os.map(o => o.value)") == ["dsv3_prefill"]
    page.select_option("[data-testid=phase-select]", "decode")
    settle(page)
    runs = page.eval_on_selector_all("[data-testid=run-select] option", "os => os.map(o => o.value)")
    assert "dsv3_prefill" not in runs and "dsv3_decode" in runs and "llama_decode" in runs, runs
    shot(page, "test_phase_chooser")


def test_unknown_run_and_layer_in_hash_fall_back(page: Any, tb: TensorBoard) -> None:
    page.goto(tb.panel(run="no_such_run", layer=77))
    drawn(page)
    run = page.input_value("[data-testid=run-select]")
    assert run in RUNS
    layers = {str(x["layer"]) for r in tb.api("runs")["runs"] if r["run"] == run for x in r["layers"]}
    assert page.input_value("[data-testid=layer-select]") in layers | {"all"}
    assert page.locator("[data-testid=graph-node]").count() > 0


# ----------------------------------------------------------------------------- --path_prefix

def test_everything_works_under_path_prefix(page: Any, tb_prefixed: TensorBoard) -> None:
    tb = tb_prefixed
    requests: list[str] = []  # what the panel fetched (its frame inside TensorBoard, or its own page)
    page.on("request", lambda r: requests.append(r.url)
            if "plugin_entry.html" in r.frame.url or "/ad_layer" in r.url else None)

    status, _, _ = tb.get("/data/plugin/ad_layer/api/runs")
    assert status == 200
    # Unprefixed routes do not exist: the panel can only work through relative URLs.
    assert http_get(tb.port, "/data/plugin/ad_layer/api/runs")[0] == 404
    frame = check_tab_in_tensorboard(page, tb)
    assert frame.url.startswith(tb.url("/data/plugin_entry.html"))
    shot(page, "test_everything_works_under_path_prefix_tensorboard")

    # The panel page itself: layer, collapse, node <-> kernels, search.
    run, layer = "dsv3_decode", 4
    doc = layer_doc(tb, run, layer)
    page.goto(tb.panel(run=run, layer=layer, depth=4))
    drawn(page)
    assert page.locator("[data-testid=graph-node]").count() == len(doc["nodes"])
    node = node_with_kernels(doc, 2)
    centre(page, node["id"])
    page.click(f"[data-testid=graph-node][data-node-id='{node['id']}']")
    page.wait_for_function("(id) => window.__adLayer.state().selected === id", arg=node["id"])
    assert len(page.evaluate("window.__adLayer.kernelsHighlighted()")) == len(node["kernels"])
    page.keyboard.press("Escape")
    page.fill("[data-testid=search-input]", node["id"])
    page.press("[data-testid=search-input]", "Enter")
    page.wait_for_function("(id) => window.__adLayer.state().selected === id", arg=node["id"])
    settle(page)
    page.reload()
    drawn(page)
    assert page.evaluate("window.__adLayer.state().selected") == node["id"]
    # Every request stayed under the prefix (API, static assets, the layout worker).
    paths = [urlparse(u).path for u in requests if u.startswith("http")]
    assert any(p == f"{PREFIX}/data/plugin/ad_layer/static/layout_worker.js" for p in paths), paths
    assert any(p.startswith(f"{PREFIX}/data/plugin/ad_layer/api/layer") for p in paths)
    outside = [p for p in paths if not p.startswith(PREFIX + "/")]
    assert not outside, outside
