// Layout engine comparison in Node on the benchmark fixtures (one CPU core, no browser):
//   panel          the panel's engine: @dagrejs/dagre once per expanded group (src/layout/group.ts,
//                  the Netron / Model Explorer scheme) + nesting, cross-group routing and the
//                  per-group cache (src/layout/engine.ts), for each dagre ranker; cold cache, then
//                  warm (everything cached) and after collapsing one group
//   dagre/compound @dagrejs/dagre on the whole compound graph (for comparison)
//   elk            elkjs layered, hierarchyHandling INCLUDE_CHILDREN (optional: not a dependency,
//                  `npm install --no-save elkjs` to include it)
// Run: node bench/layout_engines.mjs [--big]
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { LayerResponse } from "../src/api/types";
import { clearLayoutCache, configureEngine, layoutGraph } from "../src/layout/engine";
import { buildLayoutRequest } from "../src/layout/request";
import { buildHierarchy, expandedToDepth, maxGroupDepth, toggleGroup } from "../src/model/hierarchy";
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
  const ex = expandedToDepth(h, maxGroupDepth(h) + 1);
  const v = visibleGraph(h, ex);
  // The same view with the first layer's largest group collapsed (what one click re-lays out).
  const big = v.containers.slice(1).sort((a, b) => b.children.length - a.children.length)[0];
  const toggled = big ? buildLayoutRequest(h, visibleGraph(h, toggleGroup(ex, big.key)), 2).req : null;
  return Object.assign(buildLayoutRequest(h, v, 1).req, { toggled });
}

type Req = ReturnType<typeof request>;
const RANKERS = ["network-simplex", "tight-tree", "longest-path"] as const;
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
    for (const shareStructure of [false, true]) {
      for (const ranker of RANKERS) {
        configureEngine({ ranker, shareStructure });
        const cold = [0, 1, 2].map(() => time(() => (clearLayoutCache(), layoutGraph(r))));
        const warm = time(() => layoutGraph(r));
        const tog = r.toggled ? time(() => layoutGraph(r.toggled!)) : NaN;
        console.log(`  panel (dagre per group, ${ranker.padEnd(15)}, cache by ${shareStructure ? "structure" : "identity "}): cold ${cold.map((x) => x.toFixed(0)).join(", ")} ms; cached ${warm.toFixed(0)} ms; one group collapsed ${tog.toFixed(0)} ms`);
      }
    }
    configureEngine({ ranker: "network-simplex", shareStructure: true });
    const size = new Map(r.leaves.map((l) => [l.key, l]));
    const parent = new Map<string, string>();
    for (const c of r.containers) for (const ch of c.children) parent.set(ch, c.key);
    if (dagre) {
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
    }
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
