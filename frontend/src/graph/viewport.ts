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
