import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { RunInfo } from "../../src/api/types";
import { allKeys, rawEntry } from "../../src/i18n";
import { formatHash, KEYS, parseHash, type ViewState } from "../../src/state/hash";
import { initialPanelState, type PanelState } from "../../src/state/store";
import { viewState } from "../../src/state/url";
import { SHORTCUTS } from "../../src/ui/help";
import { DEFAULT_VIEW, VIEW_TABLE, viewEntries, viewEntry } from "../../src/views/table";
import { CHOOSERS } from "../../src/views/view";

/** A value of every view-owned URL field (a field without one here fails the round trip test). */
const FIELD_EXAMPLES: Record<string, unknown> = {
  open: "+L3/moe,-L3/norm",
  at: "3:10,-20,0.750",
  mp: "mm_1>mm_2,add_3>add_4",
  a: { run: "team/dsv3 decode", stage: 3, layer: 5 },
  b: { run: "dsv3 & <prefill>", stage: 0, layer: 40 },
  sv: "before",
  ss: 2,
  versus: "dsv3 & <prefill>",
  aopen: "-L3/moe",
  bopen: "+L4/gdn/gdn_delta_rule~2/*1",
  aat: "3:16,-500,0.750",
  bat: "4:-11,20,1.000",
};

/** Per view, a store state that puts every one of its URL fields in the URL. */
const STATE_EXAMPLES: Record<string, Partial<PanelState>> = {
  layer: { open: "+L3/moe,-L3/norm", at: "3:10,-20,0.750" },
  compare: {
    compare: {
      a: { run: "r1", stage: 1, layer: 2 }, b: { run: "r2", stage: 3, layer: 4 }, mp: "x>y",
      panes: { aopen: "-L2/moe", bopen: "+L4/gdn", aat: "2:16,-500,0.750", bat: "4:-11,20,1.000" },
    },
  },
  stages: { stageSide: "before", stageShown: 4, stage: 1 },
  timing: { compare: { a: { run: "r1", stage: 0, layer: 0 }, b: { run: "r2", stage: 0, layer: 0 }, mp: "" } },
};

function state(patch: Partial<PanelState>): PanelState {
  return { ...initialPanelState(), run: "r1", ...patch };
}

/** The URL state with its undefined fields left out (as parseHash returns it). */
function defined(vs: ViewState): Record<string, unknown> {
  return Object.fromEntries(Object.entries(vs).filter(([, v]) => v !== undefined));
}

