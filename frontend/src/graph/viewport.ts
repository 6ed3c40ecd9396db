// Pan/zoom math for the graph view (pure). Screen = world * k + (x, y).

export interface Viewport {
  x: number;
  y: number;
  k: number;
}

export const MIN_K = 0.02;
export const MAX_K = 4;

export function clampK(k: number): number {
  return Math.min(MAX_K, Math.max(MIN_K, k));
}

/** Zooms by `factor` keeping the screen point (cx, cy) fixed. */
export function zoomAt(v: Viewport, factor: number, cx: number, cy: number): Viewport {
  const k = clampK(v.k * factor);
  const f = k / v.k;
  return { k, x: cx - (cx - v.x) * f, y: cy - (cy - v.y) * f };
}

export function pan(v: Viewport, dx: number, dy: number): Viewport {
  return { k: v.k, x: v.x + dx, y: v.y + dy };
}

/** Fits a world rectangle into a view of w x h pixels with a margin; never zooms in past 1. */
export function fit(
  bounds: { x: number; y: number; w: number; h: number },
  w: number,
  h: number,
  margin = 24,
  maxK = 1,
): Viewport {
  const bw = Math.max(1, bounds.w);
  const bh = Math.max(1, bounds.h);
  const k = clampK(Math.min((w - 2 * margin) / bw, (h - 2 * margin) / bh, maxK));
  return { k, x: (w - bw * k) / 2 - bounds.x * k, y: (h - bh * k) / 2 - bounds.y * k };
}

/** Centres the world point (wx, wy) in a view of w x h, keeping the zoom (or using `k`). */
export function centreOn(v: Viewport, wx: number, wy: number, w: number, h: number, k = v.k): Viewport {
  return { k, x: w / 2 - wx * k, y: h / 2 - wy * k };
}

export function toWorld(v: Viewport, sx: number, sy: number): { x: number; y: number } {
  return { x: (sx - v.x) / v.k, y: (sy - v.y) / v.k };
}

/** Whether a world rectangle is fully inside the view (with a margin in pixels). */
export function isVisible(v: Viewport, r: { x: number; y: number; w: number; h: number }, w: number, h: number, margin = 0): boolean {
  const x0 = r.x * v.k + v.x;
  const y0 = r.y * v.k + v.y;
  return x0 >= margin && y0 >= margin && x0 + r.w * v.k <= w - margin && y0 + r.h * v.k <= h - margin;
}

/** A rectangle in world units. */
export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

/**
 * The view after a group was expanded or collapsed, such that the group stays on screen. `box` is
 * the group's box in the new layout (world units), `before` the screen point where its top-left
 * was (null when it was not drawn), the view is w x h pixels.
 *
 * At the current zoom (raised to `minK` when it is lower: an expanded group shows its nodes at a
 * size that can be read), the box keeps its top-left at `before`, moved the least that brings all
 * of it into the view. A box larger than the view is fitted, zooming out no further than
 * `min(zoom, minK)`; along an axis where it still does not fit, its top-left edge is shown.
 */
export function keepInView(v: Viewport, box: Box, before: { x: number; y: number } | null, w: number, h: number, minK = 0, margin = 16): Viewport {
  const availW = Math.max(1, w - 2 * margin);
  const availH = Math.max(1, h - 2 * margin);
  const k0 = clampK(Math.max(v.k, minK));
  const fitK = Math.min(availW / Math.max(1, box.w), availH / Math.max(1, box.h));
  const k = fitK < k0 ? clampK(Math.max(fitK, Math.min(k0, minK))) : k0;
  const place = (at: number | undefined, size: number, avail: number, extent: number): number => {
    if (size > avail || at === undefined || !Number.isFinite(at)) return margin;
    return Math.min(Math.max(at, margin), extent - margin - size);
  };
  const sx = place(before?.x, box.w * k, availW, w);
  const sy = place(before?.y, box.h * k, availH, h);
  return { k, x: sx - box.x * k, y: sy - box.y * k };
}

