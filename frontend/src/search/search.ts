// Fuzzy, case-insensitive search over node ids, ops, labels and kernel names. Pure.
import type { Hierarchy } from "../model/hierarchy";
import { inputCaption } from "../model/labels";

export type SearchField = "id" | "label" | "op" | "kernel" | "input";

export interface SearchEntry {
  key: string;
  order: number;
  fields: { field: SearchField; text: string; lower: string }[];
}

export interface SearchHit {
  key: string;
  field: SearchField;
  text: string;
  score: number;
}

export function buildSearchIndex(h: Hierarchy): SearchEntry[] {
  const out: SearchEntry[] = [];
  let order = 0;
  const add = (key: string, fields: [SearchField, string][]) => {
    const seen = new Set<string>();
    const fs: SearchEntry["fields"] = [];
    for (const [field, text] of fields) {
      if (!text || seen.has(text)) continue;
      seen.add(text);
      fs.push({ field, text, lower: text.toLowerCase() });
    }
    out.push({ key, order: order++, fields: fs });
  };
  for (const k of h.opKeys) {
    const n = h.items.get(k)?.node;
    if (!n) continue;
    const fields: [SearchField, string][] = [["id", n.id], ["label", n.label], ["op", n.op]];
    for (const kn of n.kernels ?? []) {
      fields.push(["kernel", kn.kernel]);
      if (kn.name) fields.push(["kernel", kn.name]);
    }
    add(k, fields);
  }
  for (const it of h.items.values()) {
    if (it.kind === "input" && it.input) {
      const members = (it.inputs ?? []).map((x): [SearchField, string] => ["id", x.id]);
      add(it.key, [["id", it.input.id], ["input", it.input.label], ["input", inputCaption(it.input.label)], ...members]);
    }
  }
  return out;
}

/**
 * Score of `q` (lower-case) against `text` (lower-case), or -1 when it does not match.
 * Exact > prefix > word-boundary substring > substring > subsequence (fewer, shorter gaps first).
 */
export function fuzzyScore(q: string, text: string): number {
  if (!q) return -1;
  if (text === q) return 10000;
  const i = text.indexOf(q);
  if (i === 0) return 8000 - Math.min(text.length, 1000);
  if (i > 0) {
    const prev = text.charCodeAt(i - 1);
    const boundary = !((prev >= 97 && prev <= 122) || (prev >= 48 && prev <= 57));
    return (boundary ? 7000 : 6000) - Math.min(i, 500) - Math.min(text.length, 1000) / 10;
  }
  // Subsequence match.
  let ti = 0;
  let gaps = 0;
  let gapLen = 0;
  let last = -1;
  for (let qi = 0; qi < q.length; qi++) {
    const c = q[qi];
    const j = text.indexOf(c, ti);
    if (j < 0) return -1;
    if (last >= 0 && j > last + 1) {
      gaps++;
      gapLen += j - last - 1;
    }
    last = j;
    ti = j + 1;
  }
  // Too scattered to be meaningful: require the query's characters within a window.
  if (gapLen > Math.max(24, q.length * 6)) return -1;
  return 3000 - gaps * 100 - Math.min(gapLen, 1000) - Math.min(text.length, 1000) / 10;
}

const FIELD_BONUS: Record<SearchField, number> = { id: 30, label: 20, op: 10, input: 15, kernel: 0 };

/** Hits best first (ties in graph order); one hit per node, from its best field. */
export function search(index: SearchEntry[], query: string, limit = 5000): SearchHit[] {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  const hits: (SearchHit & { order: number })[] = [];
  for (const e of index) {
    let best: (SearchHit & { order: number }) | null = null;
    for (const f of e.fields) {
      const s = fuzzyScore(q, f.lower);
      if (s < 0) continue;
      const score = s + FIELD_BONUS[f.field];
      if (!best || score > best.score) best = { key: e.key, field: f.field, text: f.text, score, order: e.order };
    }
    if (best) hits.push(best);
  }
  // Bucket by match class: exact ids, ops and labels first (what a user pasted), then exact kernel
  // names,
  // then substring hits in graph order, then subsequence ones.
  const tier = (h: SearchHit) => (h.score >= 9000 ? (h.field !== "kernel" ? 4 : 3) : h.score >= 5000 ? 2 : 1);
  hits.sort((a, b) => tier(b) - tier(a) || a.order - b.order);
  return hits.slice(0, limit).map(({ order: _o, ...h }) => h);
}

/** Next index (wrapping) for next/previous navigation. */
export function stepHit(count: number, current: number, dir: 1 | -1): number {
  if (count <= 0) return -1;
  if (current < 0) return dir === 1 ? 0 : count - 1;
  return (current + dir + count) % count;
}
