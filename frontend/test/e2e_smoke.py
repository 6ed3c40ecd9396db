#!/usr/bin/env python3
"""Browser smoke test of the built panel against the mock backend (headless Chromium).

  python3 test/e2e_smoke.py        (run `npm run build` first)

Checks the behaviour the later TensorBoard end-to-end tests rely on: stable data-testid hooks,
URL-hash state, graph <-> timeline linking both ways, search, expand/collapse, theme persistence,
--path_prefix, TensorBoard's CSP (no violations), and that hostile kernel names stay text.
Exit status 0 when every check passes.
"""
from __future__ import annotations

import os
import sys
import threading

from playwright.sync_api import sync_playwright

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mock_server import DEFAULT_FIXTURES, DEFAULT_STATIC, serve  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
HOSTILE = "void k<float, &foo>(T* <script>alert(1)</script>)"


#: The id of a kernel drawn on the timeline that belongs to node `n` (-1 when none is).
KERNEL_OF = """(n) => { const L = window.__adLayer; for (let id = 0; id < 1000; id++) {
  const pt = L.kernelPoint(id); if (!pt) continue;
  const k = L.kernelAt(pt.x, pt.y); if (k && k.node === n) return id; } return -1; }"""


def drawn(page, after=0):
    page.wait_for_function(
        "(s) => { const t = window.__adLayer && window.__adLayer.timing();"
        " return t && t.seq > s && !window.__adLayer.state().busy; }",
        arg=after, timeout=20000)
    return page.evaluate("window.__adLayer.timing().seq")


def ready(page):
    page.wait_for_function(
        "() => document.querySelector('[data-testid=ad-layer-root]').dataset.state === 'ready'",
        timeout=20000)


def selected(page):
    return page.evaluate("window.__adLayer.state().selected")


def count(page, selector: str) -> int:
    return page.locator(selector).count()