describe("table of views", () => {
  it("has unique ids and number keys, the first view being the default", () => {
    const ids = viewEntries().map((e) => e.id);
    assert.equal(new Set(ids).size, ids.length);
    const keys = viewEntries().map((e) => e.key);
    assert.equal(new Set(keys).size, keys.length);
    for (const k of keys) assert.match(k, /^[1-9]$/);
    assert.equal(DEFAULT_VIEW, VIEW_TABLE[0].id);
    assert.equal(viewEntry("bogus"), undefined);
    for (const id of ids) assert.equal(viewEntry(id)?.id, id);
  });

  it("names every tab in both languages", () => {
    const known = new Set<string>(allKeys());
    const tabs = new Set<string>();
    for (const e of viewEntries()) {
      assert.ok(known.has(e.tab), `${e.id}: no string ${e.tab}`);
      const s = rawEntry(e.tab);
      assert.ok(s.en.trim() && s.zh.trim(), `${e.id}: ${e.tab} is empty in a language`);
      assert.notEqual(s.en, s.zh, `${e.id}: ${e.tab} is not translated`);
      tabs.add(e.tab);
    }
    assert.equal(tabs.size, viewEntries().length);
  });

  it("shows only the toolbar's choosers", () => {
    for (const e of viewEntries()) {
      for (const c of e.choosers) assert.ok(CHOOSERS.includes(c), `${e.id}: ${c}`);
      assert.equal(new Set(e.choosers).size, e.choosers.length);
    }
  });

  it("gives every URL parameter to one owner", () => {
    const owner = new Map<string, string>(KEYS.map((k) => [k, "panel"]));
    const fields = new Map<string, string>(KEYS.map((k) => [k, "panel"]));
    for (const e of viewEntries()) {
      for (const [name, field] of Object.entries(e.url)) {
        assert.ok(!fields.has(name), `${e.id}.${name} is also ${fields.get(name)}'s`);
        fields.set(name, e.id);
        for (const p of field.params) {
          assert.ok(!owner.has(p), `URL parameter ${p} of ${e.id} is also ${owner.get(p)}'s`);
          owner.set(p, e.id);
        }
      }
    }
  });

  it("round-trips each view's URL fields through the URL", () => {
    for (const e of viewEntries()) {
      for (const name of Object.keys(e.url)) {
        assert.ok(name in FIELD_EXAMPLES, `no example for ${e.id}.${name}: add one to FIELD_EXAMPLES`);
        const vs = { run: "r", view: e.id, [name]: FIELD_EXAMPLES[name] } as ViewState;
        const back = parseHash(formatHash(vs));
        assert.deepEqual(back, defined({ ...vs, view: e.id === DEFAULT_VIEW ? undefined : e.id }), `${e.id}.${name}`);
      }
    }
  });

  it("round-trips each view's state through the URL into the store", () => {
    for (const e of viewEntries()) {
      if (Object.keys(e.url).length) assert.ok(e.id in STATE_EXAMPLES, `no store example for ${e.id}: add one to STATE_EXAMPLES`);
      const st = state({ view: e.id, ...STATE_EXAMPLES[e.id] });
      const vs = viewState(st);
      for (const name of Object.keys(e.url)) assert.notEqual((vs as Record<string, unknown>)[name], undefined, `${e.id}.${name} not in the URL`);
      const parsed = parseHash(formatHash(vs));
      const view = parsed.view ?? DEFAULT_VIEW;
      assert.deepEqual({ ...parsed }, defined(vs), e.id);
      // What opening that URL sets in the store gives the same URL back.
      const fresh = state({});
      const opened: PanelState = { ...fresh, stage: st.stage, view };
      for (const x of viewEntries()) Object.assign(opened, x.fromUrl(parsed as Record<string, unknown>, opened, x.id === opened.view));
      assert.deepEqual(defined(viewState(opened)), defined(vs), e.id);
    }
  });

  it("writes a view's own URL fields only while it is shown", () => {
    const st = state({ view: DEFAULT_VIEW, ...Object.assign({}, ...Object.values(STATE_EXAMPLES)) });
    const vs = viewState(st) as Record<string, unknown>;
    for (const e of viewEntries()) {
      if (e.id === DEFAULT_VIEW) continue;
      for (const name of Object.keys(e.url)) assert.equal(vs[name], undefined, `${e.id}.${name}`);
    }
  });

  it("offers downloads with unique test ids", () => {
    const run = { run: "r1", trace: { phase: "decode" }, stages: [], layers: [], default_stage: 0 } as unknown as RunInfo;
    for (const e of viewEntries()) {
      const st = state({ view: e.id, ...STATE_EXAMPLES[e.id] });
      const ids = e.downloads(st, run).map((d) => d.testid);
      assert.equal(new Set(ids).size, ids.length, e.id);
      for (const d of e.downloads(st, run)) assert.match(d.href, /^api\/download\//);
    }
    // A whole stage is no one layer: only the trace.
    assert.deepEqual(viewEntry(DEFAULT_VIEW)!.downloads(state({ layer: "all" }), run).map((d) => d.testid), ["download-trace"]);
  });

  it("lists the views' number keys in the help", () => {
    const keys = SHORTCUTS.flatMap((s) => s.items).find((i) => i.what === "keyViews")?.keys;
    assert.deepEqual(keys, viewEntries().map((e) => e.key));
  });
});
