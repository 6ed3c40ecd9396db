// Export of what a view draws as a self-contained SVG (every style inlined, no references outside
// the file) and as a PNG rendered from that SVG through a canvas. Names stay text nodes: the
// serializer escapes <, > and & in them.
import { SVG_NS } from "../ui/dom";

/** Presentation properties copied from the computed style into each element's style attribute. */
export const EXPORT_STYLE_PROPS = [
  "display", "visibility", "opacity",
  "fill", "fill-opacity", "stroke", "stroke-width", "stroke-opacity", "stroke-dasharray", "stroke-linejoin", "stroke-linecap",
  "paint-order", "font-family", "font-size", "font-weight", "font-style", "text-anchor", "dominant-baseline",
] as const;

/** Values not worth writing (the SVG defaults), to keep files small. */
const DEFAULTS: Record<string, string[]> = {
  display: ["inline"],
  visibility: ["visible"],
  opacity: ["1"],
  "fill-opacity": ["1"],
  "stroke-opacity": ["1"],
  "stroke-dasharray": ["none"],
  "stroke-linejoin": ["miter"],
  "stroke-linecap": ["butt"],
  "paint-order": ["normal"],
  "font-style": ["normal"],
  "text-anchor": ["start"],
  "dominant-baseline": ["auto"],
};

/** The style attribute for one element from a computed-style lookup (pure). */
export function inlineStyle(get: (prop: string) => string, tag: string): string {
  const out: string[] = [];
  const isText = tag === "text" || tag === "tspan";
  // Groups only need what does not inherit (their children carry their own computed styles).
  const isGroup = tag === "g";
  for (const p of EXPORT_STYLE_PROPS) {
    // Hidden subtrees are dropped before this; what is left is displayed.
    if (p === "display") continue;
    if (isGroup && p !== "opacity") continue;
    if (!isText && (p.startsWith("font-") || p === "text-anchor" || p === "dominant-baseline")) continue;
    const v = (get(p) || "").trim();
    if (!v || DEFAULTS[p]?.includes(v)) continue;
    out.push(`${p}:${v.replace(/"/g, "'")}`);
  }
  return out.join(";");
}

/** Scale of the PNG: 2× where it stays within the canvas limits, less for very large graphs (pure). */
export function pngScale(w: number, h: number, want = 2, maxSide = 16384, maxPixels = 50e6): number {
  if (!(w > 0 && h > 0)) return 1;
  let s = want;
  s = Math.min(s, maxSide / w, maxSide / h);
  s = Math.min(s, Math.sqrt(maxPixels / (w * h)));
  return Math.max(0.05, s);
}

/** A file name from parts (run names can hold "/" and other characters unsafe in file names). */
export function exportFileName(parts: (string | number)[], ext: string): string {
  const base = parts
    .map((p) => String(p).replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, ""))
    .filter(Boolean)
    .join("_");
  return `${base || "ad_layer"}.${ext}`;
}

/**
 * A deep copy of `src` with every element's computed presentation inlined (classes and ids of the
 * live document do not matter any more). Hidden subtrees are dropped. Must run while `src` is in
 * the document (computed styles).
 */
export function inlineClone(src: Element): Element | null {
  const cs = getComputedStyle(src);
  if (cs.display === "none") return null;
  const tag = src.localName;
  const el = document.createElementNS(SVG_NS, tag);
  for (const a of Array.from(src.attributes)) {
    if (a.name === "class" || a.name === "style" || a.name.startsWith("data-") || a.name === "tabindex") continue;
    el.setAttribute(a.name, a.value);
  }
  if (tag !== "svg" && tag !== "defs" && tag !== "marker" && tag !== "title") {
    const st = inlineStyle((p) => cs.getPropertyValue(p), tag);
    if (st) el.setAttribute("style", st);
  }
  for (const c of Array.from(src.childNodes)) {
    if (c.nodeType === Node.TEXT_NODE) {
      el.appendChild(document.createTextNode(c.textContent ?? ""));
    } else if (c.nodeType === Node.ELEMENT_NODE) {
      const cc = inlineClone(c as Element);
      if (cc) el.appendChild(cc);
    }
  }
  return el;
}

export interface ExportPart {
  /** The live <svg> of a view. */
  svg: SVGSVGElement;
  /** Size of its drawing (world units), drawn at the origin. */
  width: number;
  height: number;
  /** Heading written above the part (plain text). */
  title?: string;
}

