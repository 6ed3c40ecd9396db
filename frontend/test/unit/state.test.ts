import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Api } from "../../src/api/client";
import { PanelActions } from "../../src/state/actions";
import { initialPanelState, Store, type PanelState } from "../../src/state/store";
import { viewState } from "../../src/state/url";
import { FIXTURES } from "./helpers";

const BROKEN = { run: "broken", error: "not a readable tb-ad-layer run store (file is not a database)" };

/** An Api answering from the unit-test fixtures, with one run that cannot be read. */
function fixtureApi(): Api {
  return new Api(async (url) => {
    const u = new URL(url, "http://panel/");
    const route = u.pathname.replace(/^\/api\//, "");
    const run = u.searchParams.get("run") ?? "";
    let body: unknown;
    if (route === "runs") {
      const runs = JSON.parse(readFileSync(join(FIXTURES, "runs.json"), "utf8")).runs;
      body = { runs: [BROKEN, ...runs] };
    } else if (route === "overview") body = JSON.parse(readFileSync(join(FIXTURES, run, "overview.json"), "utf8"));
    else return new Response(JSON.stringify({ error: `no ${route}` }), { status: 404 });
    return new Response(JSON.stringify(body), { status: 200 });
  });
}

function setUp() {
  const store = new Store<PanelState>(initialPanelState());
  const errors: string[] = [];
  const actions = new PanelActions(fixtureApi(), store, (e) => errors.push(String((e as Error).message ?? e)));
  const changes: string[][] = [];
  store.subscribe((_s, changed) => changes.push([...changed].map(String).sort()));
  return { store, actions, errors, changes };
}

describe("store", () => {
  it("applies a listener's change at once and tells every listener after the round", () => {
    const st = new Store(initialPanelState());
    const seen: [string, string[], string][] = [];
    st.subscribe((s, changed) => {
      if (changed.has("run")) st.set({ stageSide: "before" });
      seen.push(["first", [...changed].map(String), s.stageSide]);
    });
    st.subscribe((s, changed) => seen.push(["second", [...changed].map(String), s.stageSide]));
    st.set({ run: "a" });
    assert.equal(st.get().stageSide, "before");
    assert.deepEqual(seen, [
      ["first", ["run"], "after"], ["second", ["run"], "before"],
      ["first", ["stageSide"], "before"], ["second", ["stageSide"], "before"],
    ]);
  });
});

describe("actions", () => {
  it("lists the runs that cannot be read apart, with their reason", async () => {
    const { store, actions } = setUp();
    assert.ok(await actions.loadRuns());
    assert.deepEqual(store.get().unreadable, [BROKEN]);
    assert.deepEqual(store.get().runs.map((r) => r.run), ["dsv3_decode", "dsv3_no_trace"]);
  });

  it("opens a link in one change of the store; one naming a run that cannot be read says why", async () => {
    const { store, actions, errors, changes } = setUp();
    await actions.loadRuns();
    changes.length = 0;
    await actions.apply({ run: "dsv3_decode", layer: 1, node: "mm_1", view: "compare", stage: 1 });
    assert.equal(changes.length, 1);
    const st = store.get();
    assert.deepEqual([st.run, st.stage, st.layer, st.selected, st.view], ["dsv3_decode", 1, 1, "mm_1", "compare"]);
    assert.deepEqual(st.layers.map((l) => l.layer), [0, 1, 2, 3]);
    // No sides in the link: a useful pair (another run of the same model) is chosen.
    assert.deepEqual(st.compare, { a: { run: "dsv3_decode", stage: 1, layer: 1 }, b: { run: "dsv3_no_trace", stage: 3, layer: 1 }, mp: "" });
    assert.equal(viewState(st).view, "compare");
    assert.deepEqual(errors, []);
    await actions.apply({ run: "broken" });
    assert.deepEqual(errors, [`run broken cannot be read: ${BROKEN.error}`]);
    assert.equal(store.get().run, "dsv3_decode");
  });

  it("keeps the layer and a selected node across stages; a new layer drops the selection", async () => {
    const { store, actions } = setUp();
    await actions.loadRuns();
    await actions.apply({ run: "dsv3_decode", layer: 3, node: "mm_1", depth: 2 });
    await actions.chooseStage(2);
    assert.deepEqual([store.get().stage, store.get().layer, store.get().selected, store.get().depth], [2, 3, "mm_1", 2]);
    store.set({ selected: "L3/moe" });
    await actions.chooseStage(1);
    assert.equal(store.get().selected, null);
    store.set({ selected: "mm_1", stageShown: 0 });
    actions.chooseLayer("all");
    assert.deepEqual([store.get().layer, store.get().selected, store.get().depth, store.get().stageShown], ["all", null, null, null]);
  });
});
