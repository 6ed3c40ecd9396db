#!/usr/bin/env python3
"""Screenshots of the panel against the mock backend (headless Chromium via Playwright).

  python3 test/screenshots.py [--out DIR] [--prefix /p]     (run `npm run build` first)

Writes PNGs to frontend/test-artifacts/screenshots/ by default and fails (exit 1) on any console
error, page error or CSP violation.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading

from playwright.sync_api import sync_playwright

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mock_server import DEFAULT_FIXTURES, DEFAULT_STATIC, serve  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
HERE = os.path.dirname(os.path.abspath(__file__))


def wait_drawn(page, after_seq: int = 0, timeout=20000):
    page.wait_for_function(
        "(s) => window.__adLayer && window.__adLayer.timing() && window.__adLayer.timing().seq > s && !window.__adLayer.state().busy",
        arg=after_seq, timeout=timeout)
    page.wait_for_timeout(350)  # let animations settle
    return page.evaluate("window.__adLayer.timing()")


def seq(page) -> int:
    return page.evaluate("window.__adLayer.timing() ? window.__adLayer.timing().seq : 0")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "test-artifacts", "screenshots"))
    ap.add_argument("--prefix", default="/proxy/6006")
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    httpd = serve(DEFAULT_FIXTURES, DEFAULT_STATIC, 0, a.prefix)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}{a.prefix}/data/plugin_entry.html?name=ad_layer"
    problems: list[str] = []
    shots: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)

        def new_page(scheme="light", locale="en-US"):
            ctx = browser.new_context(viewport={"width": 1680, "height": 1000}, color_scheme=scheme, locale=locale,
                                      device_scale_factor=1)
            page = ctx.new_page()
            def on_console(m):
                url = (m.location or {}).get("url", "")
                if m.type in ("error", "warning") and not url.endswith("/favicon.ico"):
                    problems.append(f"console.{m.type}: {m.text} ({url})")
            page.on("console", on_console)
            page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"requestfailed: {r.url}"))
            page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
            return ctx, page

        def shot(page, name):
            path = os.path.join(out, f"{name}.png")
            page.screenshot(path=path)
            shots.append(path)

        ctx, page = new_page()
        page.goto(base + "#run=dsv3_decode&layer=1")
        t = wait_drawn(page)
        print(f"layer 1 drawn: {t}")
        shot(page, "01_layer_light")
        # zoom to readable size around the MLA attention node, select it
        s0 = seq(page)
        page.evaluate("window.__adLayer.selectNode('flashinfer_mla_with_cache_1')")
        page.wait_for_timeout(600)
        shot(page, "02_selected_mla_node")
        # colour by time with hotspots
        page.click("[data-testid=color-time]")
        page.wait_for_timeout(300)
        page.click("[data-testid=fit-button]")
        page.wait_for_timeout(500)
        shot(page, "03_color_by_time_fit")
        page.evaluate("window.__adLayer.selectNode('trtllm_moe_fused')")
        page.wait_for_timeout(600)
        shot(page, "04_time_moe_selected")
        # depth 3: sub-groups collapsed, fitted
        page.click("[data-testid=color-group]")
        s0 = seq(page)
        page.select_option("[data-testid=depth-select]", "3")
        wait_drawn(page, s0)
        page.click("[data-testid=fit-button]")
        page.wait_for_timeout(500)
        shot(page, "04b_depth3_subgroups_collapsed")
        page.evaluate("window.__adLayer.selectNode('L1/mla')")
        page.wait_for_timeout(600)
        shot(page, "04c_depth3_mla_group")
        # depth 2
        s0 = seq(page)
        page.select_option("[data-testid=depth-select]", "2")
        wait_drawn(page, s0)
        page.click("[data-testid=color-group]")
        page.evaluate("window.__adLayer.selectNode('g:L1/moe'.slice(2))")
        page.wait_for_timeout(500)
        shot(page, "05_depth2_groups")
        # search for the hostile kernel
        s0 = seq(page)
        page.fill("[data-testid=search-input]", "script")
        page.wait_for_timeout(900)
        shot(page, "06_search_hostile_kernel")
        ctx.close()

        ctx, page = new_page("dark")
        page.goto(base + "#run=dsv3_decode&layer=2&node=noaux_tc_op_1")
        wait_drawn(page)
        page.wait_for_timeout(400)
        shot(page, "07_dark_selected_router")
        s0 = seq(page)
        page.select_option("[data-testid=layer-select]", "all")
        wait_drawn(page, s0)
        shot(page, "08_dark_all_layers")
        page.click("[data-testid=timeline-scope-all]")
        page.wait_for_timeout(600)
        shot(page, "09_dark_all_layers_timeline_all")
        ctx.close()

        ctx, page = new_page("light", "zh-CN")
        page.goto(base + "#run=dsv3_no_trace&layer=0")
        wait_drawn(page)
        shot(page, "10_zh_no_trace")
        ctx.close()
        browser.close()
    httpd.shutdown()
    for s in shots:
        print(s)
    if problems:
        print("PROBLEMS:")
        for pr in problems:
            print("  " + pr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
