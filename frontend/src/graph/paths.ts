// SVG path strings for edges (pure).

/** Polyline (flattened x,y pairs) with rounded corners of radius up to r. */
export function roundedPath(pts: number[], r = 8): string {
  const n = pts.length / 2;
  if (n < 2) return "";
  const f = (v: number) => (Math.round(v * 10) / 10).toString();
  let d = `M${f(pts[0])},${f(pts[1])}`;
  for (let i = 1; i < n - 1; i++) {
    const x0 = pts[2 * i - 2];
    const y0 = pts[2 * i - 1];
    const x1 = pts[2 * i];
    const y1 = pts[2 * i + 1];
    const x2 = pts[2 * i + 2];
    const y2 = pts[2 * i + 3];
    const l1 = Math.hypot(x1 - x0, y1 - y0);
    const l2 = Math.hypot(x2 - x1, y2 - y1);
    const rr = Math.min(r, l1 / 2, l2 / 2);
    if (rr < 0.5 || l1 === 0 || l2 === 0) {
      d += `L${f(x1)},${f(y1)}`;
      continue;
    }
    const ax = x1 - ((x1 - x0) / l1) * rr;
    const ay = y1 - ((y1 - y0) / l1) * rr;
    const bx = x1 + ((x2 - x1) / l2) * rr;
    const by = y1 + ((y2 - y1) / l2) * rr;
    d += `L${f(ax)},${f(ay)}Q${f(x1)},${f(y1)} ${f(bx)},${f(by)}`;
  }
  d += `L${f(pts[2 * n - 2])},${f(pts[2 * n - 1])}`;
  return d;
}
