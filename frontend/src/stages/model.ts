// The stage view model (pure, unit-tested): one layer through the pipeline's transform stages,
// with what each transform added, removed and changed against the previous stage.
import type { LayerResponse, StageDiff, StagesResponse } from "../api/types";
import { opKey, type Hierarchy } from "../model/hierarchy";
import type { DiffStatus } from "../model/status";

export interface StageStep {
  index: number;
  /** Position in the sequence (0-based). */
  pos: number;
  file: string;
  transform: string;
  nodeCount: number;
  added: number;
  removed: number;
  changed: number;
  /** Node count change against the previous stage (0 for the first). */
  countDelta: number;
}

/** The stages in pipeline order, with counts. */
export function stageSteps(res: StagesResponse | null | undefined): StageStep[] {
  const st = [...(res?.stages ?? [])].sort((a, b) => a.index - b.index);
  return st.map((s, pos) => ({
    index: s.index, pos, file: s.file, transform: s.transform, nodeCount: s.node_count,
    added: s.added?.length ?? 0, removed: s.removed?.length ?? 0, changed: s.changed?.length ?? 0,
    countDelta: pos > 0 ? s.node_count - st[pos - 1].node_count : 0,
  }));
}

/** The stage index one step before/after `index` (clamped to the ends). */
export function stepStage(steps: StageStep[], index: number, dir: 1 | -1): number {
  if (!steps.length) return index;
  let pos = steps.findIndex((s) => s.index === index);
  if (pos < 0) pos = dir > 0 ? -1 : steps.length;
  const next = Math.min(steps.length - 1, Math.max(0, pos + dir));
  return steps[next].index;
}

/** The next stage (in `dir`) where the transform changed something in this layer, or null. */
export function nextChangedStage(steps: StageStep[], index: number, dir: 1 | -1): number | null {
  const pos = steps.findIndex((s) => s.index === index);
  for (let p = pos + dir; p >= 0 && p < steps.length; p += dir) {
    const s = steps[p];
    if (s.added + s.removed + s.changed > 0) return s.index;
  }
  return null;
}

export interface StageDiffModel {
  index: number;
  /** The previous stage's index, null for the first stage. */
  prev: number | null;
  added: Set<string>;
  removed: Set<string>;
  changed: Set<string>;
}

export function stageDiff(res: StagesResponse | null | undefined, index: number): StageDiffModel {
  const st = [...(res?.stages ?? [])].sort((a, b) => a.index - b.index);
  const pos = st.findIndex((s) => s.index === index);
  const cur: StageDiff | undefined = st[pos];
  return {
    index,
    prev: pos > 0 ? st[pos - 1].index : null,
    added: new Set(cur?.added ?? []),
    removed: new Set(cur?.removed ?? []),
    changed: new Set(cur?.changed ?? []),
  };
}

export type StageSide = "after" | "before";

/**
 * Status per hierarchy key for the graph shown: "after" (this stage: added and changed nodes) or
 * "before" (the previous stage: removed and changed nodes). Other ops of the hierarchy are "same".
 */
export function stageStatus(d: StageDiffModel, side: StageSide, h: Hierarchy): Map<string, DiffStatus> {
  const out = new Map<string, DiffStatus>();
  for (const k of h.opKeys) out.set(k, "same");
  const mark = (ids: Set<string>, st: DiffStatus) => {
    for (const id of ids) {
      const k = opKey(id);
      if (out.has(k)) out.set(k, st);
    }
  };
  if (side === "after") mark(d.added, "added");
  else mark(d.removed, "removed");
  mark(d.changed, "changed");
  return out;
}

export interface StageListItem {
  id: string;
  label: string;
  op: string;
  group: string;
  status: DiffStatus;
}

/**
 * The lists beside the graph, in graph order: removed nodes (described from the previous stage's
 * layer, since they are not in this one), added and changed nodes (from this stage's layer).
 */
export function stageLists(d: StageDiffModel, cur: LayerResponse | null, prev: LayerResponse | null): { removed: StageListItem[]; added: StageListItem[]; changed: StageListItem[] } {
  const list = (ids: Set<string>, L: LayerResponse | null, st: DiffStatus): StageListItem[] => {
    const pos = new Map((L?.nodes ?? []).map((n, i) => [n.id, i]));
    const by = new Map((L?.nodes ?? []).map((n) => [n.id, n]));
    return [...ids]
      .sort((a, b) => (pos.get(a) ?? 1e9) - (pos.get(b) ?? 1e9) || a.localeCompare(b))
      .map((id) => {
        const n = by.get(id);
        return { id, label: n?.label || n?.op || id, op: n?.op ?? "", group: n?.group ?? "", status: st };
      });
  };
  return { removed: list(d.removed, prev, "removed"), added: list(d.added, cur, "added"), changed: list(d.changed, cur, "changed") };
}
