// Layout engine comparison in Node on the benchmark fixtures (one CPU core, no browser):
//   ours          per-group layered engine (src/layout/layered.ts) + stitching (src/layout/engine.ts)
//   dagre/group   @dagrejs/dagre once per expanded group (the Netron / Model Explorer scheme)
//   dagre/compound @dagrejs/dagre on the whole compound graph
//   elk           elkjs layered, hierarchyHandling INCLUDE_CHILDREN
// The optional engines are not dependencies of the panel: `npm install --no-save elkjs @dagrejs/dagre`
// to include them (they are skipped otherwise). Run: node bench/layout_engines.mjs [--big]
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { LayerResponse } from "../src/api/types";
import { clearLayoutCache, layoutGraph } from "../src/layout/engine";
import { buildLayoutRequest } from "../src/layout/request";
import { buildHierarchy, expandedToDepth, maxGroupDepth } from "../src/model/hierarchy";
import { visibleGraph } from "../src/model/visible";

const [dir, frontend, big] = [process.argv[2], process.argv[3], process.argv.includes("--big")];
const req = createRequire(join(frontend, "package.json"));
async function optional(name: string): Promise<any> {
  try {
    return await import(pathToFileURL(req.resolve(name)).href);
  } catch {
    return null;
  }
}

function request(layers: LayerResponse[]) {
  const h = buildHierarchy(layers);
  const v = visibleGraph(h, expandedToDepth(h, maxGroupDepth(h) + 1));
  return buildLayoutRequest(h, v, 1).req;
}

type Req = ReturnType<typeof request>;
function time(fn: () => unknown): number {
  const t = performance.now();
  fn();
  return performance.now() - t;
}

async function main() {
  const dagreMod = await optional("@dagrejs/dagre");
  const dagre = dagreMod?.default ?? dagreMod;
  const elkMod = await optional("elkjs/lib/elk.bundled.js");
  const ELK = elkMod?.default ?? elkMod;
  const cases: [string, Req][] = [
    ["300-node layer", request([JSON.parse(readFileSync(join(dir, "bench_300", "layer_0.json"), "utf8"))])],
  ];
  if (big) cases.push(["3,000-node stage", request(Array.from({ length: 10 }, (_, l) => JSON.parse(readFileSync(join(dir, "bench_3000", `layer_${l}.json`), "utf8"))))]);
  for (const [name, r] of cases) {
    console.log(`${name}: ${r.leaves.length} boxes, ${r.containers.length} groups, ${r.edges.length} edges, everything expanded`);
    const ours = [0, 1, 2].map(() => time(() => (clearLayoutCache(), layoutGraph(r))));
    console.log(`  ours (per group, layered.ts):   first ${ours[0].toFixed(0)} ms, then ${ours.slice(1).map((x) => x.toFixed(0)).join(", ")} ms`);
    const size = new Map(r.leaves.map((l) => [l.key, l]));
    const parent = new Map<string, string>();
    for (const c of r.containers) for (const ch of c.children) parent.set(ch, c.key);
    if (dagre) {
      // dagre per group: bottom-up, each group's visible children plus edges at their LCA.
      const t = time(() => {
        const sz = new Map<string, { w: number; h: number }>(r.leaves.map((l) => [l.key, { w: l.w, h: l.h }]));
        const chain = (k: string) => { const o = [k]; let p = parent.get(k); while (p) { o.push(p); p = parent.get(p); } return o; };
        const internal = new Map<string, Set<string>>();
        for (const e of r.edges) {
          const a = chain(e.from), b = chain(e.to); const sb = new Set(b);
          let i = 0; while (i < a.length && !sb.has(a[i])) i++;
          if (i === 0 || i >= a.length) continue;
          const j = b.indexOf(a[i]);
          (internal.get(a[i]) ?? internal.set(a[i], new Set()).get(a[i])!).add(`${a[i - 1]}\u0000${b[j - 1]}`);
        }
        for (let i = r.containers.length - 1; i >= 0; i--) {
          const c = r.containers[i];
          const g = new dagre.graphlib.Graph();
          g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 28 });
          g.setDefaultEdgeLabel(() => ({}));
          for (const ch of c.children) { const s = sz.get(ch)!; g.setNode(ch, { width: s.w, height: s.h }); }
          for (const p of internal.get(c.key) ?? []) { const [x, y] = p.split("\u0000"); g.setEdge(x, y); }
          dagre.layout(g);
          sz.set(c.key, { w: g.graph().width + 32, h: g.graph().height + 38 });
        }
      });
      console.log(`  dagre per group:                ${t.toFixed(0)} ms`);
      if (!big || name.startsWith("300")) {
        const t2 = time(() => {
          const g = new dagre.graphlib.Graph({ compound: true });
          g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 28 });
          g.setDefaultEdgeLabel(() => ({}));
          for (const c of r.containers) g.setNode(c.key, {});
          for (const l of r.leaves) g.setNode(l.key, { width: size.get(l.key)!.w, height: size.get(l.key)!.h });
          for (const [ch, p] of parent) if (p !== r.containers[0].key) g.setParent(ch, p);
          g.removeNode(r.containers[0].key);
          for (const e of r.edges) g.setEdge(e.from, e.to);
          dagre.layout(g);
        });
        console.log(`  dagre compound (whole graph):   ${t2.toFixed(0)} ms`);
      }
    } else console.log("  dagre: not installed (npm install --no-save @dagrejs/dagre)");
    if (ELK) {
      const mk = (key: string): any => ({ id: key, children: [], layoutOptions: { "elk.padding": "[top=24,left=16,bottom=14,right=16]" } });
      const nodes = new Map<string, any>();
      const root = { id: "root", layoutOptions: { "elk.algorithm": "layered", "elk.direction": "DOWN", "elk.hierarchyHandling": "INCLUDE_CHILDREN", "elk.layered.spacing.nodeNodeBetweenLayers": "28", "elk.spacing.nodeNode": "18" }, children: [] as any[], edges: [] as any[] };
      for (const c of r.containers.slice(1)) nodes.set(c.key, mk(c.key));
      for (const l of r.leaves) nodes.set(l.key, { id: l.key, width: l.w, height: l.h });
      for (const [ch, p] of parent) (p === r.containers[0].key ? root : nodes.get(p)).children.push(nodes.get(ch));
      root.edges = r.edges.map((e, i) => ({ id: `e${i}`, sources: [e.from], targets: [e.to] }));
      const t = performance.now();
      await new ELK().layout(root);
      console.log(`  elkjs INCLUDE_CHILDREN:         ${(performance.now() - t).toFixed(0)} ms`);
    } else console.log("  elkjs: not installed (npm install --no-save elkjs)");
  }
}
await main();