/**
 * The view moved as little as it takes for the graph (`width` x `height` at the origin) to cover at
 * least `margin` px of the view across and down (never an empty pane: a zoom, a pan or a relayout
 * that would leave the graph outside the view stops at its edge).
 */
export function keepGraphInView(v: Viewport, width: number, height: number, w: number, h: number, margin = 80): Viewport {
  const mx = Math.min(margin, w / 3, width * v.k);
  const my = Math.min(margin, h / 3, height * v.k);
  const x = Math.min(w - mx, Math.max(mx - width * v.k, v.x));
  const y = Math.min(h - my, Math.max(my - height * v.k, v.y));
  return x === v.x && y === v.y ? v : { x, y, k: v.k };
}

/**
 * A graph that fits across the view (`left`..`right` in world units, `margin` px kept each side)
 * is held wholly in view across: a zoom out or a pan never leaves part of it cut at a side while
 * the other side of the view is empty. A graph wider than the view is left as it is.
 */
export function keepWholeAcross(v: Viewport, left: number, right: number, w: number, margin = 16): Viewport {
  const gw = (right - left) * v.k;
  if (gw > w - 2 * margin) return v;
  const x = Math.min(w - margin - right * v.k, Math.max(margin - left * v.k, v.x));
  return x === v.x ? v : { x, y: v.y, k: v.k };
}

/**
 * Where a zoom by `f` without a pointer (the zoom buttons, the keys) is centred: the middle of the
 * view, moved left as far as it takes for the layer's left edge (`sx`, on screen), when it is in
 * view, to stay at `margin` px or more (zooming in pushes everything away from the centre).
 */
export function zoomCentre(sx: number | null, f: number, w: number, margin = 16): number {
  const cx = w / 2;
  if (sx === null || f <= 1 || sx < margin || sx > w) return cx;
  return Math.max(margin, Math.min(cx, (sx * f - margin) / (f - 1)));
}

/** The least zoom a forced left edge goes to for a kept box (group titles and cards still read). */
const FORCE_MIN_K = 0.3;
/** Least width of a kept box that stays in view when the layer's left edge is brought in. */
const KEEP_PX = 240;

/**
 * The view moved (and zoomed out, to `minK` at the least) for the layer's left edge (world x
 * `left`) to be in view, at `margin` px from the view's left, without losing `keep` (a box the
 * move is about, world units): its left part (KEEP_PX, or all of it, at most a third of the view)
 * stays in view, its top where it is on screen. The same view when the edge is in view already.
 * When no zoom of `minK` or more shows both: with `force`, the edge wins (zoomed out further, to
 * FORCE_MIN_K at the least, for the box to stay in view); without, the box does (the same view).
 */
export function showLeftEdge(v: Viewport, left: number, keep: Box | null, w: number, minK: number, force = true, margin = 16): Viewport {
  const sx = left * v.k + v.x;
  if (sx >= 0 && sx <= w - margin) return v;
  if (!keep) return { x: margin - left * v.k, y: v.y, k: v.k };
  const room = w - 2 * margin;
  const part = Math.min(KEEP_PX, room / 3);
  const span = (k: number) => (keep.x - left) * k + Math.min(keep.w * k, part);
  let k = v.k;
  if (span(k) > room) {
    const dx = Math.max(1e-6, keep.x - left);
    // The zoom at which the box's left part ends at the view's right margin.
    const kPart = (room - part) / dx;
    k = keep.w * kPart >= part ? kPart : room / Math.max(1e-6, dx + keep.w);
    const least = Math.min(v.k, minK);
    if (k < least || !(k > 0)) {
      if (!force) return v;
      // Down to where groups show as summary cards and titles (still readable), no further.
      k = Math.min(least, Math.max(FORCE_MIN_K, k > 0 ? k : 0));
    }
    k = Math.min(k, v.k);
  }
  const ky = keep.y * v.k + v.y;
  return { k, x: margin - left * k, y: ky - keep.y * k };
}
