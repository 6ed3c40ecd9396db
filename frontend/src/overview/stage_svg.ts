// The whole-stage graph as SVG, for the panel's SVG and PNG export: the same layout the canvas
// draws (stage_model.ts), every box, arrow, lane stop and text at zoom 1. Text goes in as text
// nodes only (names come from dumps).
import { t } from "../i18n";
import { groupColor, type Theme } from "../model/colors";
import { s } from "../ui/dom";
import { BOX_X, LANE_X, PAD, ROW_H, TITLE_H, type StageLayout } from "./stage_model";

const FONT = "sans-serif";

export function stageSvg(l: StageLayout, theme: Theme): SVGSVGElement {
  const dark = theme === "dark";
  const fg = dark ? "#e6e9ed" : "#1d2329";
  const muted = dark ? "#98a2ad" : "#5f6b77";
  const box = dark ? "#1f242a" : "#f7f8fa";
  const border = dark ? "#3a424c" : "#c3cad3";
  const edge = dark ? "#6c7784" : "#8d99a6";
  const lane = dark ? "#b88af0" : "#8a4fd1";
  const W = l.width + 16;
  const H = l.height + 16;
  const svg = s("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  const g = s("g", { class: "vp" });
  svg.appendChild(g);
  const text = (x: number, y: number, str: string, attrs: Record<string, string | number>) => {
    const el = s("text", { x, y, "font-family": FONT, ...attrs });
    el.textContent = str;
    g.appendChild(el);
  };
  for (const e of l.edges) {
    if (e.kind !== "chain") {
      g.appendChild(s("line", { x1: e.x1, y1: e.y1, x2: e.x2, y2: e.y2, stroke: lane, "stroke-width": 1.5 }));
      continue;
    }
    g.appendChild(s("line", { x1: e.x1, y1: e.y1, x2: e.x2, y2: e.y2 - 5, stroke: edge, "stroke-width": 1.2 }));
    g.appendChild(s("path", { d: `M${e.x2 - 5},${e.y2 - 7} L${e.x2 + 5},${e.y2 - 7} L${e.x2},${e.y2} z`, fill: edge }));
  }
  if (l.lane) {
    g.appendChild(s("line", { x1: l.lane.x, y1: l.lane.y1, x2: l.lane.x, y2: l.lane.y2, stroke: lane, "stroke-width": 3 }));
    const mid = (LANE_X + BOX_X) / 2;
    for (const p of l.lane.ports) {
      g.appendChild(s("circle", { cx: l.lane.x, cy: p.y, r: 4, fill: lane }));
      text(mid, p.y - 3, `↘ ${p.ids.length}`, { "font-size": 11, fill: lane, "text-anchor": "middle" });
    }
    for (const p of l.lane.sources) {
      g.appendChild(s("circle", { cx: l.lane.x, cy: p.y, r: 4, fill: lane }));
      text(mid, p.y + 13, `${p.ids.length} ↙`, { "font-size": 11, fill: lane, "text-anchor": "middle" });
    }
    text(0, 0, t("sharedLane"), { "font-size": 11, fill: lane, "text-anchor": "end", transform: `translate(${l.lane.x - 8},${l.lane.y1}) rotate(-90)` });
  }
  for (const b of l.brackets) {
    g.appendChild(s("path", { d: `M${b.x - 6},${b.y1} L${b.x},${b.y1} L${b.x},${b.y2} L${b.x - 6},${b.y2}`, fill: "none", stroke: muted, "stroke-width": 1.5 }));
  }
  for (const it of l.items) {
    if (it.kind === "fold") {
      for (const off of [8, 4]) g.appendChild(s("rect", { x: it.x + off, y: it.y + off, width: it.w, height: it.h, rx: 7, fill: box, stroke: border }));
    }
    g.appendChild(s("rect", { x: it.x, y: it.y, width: it.w, height: it.h, rx: 7, fill: box, stroke: border, "stroke-width": 1.2 }));
    if (it.kind !== "foldhead") {
      const stripe = it.stripe.length ? it.stripe : [""];
      const sh = it.h / stripe.length;
      stripe.forEach((kind, i) => {
        const fill = kind ? groupColor(kind.split("+")[0], theme).bar : dark ? "#7f8ea3" : "#5b6b80";
        g.appendChild(s("rect", { x: it.x, y: it.y + i * sh, width: 6, height: sh, fill }));
      });
    }
    let y = it.kind === "foldhead" ? it.y + (it.h - TITLE_H) / 2 : it.y + PAD;
    for (const r of it.rows) {
      const h = r.cls === "title" ? TITLE_H : ROW_H;
      let x = it.x + 14;
      if (r.group) {
        g.appendChild(s("rect", { x, y: y + h / 2 - 4, width: 8, height: 8, fill: groupColor(r.group, theme).bar }));
        x += 13;
      }
      text(x, y + h / 2 + 4, r.text, r.cls === "title" ? { "font-size": 12.5, "font-weight": 600, fill: fg } : { "font-size": 11.5, fill: muted });
      y += h;
    }
  }
  return svg;
}
