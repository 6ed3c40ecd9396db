import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { groupColor, heatColor, heatTime, heatValue, hotspots, maxOpTime } from "../../src/model/colors";
import { ellipsize, ellipsizeMiddle, fmtPct, fmtUs, shortDtype, shortStream } from "../../src/model/format";
import { hottestGroup } from "../../src/graph/pane";
import { buildHierarchy, expandedToDepth, groupKey, opKey } from "../../src/model/hierarchy";
import { visibleGraph } from "../../src/model/visible";
import { CHAR_W, containerHeader, kernelLine, leafLabel, MAX_CHARS, MAX_KERNEL_LINES } from "../../src/model/labels";
import { roundedPath } from "../../src/graph/paths";
import { centreOn, fit, toWorld, zoomAt } from "../../src/graph/viewport";
import { HOSTILE } from "./hostile";
import { loadLayer, miniLayer } from "./helpers";

describe("format", () => {
  it("formats microseconds", () => {
    assert.equal(fmtUs(0.854), "0.85 µs");
    assert.equal(fmtUs(9.5), "9.5 µs");
    assert.equal(fmtUs(38.46), "38.5 µs");
    assert.equal(fmtUs(412.3), "412 µs");
    assert.equal(fmtUs(1250), "1.25 ms");
    assert.equal(fmtUs(2.1e6), "2.1 s");
    assert.equal(fmtUs(null), "–");
    assert.equal(fmtPct(0.1234), "12.3%");
  });

  it("shortens dtypes and streams", () => {
    assert.equal(shortDtype("torch.bfloat16"), "bf16");
    assert.equal(shortDtype("(torch.float32, torch.int32)"), "(f32, i32)");
    assert.equal(shortDtype("SymInt"), "SymInt");
    assert.equal(shortStream("dev0/ctx1/s7"), "s7");
    assert.equal(ellipsize("abcdef", 4), "abc…");
    assert.equal(ellipsize("abc", 4), "abc");
  });
});

describe("labels", () => {
  const h = buildHierarchy([loadLayer("dsv3_decode", 1)]);

  it("shows label, SSA id + shape, weights and ⚡ kernel lines", () => {
    const it0 = h.items.get(opKey("noaux_tc_op"))!;
    const lab = leafLabel(it0);
    assert.equal(lab.lines[0].text, "noaux_tc_op");
    assert.equal(lab.lines[1].text, "%noaux_tc_op · (8x8, 8x8)");
    assert.ok(lab.lines.some((l) => l.kind === "weight" && l.text.includes("mlp_gate_e_score_correction_bias 256")));
    assert.ok(lab.lines.some((l) => l.kind === "kernel" && /^⚡ deepseek_v3_topk_kernel \d[\d.]* (µs|ms)$/.test(l.text)));
    assert.equal(lab.width, Math.max(80, Math.ceil(Math.max(...lab.lines.map((l) => l.text.length)) * CHAR_W + 16)));
  });

  it("caps long lines and many kernels, keeping the full text as a tooltip", () => {
    const moe = h.items.get(opKey("trtllm_moe_fused"))!;
    const lab = leafLabel(moe);
    assert.ok(lab.lines.every((l) => l.text.length <= MAX_CHARS));
    assert.equal(lab.lines.filter((l) => l.kind === "kernel").length, MAX_KERNEL_LINES);
    assert.ok(lab.lines.some((l) => l.kind === "more"));
    assert.ok(lab.lines.filter((l) => l.kind === "kernel").every((l) => l.full && l.full.length >= l.text.length - 2));
  });

  it("elides long kernel names in the middle and always shows the duration", () => {
    const name = "void cutlass::device_kernel<flash::FlashAttnFwdSm90<CollectiveMainloopFwd<128, 64, true>>>(Params)";
    const l = kernelLine(name, name, 1234.5);
    assert.ok(l.text.length <= MAX_CHARS, l.text);
    assert.ok(l.text.endsWith(" 1.23 ms"), l.text);
    assert.ok(l.text.startsWith("⚡ void cutlass::"), l.text);
    assert.ok(l.text.includes("…") && l.text.includes("(Params)"), l.text);
    assert.equal(l.full, `${name} (1.23 ms)`);
    assert.equal(ellipsizeMiddle("abcdefghij", 5), "ab…ij");
  });

  it("keeps hostile names as text", () => {
    const k = h.items.get(opKey("cat_3"))!;
    const lab = leafLabel(k);
    assert.ok(lab.lines.some((l) => l.full?.includes(HOSTILE)));
  });

  it("labels collapsed groups and headers with count and time share", () => {
    const g = h.items.get(groupKey(1, "moe"))!;
    const lab = leafLabel(g, h.layerTimeUs.get(1));
    assert.match(lab.lines[0].text, /^▸ moe$/);
    assert.match(lab.lines[1].text, /^65 nodes · \d+ kernels$/);
    assert.match(lab.lines[2].text, /^GPU \d+ µs \(\d+\.\d%\)$/);
    assert.match(containerHeader(g, h.layerTimeUs.get(1)).text, /^▾ moe · 65 nodes · \d+ µs \(\d+\.\d%\)$/);
    assert.match(containerHeader(h.items.get(groupKey(1, "norm", null, 1))!).text, /^▾ norm \(2\)/);
    assert.match(containerHeader(g).short, /^moe · \d+ µs$/);
  });
});

