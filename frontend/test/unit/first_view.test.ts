import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { layerTimed } from "../../src/compare/view";
import { setLang } from "../../src/i18n";
import { inputCaption } from "../../src/model/labels";
import { runLabel } from "../../src/model/format";
import { buildHierarchy, decodeOpen, defaultExpanded, encodeOpen, groupKey, layerKey, mainGroup, skeletonExpanded } from "../../src/model/hierarchy";
import { formatAt, parseAt } from "../../src/layer/view";
import { keepGraphInView } from "../../src/graph/viewport";
import { defaultRun } from "../../src/state/actions";
import { loadLayer, miniLayer } from "./helpers";

describe("first view of a layer", () => {
  it("opens the skeleton: every top-level group collapsed but the one with the most GPU time", () => {
    const L = loadLayer("dsv3_decode", 3);
    const h = buildHierarchy([L]);
    const exp = skeletonExpanded(h);
    const top = [...h.items.values()].filter((it) => it.kind === "group" && it.depth === 2);
    assert.ok(top.length >= 3);
    const hot = mainGroup(top)!;
    assert.equal(hot.timeUs, Math.max(...top.map((it) => it.timeUs)));
    for (const it of top) assert.equal(exp.has(it.key), it.key === hot.key, it.key);
    assert.ok(exp.has(layerKey(3)));
    // Inside the open group, what the default view opens stays open.
    for (const k of defaultExpanded(h)) if (k.startsWith(`${hot.key}/`)) assert.ok(exp.has(k), k);
  });

  it("without a trace opens the group with the most nodes", () => {
    const L = miniLayer(0, [["a", "norm", null, []], ["b", "mla", null, ["a"]], ["c", "moe", null, ["b"]], ["d", "moe", null, ["c"]], ["e", "moe", null, ["d"]]]);
    for (const n of L.nodes) {
      n.time_us = 0;
      n.kernels = [];
    }
    const h = buildHierarchy([L]);
    const exp = skeletonExpanded(h);
    assert.ok(exp.has(groupKey(0, "moe")));
    assert.ok(!exp.has(groupKey(0, "norm")));
    assert.ok(!exp.has(groupKey(0, "mla")));
  });
});

describe("one number, one meaning", () => {
  it("a layer's GPU time is the sum of its kernels (the trace summary's), kernels no node claimed included", () => {
    const L = loadLayer("dsv3_decode", 3);
    const h = buildHierarchy([L]);
    assert.ok(L.trace_summary);
    const nodesSum = L.nodes.reduce((a, n) => a + n.time_us, 0);
    assert.equal(h.items.get(layerKey(3))!.timeUs, L.trace_summary!.total_duration_us);
    assert.equal(h.layerTimeUs.get(3), L.trace_summary!.total_duration_us);
    assert.ok(h.items.get(layerKey(3))!.timeUs >= nodesSum - 1e-9);
  });

  it("a layer is timed by its own kernels, not by its run having a trace", () => {
    const L = loadLayer("dsv3_decode", 3);
    assert.equal(layerTimed(L), true);
    const bare = { ...L, trace_summary: null, nodes: L.nodes.map((n) => ({ ...n, kernels: [], time_us: 0 })) };
    assert.equal(layerTimed(bare), false);
  });
});

describe("labels", () => {
  it("does not double a run's name with a model named like it", () => {
    assert.equal(runLabel("qwen3_next", "qwen3_next"), "qwen3_next");
    assert.equal(runLabel("logs/qwen3-next", "Qwen3_Next"), "logs/qwen3-next");
    assert.equal(runLabel("dsv3_decode", "deepseek-v3-style"), "dsv3_decode · deepseek-v3-style");
    assert.equal(runLabel("r", null), "r");
  });

  it("translates the converter's input captions", () => {
    try {
      setLang("zh");
      assert.equal(inputCaption("RoPE cache"), "RoPE 缓存");
      assert.equal(inputCaption("Layer 2 residual output"), "第 2 层残差输出");
      assert.equal(inputCaption("Layer 7 output"), "第 7 层输出");
      assert.equal(inputCaption("batch_metadata"), "批次元数据");
      assert.equal(inputCaption("my_own_buffer"), "my_own_buffer");
      setLang("en");
      assert.equal(inputCaption("Layer 2 residual output"), "Layer 2 residual output");
      assert.equal(inputCaption("shape"), "shape value");
    } finally {
      setLang("en");
    }
  });

  it("opens the first run with a trace when none is named", () => {
    const runs: { run: string; trace?: unknown }[] = [{ run: "a" }, { run: "b", trace: { phase: "decode" } }];
    assert.equal(defaultRun(runs)?.run, "b");
    assert.equal(defaultRun(runs.slice(0, 1))?.run, "a");
    assert.equal(defaultRun([]), undefined);
  });
});

describe("open groups and place in the URL", () => {
  it("round-trips the open groups as they differ from the first view", () => {
    const L = loadLayer("dsv3_decode", 3);
    const h = buildHierarchy([L]);
    const base = skeletonExpanded(h);
    const top = [...h.items.values()].filter((it) => it.kind === "group" && it.depth === 2);
    const closed = top.find((it) => !base.has(it.key))!;
    const open = top.find((it) => base.has(it.key))!;
    const exp = new Set(base);
    exp.add(closed.key);
    exp.delete(open.key);
    const code = encodeOpen(h, exp, base);
    assert.equal(code.split(",").length, 2);
    assert.deepEqual(decodeOpen(h, code, base), exp);
    assert.equal(encodeOpen(h, base, base), "");
    // Another layer's groups: nothing to restore.
    assert.equal(decodeOpen(h, "+L40/moe,-L40/norm", base), null);
  });

  it("keeps the view's place for its layer only", () => {
    const at = formatAt(3, { x: 12.4, y: -300.6, k: 0.75 });
    assert.equal(at, "3:12,-301,0.750");
    assert.deepEqual(parseAt(at, 3), { x: 12, y: -301, k: 0.75 });
    assert.equal(parseAt(at, 4), null);
    assert.equal(parseAt("3:1,2", 3), null);
    assert.equal(formatAt("all", { x: 0, y: 0, k: 1 }), null);
  });
});

describe("never an empty pane", () => {
  it("stops a view at the graph's edge", () => {
    // A 1000 x 2000 graph in an 800 x 600 view.
    const far = keepGraphInView({ x: 5000, y: -9000, k: 0.5 }, 1000, 2000, 800, 600);
    assert.equal(far.x, 800 - 80);
    assert.equal(far.y, 80 - 1000);
    const ok = { x: -100, y: -200, k: 1 };
    assert.equal(keepGraphInView(ok, 1000, 2000, 800, 600), ok);
    // A graph smaller than the margin stays whole in view.
    const tiny = keepGraphInView({ x: -500, y: 900, k: 1 }, 40, 30, 800, 600);
    assert.ok(tiny.x + 40 >= 40 && tiny.y <= 600 - 30, JSON.stringify(tiny));
  });
});
