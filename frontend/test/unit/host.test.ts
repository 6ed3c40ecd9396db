import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { hostHash, parseHostHash, pluginData } from "../../src/host/tensorboard";
import { rawEntry } from "../../src/i18n";
import { initialPanelState, Store } from "../../src/state/store";

describe("TensorBoard URL plugin data", () => {
  it("writes the panel's entries as p.ad_layer.<key>, keeping TensorBoard's own", () => {
    const h = hostHash("#ad_layer&runFilter=abc&p.ad_layer.run=old", { run: "dsv3 decode", layer: "5", node: "" });
    assert.equal(h, "#ad_layer&runFilter=abc&p.ad_layer.run=dsv3%20decode&p.ad_layer.layer=5");
    assert.deepEqual(pluginData(h), { run: "dsv3 decode", layer: "5" });
    assert.deepEqual(parseHostHash(h).tab, "ad_layer");
    // No tab yet (TensorBoard's root): the panel's tab.
    assert.equal(hostHash("", { view: "compare" }), "#ad_layer&p.ad_layer.view=compare");
  });
});

describe("store", () => {
  it("tells listeners which keys changed, once per change", () => {
    const st = new Store(initialPanelState());
    const seen: string[][] = [];
    st.subscribe((_s, changed) => seen.push([...changed].map(String)));
    st.set({ run: "a", layer: 3 });
    st.set({ run: "a" });
    st.set({ compare: { a: { run: "a", stage: 1, layer: 2 }, b: { run: "b", stage: 1, layer: 2 }, mp: "" } });
    st.set({ compare: { a: { run: "a", stage: 1, layer: 2 }, b: { run: "b", stage: 1, layer: 2 }, mp: "" } });
    assert.deepEqual(seen, [["run", "layer"], ["compare"]]);
    assert.equal(st.get().layer, 3);
  });
});

describe("wording", () => {
  it("has different words for phase (prefill/decode) and stage (a transform) in Chinese", () => {
    const phase = rawEntry("phase").zh;
    const stage = rawEntry("stage").zh;
    assert.notEqual(phase, stage);
    assert.ok(!phase.includes(stage) && !stage.includes(phase));
    assert.ok(!rawEntry("phaseAll").zh.includes(stage));
  });
});
