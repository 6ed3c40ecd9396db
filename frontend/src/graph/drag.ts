// Mouse input shared by the canvases that pan and zoom (a layer's graph, the whole-stage graph):
// one rule for telling a drag from a click, and one for the wheel, so both feel the same.
import { capture } from "../ui/dom";

/** What a pannable, zoomable surface does with the pointer. */
export interface PanZoomInput {
  panBy(dx: number, dy: number): void;
  /** Zoom by factor `f` about the point (`x`, `y`) of the element. */
  zoomBy(f: number, x: number, y: number): void;
  /** A press released within 3 px of where it started. */
  click(ev: PointerEvent): void;
  /** The pointer moved with no press held. */
  hover(ev: PointerEvent): void;
}

/**
 * A press that moves 3 px or more pans (the pointer captured, `panning` on `el` meanwhile);
 * one that moves less is a click. The wheel zooms at the pointer (with Ctrl, the trackpad's
 * pinch, faster); a mostly sideways wheel pans.
 */
export function bindPanZoom(el: HTMLElement, input: PanZoomInput): void {
  let drag: { x: number; y: number; moved: boolean; id: number } | null = null;
  el.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    drag = { x: ev.clientX, y: ev.clientY, moved: false, id: ev.pointerId };
  });
  el.addEventListener("pointermove", (ev) => {
    if (!drag || ev.pointerId !== drag.id) {
      input.hover(ev);
      return;
    }
    const dx = ev.clientX - drag.x;
    const dy = ev.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) > 3) {
      drag.moved = true;
      capture(el, ev.pointerId);
      el.classList.add("panning");
    }
    if (drag.moved) {
      drag.x = ev.clientX;
      drag.y = ev.clientY;
      input.panBy(dx, dy);
    }
  });
  const end = (ev: PointerEvent) => {
    if (!drag || ev.pointerId !== drag.id) return;
    const moved = drag.moved;
    drag = null;
    el.classList.remove("panning");
    if (el.hasPointerCapture(ev.pointerId)) el.releasePointerCapture(ev.pointerId);
    if (!moved && ev.type === "pointerup") input.click(ev);
  };
  el.addEventListener("pointerup", end);
  el.addEventListener("pointercancel", end);
  el.addEventListener(
    "wheel",
    (ev) => {
      ev.preventDefault();
      if (!ev.ctrlKey && Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
        input.panBy(-ev.deltaX, 0);
        return;
      }
      const r = el.getBoundingClientRect();
      const unit = ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? 400 : 1;
      input.zoomBy(Math.exp((-ev.deltaY * unit) / (ev.ctrlKey ? 100 : 500)), ev.clientX - r.left, ev.clientY - r.top);
    },
    { passive: false },
  );
}
