// Tiny DOM helpers. Text always goes in through textContent; there is no innerHTML anywhere.
export type Attrs = Record<string, string | number | boolean | undefined | null>;
export type Child = Node | string | number | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

export const SVG_NS = "http://www.w3.org/2000/svg";

export function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el: Element, attrs: Attrs): void {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    el.setAttribute(k, v === true ? "" : String(v));
  }
}

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
}

export function clear(el: Node): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

export function text(tag: keyof HTMLElementTagNameMap, content: string, attrs: Attrs = {}): HTMLElement {
  const el = h(tag, attrs);
  el.textContent = content;
  return el;
}

/** setPointerCapture that tolerates pointers the browser does not track (synthetic events). */
export function capture(el: Element, pointerId: number): void {
  try {
    el.setPointerCapture(pointerId);
  } catch {
    /* not an active pointer */
  }
}

/** A chooser's tooltip: the full text of its chosen entry (the closed chooser may not show all of it). */
export function syncTitle(sel: HTMLSelectElement): void {
  const o = sel.selectedOptions[0];
  sel.title = o ? (o.title ? `${o.textContent ?? ""}\n${o.title}` : o.textContent ?? "") : "";
}

let measure: CanvasRenderingContext2D | null = null;

/**
 * A chooser as wide as its chosen entry (its list still shows every entry whole), with that
 * entry's full text as its tooltip: a long label is never cut, a short one takes no more room.
 */
export function fitToChoice(sel: HTMLSelectElement): void {
  syncTitle(sel);
  const o = sel.selectedOptions[0];
  const cs = getComputedStyle(sel);
  measure ??= document.createElement("canvas").getContext("2d");
  if (!o || !measure || !cs.fontSize) return;
  measure.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
  // The text, the padding and the arrow.
  const pad = parseFloat(cs.paddingLeft) + parseFloat(cs.paddingRight) + parseFloat(cs.borderLeftWidth) + parseFloat(cs.borderRightWidth);
  sel.style.width = `${Math.ceil(measure.measureText(o.textContent ?? "").width + pad + 26)}px`;
}
