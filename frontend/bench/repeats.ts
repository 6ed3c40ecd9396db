// Speed of the search for repeated blocks (src/model/repeats.ts) in Node, one CPU core: an
// unrolled loop (one long run), the same loop with every fourth step rewired (short runs and near
// misses), and one op throughout with irregular wiring (every candidate refuted). Target: a
// 100,000-node sequence in well under 2 s. Run: node bench/repeats.mjs
import { findRepeats, MIN_RUN_NODES, type SeqNode, type WorkCounter } from "../src/model/repeats";

function unrolled(steps: number): SeqNode[] {
  const seq: SeqNode[] = [];
  for (let i = 0; i < 3; i++) seq.push({ op: `pre${i}`, inputs: i ? [i - 1] : [-1] });
  let state = 2;
  for (let s = 0; s < steps; s++) {
    const b = seq.length;
    seq.push({ op: "getitem", inputs: [2] }, { op: "mul", inputs: [b, state] }, { op: "exp", inputs: [b + 1] },
      { op: "matmul", inputs: [b + 2, 2] }, { op: "add", inputs: [b + 3, state] });
    state = b + 4;
  }
  return seq;
}

function rewired(steps: number): SeqNode[] {
  const seq = unrolled(steps);
  for (let s = 3; s < steps; s += 4) seq[3 + s * 5 + 1] = { op: "mul", inputs: [3 + s * 5, 2] };
  return seq;
}

function irregular(steps: number): SeqNode[] {
  const seq: SeqNode[] = [];
  let r = 12345;
  for (let i = 0; i < steps * 5 + 3; i++) {
    r = (Math.imul(r, 1103515245) + 12345) >>> 0;
    seq.push({ op: "add", inputs: i ? [r % i] : [-1] });
  }
  return seq;
}

const REPEAT = 7;
console.log("findRepeats (median of 7 runs)");
console.log("input       nodes    ms    steps/node");
for (const make of [unrolled, rewired, irregular]) {
  for (const steps of [5000, 10000, 20000, 40000]) {
    const seq = make(steps);
    findRepeats(seq); // warm-up
    const ms: number[] = [];
    const w: WorkCounter = { steps: 0 };
    for (let i = 0; i < REPEAT; i++) {
      const t0 = performance.now();
      findRepeats(seq, MIN_RUN_NODES, i === 0 ? w : undefined);
      ms.push(performance.now() - t0);
    }
    ms.sort((a, b) => a - b);
    const med = ms[REPEAT >> 1];
    console.log(`${make.name.padEnd(10)} ${String(seq.length).padStart(7)} ${med.toFixed(1).padStart(6)} ${(w.steps / seq.length).toFixed(2).padStart(8)}`);
  }
}
