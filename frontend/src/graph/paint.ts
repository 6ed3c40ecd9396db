// Colours and marks of a drawn scene: what a view asks for (colour by group, by GPU time or by
// difference status; hotspots; badges) and the highlight of the selected, hovered and found keys.
// Painting only sets attributes on the scene's elements, so it is redone without a new layout.
import { t } from "../i18n";
import { groupColor, heatColor, heatTextColor, heatValue, type Theme } from "../model/colors";
import type { Hierarchy, TreeItem } from "../model/hierarchy";
import { countsAttr, statusColor, stripSegments, type DiffStatus, type StatusCounts } from "../model/status";
import { s } from "../ui/dom";
import type { Scene } from "./scene";

export type ColorMode = "group" | "time";
/** "status": op nodes coloured by their difference status (comparison and stage views). */
export type PaintMode = ColorMode | "status";

/** What a visible leaf or container shows in "status" mode (computed by a view model). */
export interface LeafMark {
  /** Op nodes: fill and stroke by status. */
  status?: DiffStatus;
  /** A pill on the node's top-right corner (a duration delta, or status counts). */
  badge?: { text: string; tone: "slower" | "faster" | "diff" | "neutral" };
  /** Groups: how many nodes of each status they hold (a strip along a collapsed group's bottom). */
  counts?: StatusCounts;
}

export interface Paint {
  mode: PaintMode;
  theme: Theme;
  hot: Map<string, number>; // op key -> rank
  marks?: Map<string, LeafMark>;
  /** Order of statuses in strips and count attributes. */
  statusOrder?: DiffStatus[];
  /** Op keys whose p99 is far above their median over the replays (a "p99" marker on the node). */
  tails?: Set<string>;
}

/** The keys highlighted (any key: a hidden one shows on the group that stands for it). */
export interface Highlight {
  selected: string | null;
  hovered: string | null;
  hits: Set<string>;
  currentHit: string | null;
}

const STATUS_ORDER: DiffStatus[] = ["same", "changed", "only_a", "only_b", "added", "removed"];

/** The depth-2 group an item belongs to (for colours): "moe" for moe/moe_router, etc. */
export function colourGroup(h: Hierarchy, it: TreeItem): string {
  if (it.kind === "op") return it.node?.group || "other";
  if (it.kind === "input") return "input";
  if (it.depth <= 1) return "layer";
  let cur: TreeItem | undefined = it;
  while (cur && cur.depth > 2) cur = cur.parent ? h.items.get(cur.parent) : undefined;
  return cur?.name ?? "other";
}

export function paintScene(scene: Scene, paint: Paint): void {
  const { h, vis } = scene.data;
  let max = 0;
  for (const k of vis.leaves) max = Math.max(max, h.items.get(k)?.timeUs ?? 0);
  // Hotspots hidden in collapsed groups are shown on the group.
  const hotOn = new Map<string, number[]>();
  for (const [k, r] of paint.hot) {
    const rep = vis.rep.get(k);
    if (!rep) continue;
    const arr = hotOn.get(rep) ?? [];
    arr.push(r);
    hotOn.set(rep, arr);
  }
  for (const [key, g] of scene.nodeEls) {
    const it = h.items.get(key);
    if (!it) continue;
    const gc = groupColor(colourGroup(h, it), paint.theme);
    const mark = paint.mode === "status" ? paint.marks?.get(key) : undefined;
    if (g.classList.contains("c")) {
      const r = g.firstChild as SVGRectElement;
      r.setAttribute("fill", gc.box);
      r.setAttribute("stroke", gc.stroke);
      setMark(scene, key, g, mark, paint, true);
      continue;
    }
    const parts = scene.leafParts.get(key);
    if (!parts) continue;
    let fill = gc.fill;
    let stroke = gc.stroke;
    let textFill = "";
    if (paint.mode === "status" && it.kind === "op") {
      const st = mark?.status ?? "same";
      const sc = statusColor(st, paint.theme);
      fill = sc.fill;
      stroke = sc.stroke;
      g.setAttribute("data-status", st);
    } else g.removeAttribute("data-status");
    setMark(scene, key, g, mark, paint, false);
    if (paint.mode === "time" && it.kind !== "input") {
      if (it.timeUs > 0) {
        const v = heatValue(it.timeUs, max);
        fill = heatColor(v, paint.theme);
        textFill = heatTextColor(v, paint.theme);
      } else {
        fill = paint.theme === "dark" ? "#2b2f36" : "#f4f5f7";
      }
    }
    parts.rect.setAttribute("fill", fill);
    parts.rect.setAttribute("stroke", stroke);
    if (parts.stack) {
      parts.stack.setAttribute("fill", fill);
      parts.stack.setAttribute("stroke", stroke);
    }
    if (textFill) g.setAttribute("data-tc", textFill === "#ffffff" || textFill === "#f2f2f2" ? "light" : "dark");
    else g.removeAttribute("data-tc");
    setTailMark(scene, key, g, !!paint.tails?.has(key));
    const ranks = hotOn.get(key);
    if (ranks && ranks.length) {
      ranks.sort((a, b) => a - b);
      g.classList.add("hot");
      g.setAttribute("data-hot", String(ranks[0]));
      setBadge(scene, key, ranks.length > 2 ? `#${ranks[0]}+${ranks.length - 1}` : ranks.map((r) => `#${r}`).join(" "));
    } else if (g.classList.contains("hot")) {
      g.classList.remove("hot");
      g.removeAttribute("data-hot");
      setBadge(scene, key, null);
    }
  }
}

