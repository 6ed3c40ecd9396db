"""The whole-stage graph (the overview's Graph mode) in headless Chromium: time to first draw and
frame rate while panning, on the real-depth Qwen3-Next export (48 layers, 38,723 nodes) and on a
traced demo run, at 1280x800 and 1600x1000.

Builds a logdir under bench/out/stage_graph/ (the export converted with the real converter, the
demo's ``dsv3_decode_unfused`` run copied), starts TensorBoard on a free loopback port and, per
run and window size, in a fresh page:

* page load: a fresh TensorBoard (nothing read yet), the panel opened on the overview with Graph
  mode remembered: from the navigation's start to the graph's first frame (the panel's own
  requests, api/runs first, included);
* api: the cold ``api/stage_graph`` answer (first request after TensorBoard started, before the
  panel asked for anything) and a warm one;
* first draw: from the click on Graph to the graph's first frame, as the page measures it (the
  request included) and as this script sees it (until the page says it has drawn);
* pan: 60 frames of the page left alone (the browser's frame rate here), then 60 pan steps of a
  drag, one per animation frame: frames per second of both, how many of the pan's frames drew the
  graph again (the others move the drawn picture) and what drawing took;
* the same pan with the 44-layer fold open (Qwen3-Next) or every layer open into its groups.

    python bench/bench_stage_graph.py            # needs /usr/bin/chromium (or $CHROMIUM)

Figures are printed and written to bench/out/stage_graph/results.json.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tb_ad_layer.convert import convert  # noqa: E402
from tb_ad_layer.options import ConvertOptions  # noqa: E402
from tests.e2e.panel import STAGE_PAN  # noqa: E402
from tests.tensorboard_process import http_get, running_tensorboard  # noqa: E402

OUT = REPO / "bench" / "out" / "stage_graph"
QWEN = REPO / "tests" / "fixtures" / "deep_exports" / "qwen3_next_80b" / "001_export_export_to_gm.txt.gz"
DEMO = REPO / "demo_logs" / "dsv3_decode_unfused"
RUNS = ("qwen3_next", "dsv3_decode_unfused")
SIZES = ((1280, 800), (1600, 1000))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def build_logdir() -> Path:
    logdir = OUT / "logs"
    if logdir.exists():
        shutil.rmtree(logdir)
    dumps = OUT / "qwen3_next"
    dumps.mkdir(parents=True, exist_ok=True)
    (dumps / "001_export_export_to_gm.txt").write_bytes(gzip.decompress(QWEN.read_bytes()))
    convert(ConvertOptions(dumps, logdir, run="qwen3_next"))
    shutil.copytree(DEMO, logdir / DEMO.name)
    return logdir


def timed_get(port: int, path: str) -> float:
    t0 = time.perf_counter()
    status, body, _ = http_get(port, path)
    assert status == 200, (path, status, body[:200])
    return (time.perf_counter() - t0) * 1000


def pan_figures(res: dict[str, Any], steps: int) -> dict[str, float]:
    return {
        "idle_fps": round(1000 / statistics.median(res["idle"]), 1),
        "pan_fps": round(1000 / statistics.median(res["gaps"]), 1),
        "pan_fps_mean": round(1000 * len(res["gaps"]) / sum(res["gaps"]), 1),
        "frames": res["frames"],
        "redraws": len(res["redraws"]),
        "redraw_ms_max": round(max(res["redraws"], default=0.0), 2),
        "draw_ms_per_frame": round(sum(res["redraws"]) / steps, 3),
    }


def page_load(browser: Any, url: str, run: str) -> float:
    """Milliseconds from navigation start to the graph's first frame, Graph mode remembered."""
    ctx = browser.new_context(viewport={"width": 1600, "height": 1000}, device_scale_factor=1)
    ctx.add_init_script("localStorage.setItem('adLayer.overviewMode', 'graph')")
    page = ctx.new_page()
    try:
        page.goto(f"{url}#view=overview&run={run}")
        page.wait_for_function("() => { const g = window.__adLayer && window.__adLayer.overview().graph;"
                               " return !!g && g.drawn; }", timeout=60000)
        at: float = page.evaluate("window.__adLayer.overview().graph.firstDrawAt")
        return at
    finally:
        ctx.close()


