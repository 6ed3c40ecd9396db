"""Driving the panel in a browser test: open it, wait on its state, find its frame in TensorBoard.

Every wait is on the panel's own state, never on a timer: the root element's ``data-state`` is
"ready" once nothing is pending (fetches, layouts, view animations) and the browser has painted,
and ``window.__adLayer`` (the panel's test hook) counts draws per view.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "e2e"

READY = ("() => { const r = document.querySelector('[data-testid=ad-layer-root]');"
         " return !!r && r.dataset.state === 'ready' && !!window.__adLayer; }")
WAIT_DRAWN = ("(s) => { const L = window.__adLayer; const t = L && L.timing();"
              " return !!t && t.seq > s && !L.state().busy; }")


def ready(target: Any, timeout: float = 30000) -> None:
    """Waits until the panel (page or frame) is idle and painted."""
    target.wait_for_function(READY, timeout=timeout)


def drawn(target: Any, after: int = 0, timeout: float = 30000) -> dict[str, Any]:
    """Waits until the layer view has drawn a graph after draw number ``after`` and is idle."""
    target.wait_for_function(WAIT_DRAWN, arg=after, timeout=timeout)
    ready(target, timeout)
    return target.evaluate("window.__adLayer.timing()")


def seq(target: Any) -> int:
    return target.evaluate("window.__adLayer && window.__adLayer.timing()"
                           " ? window.__adLayer.timing().seq : 0")


def settle(target: Any) -> None:
    """Waits until nothing runs in the panel and the next frame is painted."""
    ready(target)


def wait_compare(page: Any, after: dict | None = None, timeout: float = 30000) -> dict:
    """Waits until both comparison panes have drawn after the given draw counts and all is idle."""
    after = after or {"a": 0, "b": 0}
    page.wait_for_function(
        """(p) => { const h = window.__adLayer; if (!h) return false; const c = h.compare();
               return !!c.sides && !c.loading && c.drawn.a > p.a && c.drawn.b > p.b; }""",
        arg=after, timeout=timeout)
    ready(page, timeout)
    return page.evaluate("window.__adLayer.compare()")


def wait_stage(page: Any, after: int = 0, timeout: float = 30000) -> dict:
    """Waits until the stage view has drawn after draw number ``after`` and all is idle."""
    page.wait_for_function(
        "(d) => { const h = window.__adLayer; if (!h) return false; const s = h.stages();"
        " return !s.loading && s.draws > d; }",
        arg=after, timeout=timeout)
    ready(page, timeout)
    return page.evaluate("window.__adLayer.stages()")


#: One side of a comparison: (run, stage, layer).
Side = tuple[str, int, int]


def compare_hash(a: Side, b: Side) -> str:
    """The URL hash that opens the comparison of side ``a`` with side ``b``."""
    return (f"#view=compare&arun={a[0]}&astage={a[1]}&alayer={a[2]}"
            f"&brun={b[0]}&bstage={b[1]}&blayer={b[2]}")


def open_panel(page: Any, tb: Any, **state: Any) -> dict[str, Any]:
    """Opens the panel on a view state and waits for the graph and every background fetch
    (timeline, overview), so that what the test does next is not raced by them."""
    page.goto(tb.panel(**state))
    return drawn(page)


def panel_frame(page: Any, timeout: float = 30000) -> Any:
    """The frame TensorBoard opened for the plugin, once the panel in it is ready."""
    handle = page.wait_for_selector("iframe[src*='plugin_entry.html']", state="attached", timeout=timeout)
    frame = handle.content_frame()
    assert frame is not None, "the plugin iframe has no document"
    frame.wait_for_selector("[data-testid=ad-layer-root]", state="attached", timeout=timeout)
    ready(frame, timeout)
    return frame


def shot(page: Any, name: str) -> Path:
    """An extra screenshot in the middle of a test."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


#: Panning the whole-stage graph (the overview's Graph mode): ``steps`` animation frames of the
#: page left alone (the browser's own frame rate on this machine), then ``steps`` pan steps of
#: (dx, dy), one per animation frame, by the pointer events a drag sends. Returns the frame
#: intervals of both, the frames shown, the drawing times of the frames that drew the graph
#: again (the others moved the drawn picture) and the camera before and after.
STAGE_PAN = """async ([steps, dx, dy]) => {
  const el = document.querySelector('[data-testid=stage-graph]');
  const g = () => window.__adLayer.overview().graph;
  const r = el.getBoundingClientRect();
  const x0 = r.left + r.width - 20, y0 = r.top + r.height / 2;
  const ev = (type, x, y) => el.dispatchEvent(new PointerEvent(type, {clientX: x, clientY: y,
      button: 0, buttons: 1, pointerId: 7, bubbles: true}));
  const frame = () => new Promise((res) => requestAnimationFrame(res));
  await frame();
  const idle = [];
  let t = performance.now();
  for (let i = 0; i < steps; i++) {
    await frame();
    const now = performance.now();
    idle.push(now - t);
    t = now;
  }
  const f0 = g().frames, d0 = g().draws, cam0 = g().camera;
  ev('pointerdown', x0, y0);
  const gaps = [];
  let prev = performance.now();
  for (let i = 1; i <= steps; i++) {
    ev('pointermove', x0 + dx * i, y0 + dy * i);
    await frame();
    const now = performance.now();
    gaps.push(now - prev);
    prev = now;
  }
  ev('pointerup', x0 + dx * steps, y0 + dy * steps);
  await frame();
  const s = g();
  const redraws = s.draws - d0;
  return {idle, gaps, frames: s.frames - f0, redraws: redraws ? s.drawTimes.slice(-redraws) : [],
          cam0, cam1: s.camera};
}"""