/** The "p99" marker on a leaf's top-left corner: its tail is flagged in the report. */
function setTailMark(scene: Scene, key: string, g: SVGGElement, on: boolean): void {
  const old = g.querySelector(":scope > g.tailmark");
  if (!on) {
    old?.remove();
    g.removeAttribute("data-tail");
    return;
  }
  g.setAttribute("data-tail", "p99");
  if (old || !scene.leafParts.get(key)) return;
  const m = s("g", { class: "tailmark", transform: "translate(-4,-7)" });
  const tip = s("title");
  tip.textContent = t("tailMarkTitle");
  m.append(tip, s("rect", { x: 0, y: 0, width: 26, height: 13, rx: 6.5 }), s("text", { x: 13, y: 10 }));
  (m.lastChild as SVGTextElement).textContent = "p99";
  g.appendChild(m);
}

/** The hotspot pill of a leaf (null removes it). */
function setBadge(scene: Scene, key: string, txt: string | null): void {
  const parts = scene.leafParts.get(key);
  const g = scene.nodeEls.get(key);
  if (!parts || !g) return;
  if (txt === null) {
    parts.badge?.remove();
    parts.badge = null;
    return;
  }
  if (!parts.badge) {
    parts.badge = s("g", { class: "badge", transform: `translate(${parts.w - 2},-6)` });
    parts.badge.append(s("rect", { y: 0, height: 14, rx: 7 }), s("text", { y: 10.5 }));
    g.appendChild(parts.badge);
  }
  const [r, tEl] = [parts.badge.firstChild as SVGRectElement, parts.badge.lastChild as SVGTextElement];
  tEl.textContent = txt;
  const w = Math.max(24, txt.length * 6.6 + 8);
  r.setAttribute("width", String(w));
  r.setAttribute("x", String(-w + 2));
  tEl.setAttribute("x", String(-w / 2 + 2));
}

/**
 * The status decorations of one key: a badge (top-right pill; inside the header band for an
 * expanded group) and, for a collapsed group, a strip of its nodes' statuses along its bottom.
 * The group itself is not recoloured: only the nodes that differ are.
 */
function setMark(scene: Scene, key: string, g: SVGGElement, mark: LeafMark | undefined, paint: Paint, container: boolean): void {
  scene.markEls.get(key)?.remove();
  scene.markEls.delete(key);
  if (mark?.counts) g.setAttribute("data-status-counts", countsAttr(mark.counts, paint.statusOrder ?? STATUS_ORDER));
  else g.removeAttribute("data-status-counts");
  if (!mark || (!mark.badge && !mark.counts)) return;
  const b = scene.boxes.get(key);
  if (!b) return;
  const mg = s("g", { class: "mark" });
  if (mark.counts && !container && scene.leafParts.get(key)?.stack) {
    const strip = s("g", { class: "strip", transform: `translate(6,${b.h - 7})` });
    for (const seg of stripSegments(mark.counts, paint.statusOrder ?? STATUS_ORDER, Math.max(10, b.w - 12))) {
      strip.appendChild(s("rect", { x: seg.x.toFixed(2), y: 0, width: Math.max(1, seg.w).toFixed(2), height: 4, fill: statusColor(seg.status, paint.theme).solid }));
    }
    mg.appendChild(strip);
  }
  if (mark.badge && mark.badge.text) {
    const txt = mark.badge.text;
    const w = Math.max(22, txt.length * 6.4 + 10);
    const bx = container ? b.w - 6 : b.w + 2;
    const by = container ? 4 : -7;
    const badge = s("g", { class: `mbadge ${mark.badge.tone}`, transform: `translate(${bx},${by})` });
    badge.append(s("rect", { x: -w, y: 0, width: w, height: 15, rx: 7.5 }));
    const tx = s("text", { x: -w / 2, y: 11 });
    tx.textContent = txt;
    badge.appendChild(tx);
    mg.appendChild(badge);
  }
  g.appendChild(mg);
  scene.markEls.set(key, mg);
}

/**
 * Selected, hovered and found keys as classes on what stands for them, and the edges of the
 * selected and hovered ones drawn active (on top, with their own arrow `arrowActId`).
 */
export function paintHighlight(scene: Scene | null, vp: SVGGElement, hl: Highlight, arrowId: string, arrowActId: string): void {
  const vis = scene?.data.vis;
  const rep = (k: string | null) => (k && vis ? vis.rep.get(k) ?? null : null);
  const sel = rep(hl.selected);
  const hov = rep(hl.hovered);
  const hitReps = new Set<string>();
  for (const k of hl.hits) {
    const r = rep(k);
    if (r) hitReps.add(r);
  }
  const cur = rep(hl.currentHit);
  // Zoomed out, the summary cards of the groups that hold hits light up too.
  if (scene) {
    const groups = new Set<string>();
    for (const k of hl.hits) {
      let p = scene.data.h.items.get(k)?.parent ?? null;
      while (p !== null && !groups.has(p)) {
        groups.add(p);
        p = scene.data.h.items.get(p)?.parent ?? null;
      }
    }
    scene.markHitGroups(groups);
  }
  for (const [key, g] of scene?.nodeEls ?? []) {
    g.classList.toggle("sel", key === sel);
    g.classList.toggle("hov", key === hov && key !== sel);
    g.classList.toggle("hit", hitReps.has(key));
    g.classList.toggle("hit-cur", key === cur);
  }
  for (const p of vp.querySelectorAll("path.e.act")) {
    p.classList.remove("act");
    p.setAttribute("marker-end", `url(#${arrowId})`);
  }
  if (!scene) return;
  for (const k of [sel, hov]) {
    if (!k) continue;
    for (const e of scene.edgesByKey.get(k) ?? []) {
      const p = scene.edgeEls.get(e.id);
      if (!p) continue;
      p.classList.add("act");
      p.setAttribute("marker-end", `url(#${arrowActId})`);
      p.parentNode?.appendChild(p); // on top
    }
  }
}
