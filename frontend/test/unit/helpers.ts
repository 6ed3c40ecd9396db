import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { LayerResponse, TimelineResponse } from "../../src/api/types";
import type { Group, SubGroup } from "../../src/api/contract";

export const FIXTURES = process.env.ADL_FIXTURES ?? join(process.cwd(), "test", "fixtures");

export function loadLayer(run: string, layer: number): LayerResponse {
  return JSON.parse(readFileSync(join(FIXTURES, run, `layer_${layer}.json`), "utf8")) as LayerResponse;
}

export function loadTimeline(run: string): TimelineResponse {
  return JSON.parse(readFileSync(join(FIXTURES, run, "timeline.json"), "utf8")) as TimelineResponse;
}

/** A tiny layer built by hand: ids in dump order with group/sub-group and inputs. */
export function miniLayer(layer: number, spec: [string, Group, SubGroup | null, string[], number?][], ext: string[] = []): LayerResponse {
  const nodes = spec.map(([id, group, sub, inputs, time]) => ({
    id, op: `aten.${id}.default`, label: id, node_kind: "call" as const, shape: "8x16", dtype: "torch.bfloat16",
    group, sub_group: sub, stream: "main" as const, inputs, weights: [], args: "", line: 0,
    kernels: time ? [{ kernel: `k_${id}`, name: `void k_${id}<float>()`, duration_us: time, replay_duration_us: time, stream: "dev0/ctx1/s7", start_us: 0, stats: null }] : [],
    time_us: time ?? 0,
  }));
  const edges = nodes.flatMap((n) => n.inputs.map((i) => ({ from: i, to: n.id, shape: "8x16" })));
  return {
    run: "mini", stage: 0, rank: null, layer, kind: "moe", attention: "mla", source_file: "mini.txt", module: "(root)", nodes, edges,
    external_inputs: ext.map((id) => ({ id, label: `input ${id}`, shape: "8x16", dtype: "torch.bfloat16", kind: "residual", layer: null })),
    group_counts: {}, trace_summary: null, doubts: [],
  };
}