describe("runs without a trace", () => {
  // Two groups, no kernels anywhere: the layer of a run converted without a trace.
  const bare = miniLayer(0, [["a", "norm", null, []], ["b", "mla", null, ["a"]], ["c", "mla", null, ["b"]]]);

  it("knows whether a trace was mapped onto the layers", () => {
    assert.equal(buildHierarchy([bare]).traced, false);
    assert.equal(buildHierarchy([loadLayer("dsv3_decode", 1)]).traced, true);
  });

  it("says nothing about kernels on a collapsed group without a trace", () => {
    const hb = buildHierarchy([bare]);
    const lab = leafLabel(hb.items.get(groupKey(0, "mla"))!, hb.layerTimeUs.get(0), hb.traced);
    assert.deepEqual(lab.lines.map((l) => l.text), ["▸ mla", "2 nodes"]);
    // With a trace a group without kernels says so: the count is known.
    const traced = buildHierarchy([miniLayer(0, [["a", "norm", null, [], 1], ["b", "mla", null, ["a"]]])]);
    assert.equal(leafLabel(traced.items.get(groupKey(0, "mla"))!, 1, traced.traced).lines[1].text, "1 node · 0 kernels");
    assert.equal(leafLabel(traced.items.get(groupKey(0, "norm"))!, 1, traced.traced).lines[1].text, "1 node · 1 kernel");
  });

  it("opens on the group with the most nodes when no group has a GPU time", () => {
    const hb = buildHierarchy([bare]);
    const vis = visibleGraph(hb, expandedToDepth(hb, 3));
    assert.equal(hottestGroup(hb, vis), groupKey(0, "mla"));
    const timed = buildHierarchy([miniLayer(0, [["a", "norm", null, [], 5], ["b", "mla", null, ["a"], 1], ["c", "mla", null, ["b"], 1]])]);
    assert.equal(hottestGroup(timed, visibleGraph(timed, expandedToDepth(timed, 3))), groupKey(0, "norm"));
  });
});

describe("colours", () => {
  const L = miniLayer(0, [["a", "norm", null, [], 1], ["b", "mla", null, ["a"], 9], ["c", "moe", null, ["b"], 4], ["d", "other", null, ["c"]]]);
  const h = buildHierarchy([L]);

  it("picks the top-k nodes by GPU time", () => {
    assert.deepEqual([...hotspots(h, 2)], [[opKey("b"), 1], [opKey("c"), 2]]);
    assert.equal(hotspots(h, 10).size, 3, "nodes without time are never hotspots");
    assert.equal(maxOpTime(h), 9);
  });

  it("maps times to the heat scale", () => {
    assert.equal(heatValue(0, 10), 0);
    assert.equal(heatValue(10, 10), 1);
    assert.equal(heatValue(2.5, 10), 0.5);
    assert.equal(heatTime(0.5, 10), 2.5);
    assert.equal(heatColor(0, "light"), "rgb(255,247,214)");
    assert.equal(heatColor(1, "light"), "rgb(110,8,30)");
    assert.notEqual(heatColor(0.5, "dark"), heatColor(0.5, "light"));
    assert.equal(groupColor("unknown_group", "light"), groupColor("other", "light"));
  });
});

describe("geometry", () => {
  it("rounds polyline corners", () => {
    assert.equal(roundedPath([0, 0, 0, 10]), "M0,0L0,10");
    assert.equal(roundedPath([0, 0, 0, 10, 10, 10], 4), "M0,0L0,6Q0,10 4,10L10,10");
    assert.equal(roundedPath([1, 1]), "");
  });

  it("zooms around the cursor and fits", () => {
    const v = zoomAt({ x: 0, y: 0, k: 1 }, 2, 100, 50);
    const w = toWorld(v, 100, 50);
    assert.deepEqual(w, { x: 100, y: 50 });
    const f = fit({ x: 0, y: 0, w: 1000, h: 500 }, 548, 548, 24);
    assert.equal(f.k, 0.5);
    assert.equal(f.y, (548 - 250) / 2);
    assert.equal(fit({ x: 0, y: 0, w: 10, h: 10 }, 500, 500).k, 1, "never zooms in past 1");
    const c = centreOn({ x: 0, y: 0, k: 2 }, 10, 10, 100, 100);
    assert.deepEqual(c, { x: 30, y: 30, k: 2 });
  });
});