def main() -> int:
    prefix = "/some/prefix"
    httpd = serve(DEFAULT_FIXTURES, DEFAULT_STATIC, 0, prefix)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}{prefix}/data/plugin_entry.html?name=ad_layer"
    problems: list[str] = []
    passed = 0

    def check(cond, what):
        nonlocal passed
        if cond:
            passed += 1
            print(f"ok   {what}")
        else:
            problems.append(what)
            print(f"FAIL {what}")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        ctx = browser.new_context(viewport={"width": 1500, "height": 950})
        page = ctx.new_page()
        page.on("console", lambda m: problems.append(f"console.{m.type}: {m.text}")
                if m.type == "error" and not (m.location or {}).get("url", "").endswith("favicon.ico")
                else None)
        page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        page.on("dialog", lambda d: (problems.append(f"dialog opened: {d.message}"), d.dismiss()))
        page.goto(base + "#run=dsv3_decode&layer=1&depth=9")
        s = drawn(page)
        for tid in ("run-select", "stage-select", "layer-select", "depth-select", "search-input",
                    "theme-toggle", "timeline-canvas", "color-group", "color-time", "hotspots-select",
                    "graph-fit"):
            check(count(page, f"[data-testid={tid}]") == 1, f"data-testid={tid} present")
        check(count(page, "[data-testid=graph-node]") == 300, "300 graph nodes with data-node-id")
        check(count(page, "[data-node-id=noaux_tc_op]") == 1, "node addressable by data-node-id")
        check(count(page, "[data-group-id='L1/moe/moe_router']") == 1,
              "group box addressable by data-group-id")
        check(count(page, "[data-testid=input-node][data-node-id=position_ids], "
                          "[data-testid=input-node][data-input-ids~=position_ids]") == 1,
              "external input drawn as an input node (alone or folded with inputs of its kind)")
        check(page.input_value("[data-testid=stage-select]") == "3", "final stage chosen by default")

        # node -> kernels (hover), kernel -> node (click on the canvas)
        page.evaluate("window.__adLayer.selectNode('noaux_tc_op')")  # centres it
        ready(page)
        page.keyboard.press("Escape")  # deselect
        check(page.evaluate("window.__adLayer.kernelsHighlighted()") == [],
              "nothing highlighted without selection")
        page.hover("[data-node-id=noaux_tc_op] text.l.title")
        hl = page.evaluate("window.__adLayer.kernelsHighlighted()")
        check(len(hl) == 1, f"hovering a node highlights its kernels ({hl})")
        page.mouse.move(5, 5)
        tl = page.evaluate("window.__adLayer.timelineLanes()")
        check(len(tl) == 3 and all(0 < lane["busyShare"] <= 1 for lane in tl),
              "3 stream lanes with busy shares")
        kid = page.evaluate(KERNEL_OF, "flashinfer_mla_with_cache_1")
        pt = page.evaluate(f"window.__adLayer.kernelPoint({kid})")
        box = page.locator("[data-testid=timeline-canvas]").bounding_box()
        s = page.evaluate("window.__adLayer.timing().seq")
        page.mouse.click(box["x"] + pt["x"], box["y"] + pt["y"])
        ready(page)
        check(selected(page) == "flashinfer_mla_with_cache_1", "clicking a kernel selects its node")
        check("node=flashinfer_mla_with_cache_1" in page.evaluate("location.hash"),
              "selection is in the URL hash")
        check(len(page.evaluate("window.__adLayer.kernelsHighlighted()")) == 3,
              "selected node's 3 kernels highlighted")

        # collapse a group, then select a kernel hidden in it: the group re-expands and centres
        page.evaluate("window.__adLayer.selectNode('L1/moe/moe_router')")  # brings its header into view
        ready(page)
        s = page.evaluate("window.__adLayer.timing().seq")
        page.dblclick("[data-group-id='L1/moe/moe_router'] .chead")
        s = drawn(page, s)
        check(count(page, "[data-group-id='L1/moe/moe_router'][data-collapsed=true]") == 1,
              "double-click collapses a group")
        check(count(page, "[data-node-id=noaux_tc_op]") == 0, "collapsed group hides its nodes")
        kid = page.evaluate(KERNEL_OF, "noaux_tc_op")
        ok = page.evaluate(f"window.__adLayer.selectKernel({kid})")
        drawn(page, s)
        check(ok and count(page, "[data-node-id=noaux_tc_op]") == 1,
              "selectKernel(id) expands the hiding group")
        check(selected(page) == "noaux_tc_op", "…and selects the node")

        # details panel: full demangled names as text, share of layer time
        page.evaluate("window.__adLayer.selectNode('cat_3')")
        ready(page)
        names = page.locator("[data-testid=kernel-full-name]").all_text_contents()
        check(HOSTILE in names, "hostile kernel name shown verbatim as text")
        check(page.evaluate("document.querySelectorAll('script').length") == 0, "no script element injected")
        check("%" in str(page.text_content("[data-testid=details-share]"))
              or count(page, "[data-testid=details-share]") == 1, "share of layer time shown")

        # search with next / previous
        page.fill("[data-testid=search-input]", "getitem")
        ready(page)
        check(page.text_content("[data-testid=search-count]").startswith("– /"),
              "typing highlights without jumping")
        page.press("[data-testid=search-input]", "Enter")
        ready(page)
        page.press("[data-testid=search-input]", "Enter")
        ready(page)
        c = page.text_content("[data-testid=search-count]")
        check(c.startswith("2 /"), f"Enter goes to the first hit, then the next ({c})")
        page.press("[data-testid=search-input]", "Shift+Enter")
        ready(page)
        check(page.text_content("[data-testid=search-count]").startswith("1 /"), "Shift+Enter goes back")
        check(selected(page).startswith("getitem"), "search selects the hit")

        # keyboard zoom
        page.fill("[data-testid=search-input]", "")
        page.click("[data-testid=graph]", position={"x": 20, "y": 20})
        k0 = page.evaluate("window.__adLayer.graphView().k")
        page.keyboard.press("w")
        k1 = page.evaluate("window.__adLayer.graphView().k")
        check(k1 > k0, "W zooms in")

        # depth control and hash reload
        s = page.evaluate("window.__adLayer.timing().seq")
        page.select_option("[data-testid=depth-select]", "2")
        drawn(page, s)
        check(count(page, "[data-testid=graph-node]") == 0
              and count(page, "[data-testid=group-box][data-collapsed=true]") >= 5,
              "depth 2 collapses groups")
        page.evaluate("window.__adLayer.selectNode('noaux_tc_op')")
        ready(page)
        url = page.url
        page2 = ctx.new_page()
        page2.bring_to_front()
        check(url.startswith(base) and "node=noaux_tc_op" in url,
              f"the page URL keeps its path and carries the state ({url[len(base) - 40:]})")
        page2.goto(url)
        drawn(page2)
        check(selected(page2) == "noaux_tc_op" and count(page2, "[data-node-id=noaux_tc_op].sel") == 1,
              "reloading the URL restores the selected node")
        page2.close()
        page.bring_to_front()

        # theme toggle remembered
        th = page.evaluate("window.__adLayer.state().theme")
        page.click("[data-testid=theme-toggle]")
        page.reload()
        drawn(page)
        check(page.evaluate("window.__adLayer.state().theme") != th, "theme choice survives a reload")

        # unknown layer in the hash: falls back, no crash
        page.goto(base + "#run=dsv3_decode&layer=77")
        drawn(page)
        check(page.input_value("[data-testid=layer-select]") == "0",
              "unknown layer in the hash falls back to the first")
        # server-side LOD: streams come back as buckets until zoomed in
        lod = serve(DEFAULT_FIXTURES, DEFAULT_STATIC, 0, "", max_items_cap=60)
        threading.Thread(target=lod.serve_forever, daemon=True).start()
        page.goto(f"http://127.0.0.1:{lod.server_address[1]}/data/plugin_entry.html?name=ad_layer"
                  "#run=dsv3_decode&layer=1&tl=all")
        drawn(page)
        page.wait_for_function("() => window.__adLayer.timelineLanes().length > 0")
        lanes = page.evaluate("window.__adLayer.timelineLanes()")
        check(any(lane["kernels"] == -1 for lane in lanes),
              "over max_items, a stream is drawn from merged buckets")

        v = page.evaluate("window.__adLayer.timelineView()")
        page.evaluate(f"window.__adLayer.setTimelineView({v[0] + 300}, {v[0] + 330})")
        page.wait_for_function("() => window.__adLayer.timelineLanes().every((l) => l.kernels >= 0)",
                               timeout=5000)
        check(True, "zooming in fetches the window's kernels")
        v2 = page.evaluate("window.__adLayer.timelineView()")
        check(abs(v2[0] - (v[0] + 300)) < 1 and abs(v2[1] - (v[0] + 330)) < 1, "the zoomed view is kept")
        page.evaluate(f"window.__adLayer.setTimelineView({v[0]}, {v[1]})")
        page.wait_for_function("() => window.__adLayer.timelineLanes().some((l) => l.kernels === -1)",
                               timeout=5000)

        check(True, "zooming out returns to merged buckets")
        lod.shutdown()
        browser.close()
    httpd.shutdown()
    print(f"\n{passed} checks passed, {len(problems)} problems")
    for pr in problems:
        print("  " + pr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