def measure(browser: Any, url: str, run: str, size: tuple[int, int]) -> dict[str, Any]:
    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]}, device_scale_factor=1)
    page = ctx.new_page()
    try:
        page.goto(f"{url}#view=overview&run={run}")
        page.wait_for_selector("[data-testid=overview-mode-graph]")
        page.wait_for_function("() => { const r = document.querySelector('[data-testid=ad-layer-root]');"
                               " return !!r && r.dataset.state === 'ready'; }")
        t0 = time.perf_counter()
        page.click("[data-testid=overview-mode-graph]")
        page.wait_for_function("() => { const g = window.__adLayer.overview().graph;"
                               " return !!g && g.drawn; }")
        wall = (time.perf_counter() - t0) * 1000
        g = page.evaluate("window.__adLayer.overview().graph")
        out: dict[str, Any] = {"run": run, "size": f"{size[0]}x{size[1]}",
                               "first_draw_ms": round(g["firstDrawMs"], 1),
                               "click_to_drawn_ms": round(wall, 1), "boxes": len(g["items"]),
                               "long_edges": g["longEdges"], "edges_without_lane": g["unbundled"]}
        steps = 60
        out["pan"] = pan_figures(page.evaluate(STAGE_PAN, [steps, -3, -6]), steps)
        page.evaluate(STAGE_PAN, [steps, 3, 6])   # back
        # Everything in view opened: the folds into their layers, the layers into their groups.
        for _ in range(60):
            g = page.evaluate("window.__adLayer.overview().graph")
            closed = [it for it in g["items"] if it["kind"] in ("fold", "layer") and not it["expanded"]
                      and 0 <= it["y"] + 10 < size[1] - 60 and it["x"] >= 0]
            if not closed:
                break
            it = closed[0]
            page.mouse.click(it["x"] + it["w"] / 2, it["y"] + 10)
            page.wait_for_timeout(30)
        g = page.evaluate("window.__adLayer.overview().graph")
        out["open_boxes"] = len(g["items"])
        out["pan_open"] = pan_figures(page.evaluate(STAGE_PAN, [steps, 0, -12]), steps)
        return out
    finally:
        ctx.close()


def main() -> None:
    logdir = build_logdir()
    work = OUT / "tb"
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"api": {}, "browser": [], "page_load_ms": {}}
    from playwright.sync_api import sync_playwright

    for run in RUNS:   # each on a fresh TensorBoard: nothing read before the page asks
        with running_tensorboard(logdir, work) as tb, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                url = f"http://127.0.0.1:{tb.port}/data/plugin_entry.html?name=ad_layer"
                ms = page_load(browser, url, run)
            finally:
                browser.close()
        results["page_load_ms"][run] = round(ms, 1)
        print(f"{run}: page load to graph drawn {ms:.0f} ms (fresh TensorBoard, 1600x1000)")
    with running_tensorboard(logdir, work) as tb:
        base = "/data/plugin/ad_layer/api"
        for run in RUNS:
            cold = timed_get(tb.port, f"{base}/stage_graph?run={run}")
            warm = timed_get(tb.port, f"{base}/stage_graph?run={run}")
            results["api"][run] = {"cold_ms": round(cold, 1), "warm_ms": round(warm, 1)}
            print(f"api/stage_graph {run}: cold {cold:.0f} ms, warm {warm:.1f} ms")
        url = f"http://127.0.0.1:{tb.port}/data/plugin_entry.html?name=ad_layer"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                for run in RUNS:
                    for size in SIZES:
                        r = measure(browser, url, run, size)
                        results["browser"].append(r)
                        p, po = r["pan"], r["pan_open"]
                        print(f"{run} {r['size']}: first draw {r['first_draw_ms']} ms (click to drawn "
                              f"{r['click_to_drawn_ms']} ms), {r['boxes']} boxes, {r['long_edges']} long "
                              f"edges (without the lane: {r['edges_without_lane']})")
                        print(f"  pan: {p['pan_fps']} fps (median; mean {p['pan_fps_mean']}; page alone "
                              f"{p['idle_fps']}), {p['redraws']} redraws of {p['frames']} frames, max "
                              f"{p['redraw_ms_max']} ms, {p['draw_ms_per_frame']} ms drawing per frame")
                        print(f"  opened in view ({r['open_boxes']} boxes): {po['pan_fps']} fps (page alone "
                              f"{po['idle_fps']}), {po['redraws']} redraws, max {po['redraw_ms_max']} ms")
            finally:
                browser.close()
    (OUT / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
