import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LayeringDoubt, RunInfo } from "../../src/api/types";
import { setLang } from "../../src/i18n";
import { buildHierarchy, layerKey } from "../../src/model/hierarchy";
import { containerHeader, groupTitle } from "../../src/model/labels";
import { doubtfulLayers, doubtKind, stageDoubts } from "../../src/ui/doubts";
import { miniLayer } from "./helpers";
import type { Group, SubGroup } from "../../src/api/contract";

const GAP: LayeringDoubt = { kind: "index_gap", layer: null, message: "no layers 11-15 (5 missing): layers 0-10, 16-60 found" };
const BIG: LayeringDoubt = { kind: "oversized_layer", layer: 10, message: "layer 10 has 744 nodes, 6.0x the median of mla+moe layers (124)" };

function run(doubts: LayeringDoubt[][]): RunInfo {
  return {
    run: "r", error: null, model: "m", source_dir: "/d", created: "", converter_version: "0", schema_version: 3,
    stages: doubts.map((d, index) => ({ index, file: `00${index}_x_y.txt`, stage: "x", transform: "y", module: "(root)", node_count: 1, doubts: d })),
    default_stage: doubts.length - 1, layers: [], trace: null, ranks: [],
  };
}

describe("doubts about a layering", () => {
  it("are the shown stage's, and name the layers they concern", () => {
    const r = run([[GAP, BIG], []]);
    assert.deepEqual(stageDoubts(r, 0), [GAP, BIG]);
    assert.deepEqual(stageDoubts(r, 1), []);
    assert.deepEqual(stageDoubts(r, 7), []);
    assert.deepEqual(stageDoubts(null, 0), []);
    assert.deepEqual([...doubtfulLayers([GAP, BIG])], [10]);
  });

  it("say their kind in the panel's language, and a kind the panel does not know by its name", () => {
    setLang("zh");
    assert.equal(doubtKind("index_gap"), "层编号有缺口");
    setLang("en");
    assert.equal(doubtKind("oversized_layer"), "oversized layer");
    assert.equal(doubtKind("shared_weights_elsewhere"), "shared weights elsewhere");
  });

  it("mark a doubtful layer's box in the graph, and only that one", () => {
    const spec: [string, Group, SubGroup | null, string[]][] = [["a", "moe", null, []]];
    const doubtful = { ...miniLayer(10, spec), doubts: [BIG] };
    const h = buildHierarchy([miniLayer(9, [["b", "moe", null, []]]), doubtful]);
    const ten = h.items.get(layerKey(10))!;
    const nine = h.items.get(layerKey(9))!;
    assert.equal(groupTitle(ten), "⚠ Layer 10");
    assert.equal(groupTitle(nine), "Layer 9");
    assert.ok(containerHeader(ten).text.startsWith("▾ ⚠ Layer 10 · "));
  });
});
