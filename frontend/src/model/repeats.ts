// Repeated identical subgraphs in a sequence of nodes (an unrolled loop's steps, one dequantisation
// per expert weight): maximal runs of consecutive, structurally isomorphic blocks. Pure; linear in
// the number of nodes and edges (rolling hashes compare blocks in O(1); a block is verified node by
// node only when it joins a run, and a run is never scanned again).
//
// Two consecutive blocks are isomorphic when, offset by offset, their nodes have the same op and
// the same wiring: each input sits at the same distance in both (the block's
// own dataflow, and what one step hands to the next), or is the very same tensor (loop-invariant),
// or comes from before the run for both (the first block's state may come from there); an input
// from outside the sequence is outside for both. Nothing but ops and wiring is compared: no names.

export interface SeqNode {
  /** The node's op (its target). */
  op: string;
  /** Positions in the sequence of its inputs (-1 for inputs from outside the sequence). */
  inputs: number[];
}

export interface RepeatRun {
  /** Position of the first node of the first block. */
  start: number;
  /** Nodes per block. */
  period: number;
  /** Number of blocks (at least 2). */
  count: number;
}

/** Runs smaller than this many nodes in all are left as they are. */
export const MIN_RUN_NODES = 16;
/** Candidate periods tried at each position (the next few occurrences of its token). */
const CANDIDATES = 3;

const B = 0x9e3779b1 | 0;

/** Counts the elementary steps of a search (tests check that it grows linearly). */
export interface WorkCounter {
  steps: number;
}

/**
 * Maximal runs of repeated blocks, left to right, non-overlapping. `work`, when given, counts the
 * steps taken: positions visited, candidate periods tried and node offsets compared.
 */
export function findRepeats(seq: SeqNode[], minNodes = MIN_RUN_NODES, work?: WorkCounter): RepeatRun[] {
  const n = seq.length;
  if (n < minNodes) return [];
  // Token of a node: its op and which of its inputs come from outside the sequence ("^"); the
  // wiring of the others is checked when blocks are compared.
  const ids = new Map<string, number>();
  const tok = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const s = seq[i];
    const key = `${s.op}(${s.inputs.map((j) => (j >= 0 ? "" : "^")).join(",")})`;
    let id = ids.get(key);
    if (id === undefined) ids.set(key, (id = ids.size + 1));
    tok[i] = id;
  }
  // Prefix hashes (mod 2^32) and powers, for O(1) comparison of any two equal-length windows.
  const pre = new Int32Array(n + 1);
  const pow = new Int32Array(n + 1);
  pow[0] = 1;
  for (let i = 0; i < n; i++) {
    pre[i + 1] = (Math.imul(pre[i], B) + tok[i]) | 0;
    pow[i + 1] = Math.imul(pow[i], B);
  }
  const win = (a: number, len: number) => (pre[a + len] - Math.imul(pre[a], pow[len])) | 0;
  // Next position with the same token.
  const next = new Int32Array(n).fill(-1);
  const last = new Map<number, number>();
  for (let i = n - 1; i >= 0; i--) {
    next[i] = last.get(tok[i]) ?? -1;
    last.set(tok[i], i);
  }
  const sameBlock = (a: number, b: number, p: number, runStart: number): boolean => {
    if (work) work.steps++;
    if (win(a, p) !== win(b, p)) return false;
    for (let o = 0; o < p; o++) {
      if (work) work.steps++;
      const x = seq[b + o];
      const y = seq[a + o];
      if (tok[a + o] !== tok[b + o] || x.inputs.length !== y.inputs.length) return false;
      for (let j = 0; j < x.inputs.length; j++) {
        const ix = x.inputs[j];
        const iy = y.inputs[j];
        if ((ix < 0) !== (iy < 0)) return false;
        if (ix < 0) continue;
        const dx = b + o - ix;
        const dy = a + o - iy;
        if (dx === dy) continue; // the same wiring, shifted by one block
        if (ix === iy) continue; // the same tensor (loop-invariant)
        if (ix < runStart && iy < runStart) continue; // both from before the run (ops already equal)
        if (iy < runStart && dx <= 2 * p) continue; // the first block's state comes from before
        return false;
      }
    }
    return true;
  };
  const runs: RepeatRun[] = [];
  let i = 0;
  while (i < n) {
    if (work) work.steps++;
    let best: RepeatRun | null = null;
    let j = next[i];
    for (let c = 0; c < CANDIDATES && j > i && !best; c++, j = next[j]) {
      if (work) work.steps++;
      const p = j - i;
      if (i + 2 * p > n) break;
      let count = 1;
      while (i + (count + 1) * p <= n && sameBlock(i + (count - 1) * p, i + count * p, p, i)) count++;
      if (count >= 2 && p * count >= minNodes) best = { start: i, period: p, count };
    }
    if (best) {
      runs.push(best);
      i += best.period * best.count;
    } else i++;
  }
  return runs;
}