export interface ExportResult {
  svg: string;
  width: number;
  height: number;
}

/**
 * One self-contained SVG document of one or more views side by side: a background, each part's
 * title, and each part's drawing copied with its styles inlined and its pan/zoom reset.
 */
export function exportSvg(parts: ExportPart[], opts: { background: string; foreground: string; pad?: number; font?: string }): ExportResult {
  const pad = opts.pad ?? 16;
  const gapX = 32;
  const titleH = parts.some((p) => p.title) ? 26 : 0;
  let width = pad;
  let height = 0;
  for (const p of parts) {
    width += p.width + gapX;
    height = Math.max(height, p.height);
  }
  width = Math.ceil(width - gapX + pad);
  height = Math.ceil(height + 2 * pad + titleH);
  const root = document.createElementNS(SVG_NS, "svg");
  root.setAttribute("xmlns", SVG_NS);
  root.setAttribute("version", "1.1");
  root.setAttribute("width", String(width));
  root.setAttribute("height", String(height));
  root.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const bg = document.createElementNS(SVG_NS, "rect");
  bg.setAttribute("width", "100%");
  bg.setAttribute("height", "100%");
  bg.setAttribute("fill", opts.background);
  root.appendChild(bg);
  let x = pad;
  parts.forEach((p, i) => {
    const g = document.createElementNS(SVG_NS, "g");
    g.setAttribute("transform", `translate(${x},${pad})`);
    if (p.title) {
      const t = document.createElementNS(SVG_NS, "text");
      t.setAttribute("x", "0");
      t.setAttribute("y", "15");
      t.setAttribute("style", `font-family:${(opts.font ?? "sans-serif").replace(/"/g, "'")};font-size:14px;font-weight:700;fill:${opts.foreground}`);
      t.textContent = p.title;
      g.appendChild(t);
    }
    const copy = inlineClone(p.svg);
    if (copy) {
      // The pan/zoom group is the drawing's only transform: reset it to the origin.
      const inner = document.createElementNS(SVG_NS, "g");
      inner.setAttribute("transform", `translate(0,${titleH})`);
      for (const c of Array.from(copy.childNodes)) {
        if (c instanceof Element && c.localName === "g" && c.hasAttribute("transform") && c.parentNode === copy) c.removeAttribute("transform");
        // Marker ids must stay unique when several parts share them.
        if (c instanceof Element) renameIds(c, `p${i}-`);
        inner.appendChild(c);
      }
      g.appendChild(inner);
    }
    root.appendChild(g);
    x += p.width + gapX;
  });
  const xml = `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(root)}\n`;
  return { svg: xml, width, height };
}

/** Prefixes every id in a subtree and the url(#id) references to them. */
function renameIds(el: Element, prefix: string): void {
  const all = [el, ...Array.from(el.querySelectorAll("*"))];
  for (const e of all) {
    const id = e.getAttribute("id");
    if (id) e.setAttribute("id", prefix + id);
    for (const a of ["marker-end", "marker-start", "marker-mid", "fill", "stroke", "clip-path", "mask", "filter"]) {
      const v = e.getAttribute(a);
      if (v && v.startsWith("url(#")) e.setAttribute(a, `url(#${prefix}${v.slice(5)}`);
    }
  }
}

/** Renders an SVG document to a PNG blob through an <img> and a canvas. */
export async function svgToPng(svg: string, width: number, height: number, background: string): Promise<Blob> {
  const scale = pngScale(width, height);
  const url = URL.createObjectURL(new Blob([svg], { type: "image/svg+xml;charset=utf-8" }));
  try {
    const img = new Image();
    img.decoding = "async";
    const loaded = new Promise<void>((resolve, reject) => {
      img.onload = () => resolve();
      img.onerror = () => reject(new Error("the SVG could not be rendered"));
    });
    img.src = url;
    await loaded;
    const canvas = document.createElement("canvas");
    canvas.width = Math.max(1, Math.round(width * scale));
    canvas.height = Math.max(1, Math.round(height * scale));
    const ctx = canvas.getContext("2d");
    if (!ctx) throw new Error("no 2D canvas");
    ctx.fillStyle = background;
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
    return await new Promise<Blob>((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error("PNG encoding failed"))), "image/png"));
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** Saves a blob as a file (an <a download> click). */
export function saveBlob(data: Blob, filename: string): void {
  const url = URL.createObjectURL(data);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  a.style.display = "none";
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}
