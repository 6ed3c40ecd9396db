import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Api } from "../../src/api/client";
import { exportFileName, inlineStyle, pngScale } from "../../src/graph/export";
import { fitMap, viewAt, viewRect, wantsMinimap } from "../../src/graph/minimap";
import { allKeys, rawEntry, t } from "../../src/i18n";
import { formatHash, parseHash } from "../../src/state/hash";
import { SHORTCUTS } from "../../src/ui/help";
import { HOSTILE } from "./hostile";

describe("minimap", () => {
  it("fits the layout and maps the view rectangle both ways", () => {
    const m = fitMap(2000, 1000, 200, 200, 4);
    assert.equal(m.s, (200 - 8) / 2000);
    assert.equal(m.w, 200);
    assert.ok(m.h < 200);
    const v = { x: -500, y: -100, k: 0.5 }; // world (1000, 200) is at the screen's top-left
    const r = viewRect(v, 800, 600, m);
    assert.ok(Math.abs(r.x - (1000 * m.s + 4)) < 1e-9);
    assert.ok(Math.abs(r.y - (200 * m.s + 4)) < 1e-9);
    assert.ok(Math.abs(r.w - 1600 * m.s) < 1e-9);
    // Clicking a minimap point centres the view on that world point, same zoom.
    const c = viewAt(1500 * m.s + 4, 500 * m.s + 4, m, v, 800, 600);
    assert.equal(c.k, 0.5);
    assert.ok(Math.abs((400 - c.x) / c.k - 1500) < 1e-9);
    assert.ok(Math.abs((300 - c.y) / c.k - 500) < 1e-9);
  });

  it("shows only for graphs too big to read when fitted", () => {
    assert.equal(wantsMinimap(800, 500, 1000, 700), false);
    assert.equal(wantsMinimap(3000, 500, 1000, 700), true);
    assert.equal(wantsMinimap(800, 5000, 1000, 700), true);
    assert.equal(wantsMinimap(0, 0, 1000, 700), false);
  });
});

describe("export", () => {
  it("inlines presentation styles, skipping defaults and what an element does not use", () => {
    const css: Record<string, string> = {
      display: "inline", fill: "rgb(1, 2, 3)", stroke: "none", "stroke-width": "1.2px", opacity: "1",
      "font-family": 'ui-monospace, "DejaVu Sans Mono", monospace', "font-size": "11px", "text-anchor": "start",
    };
    const get = (p: string) => css[p] ?? "";
    assert.equal(inlineStyle(get, "rect"), "fill:rgb(1, 2, 3);stroke:none;stroke-width:1.2px");
    assert.equal(inlineStyle(get, "text"), "fill:rgb(1, 2, 3);stroke:none;stroke-width:1.2px;font-family:ui-monospace, 'DejaVu Sans Mono', monospace;font-size:11px");
    assert.equal(inlineStyle(get, "g"), "");
    assert.equal(inlineStyle((p) => (p === "opacity" ? "0.5" : ""), "g"), "opacity:0.5");
  });

  it("scales PNGs to 2x within canvas limits", () => {
    assert.equal(pngScale(1000, 800), 2);
    assert.ok(pngScale(20000, 1000) * 20000 <= 16384);
    assert.ok(pngScale(12000, 12000) ** 2 * 12000 * 12000 <= 50e6 + 1);
    assert.equal(pngScale(0, 10), 1);
  });

  it("makes safe file names from run names", () => {
    assert.equal(exportFileName(["team/dsv3 decode", "stage3", "layer5"], "svg"), "team-dsv3-decode_stage3_layer5.svg");
    assert.equal(exportFileName([HOSTILE], "png").includes("<"), false);
    assert.equal(exportFileName([], "svg"), "ad_layer.svg");
  });
});

describe("URL hash: views", () => {
  it("round-trips a comparison", () => {
    const s = { run: "r", view: "compare" as const, a: { run: "a/b", stage: 3, layer: 5 }, b: { run: "c", stage: 0, layer: 10 } };
    assert.deepEqual(parseHash(formatHash(s)), s);
  });

  it("drops incomplete or invalid sides and unknown views", () => {
    assert.deepEqual(parseHash("#view=compare&arun=x&astage=1"), { view: "compare" });
    assert.deepEqual(parseHash("#view=bogus&brun=x&bstage=-1&blayer=2"), {});
    assert.deepEqual(parseHash("#view=layer"), {});
    assert.equal(formatHash({ view: "layer", run: "r" }), "#run=r");
  });

  it("keeps the stage view's side", () => {
    assert.deepEqual(parseHash(formatHash({ view: "stages", sv: "before", stage: 2 })), { view: "stages", sv: "before", stage: 2 });
    assert.deepEqual(parseHash("#sv=sideways"), {});
  });
});

describe("i18n of the new views", () => {
  it("every string used in the sources exists in both languages, and they differ", () => {
    const src = join(process.env.ADL_FIXTURES ?? "test/fixtures", "..", "..", "src");
    const keys = new Set(allKeys() as string[]);
    const files = ["app.ts", "layer/view.ts", "compare/view.ts", "stages/view.ts", "overview/view.ts", "ui/help.ts", "graph/pane.ts", "state/actions.ts", "views/table.ts"];
    let n = 0;
    for (const f of files) {
      const s = readFileSync(join(src, f), "utf8");
      for (const m of s.matchAll(/\bt\("(\w+)"/g)) {
        assert.ok(keys.has(m[1]), `${f}: ${m[1]} missing from i18n.ts`);
        n++;
      }
    }
    assert.ok(n > 80);
    const same = ["searchCount", "stageDiff", "dlDot", "dlTrace", "statusLine", "roofSizeDim"];
    for (const k of allKeys()) {
      const e = rawEntry(k);
      if (!same.includes(k) && /[A-Za-z]{3}/.test(e.en)) assert.notEqual(e.en, e.zh, `${k} is not translated`);
    }
  });

  it("names every shortcut of the help overlay in both languages", () => {
    for (const sec of SHORTCUTS) {
      assert.ok(t(sec.title, undefined, "zh") !== t(sec.title, undefined, "en"));
      for (const it of sec.items) assert.ok(t(it.what, undefined, "zh").length > 0);
    }
  });
});

describe("api client: compare", () => {
  it("asks api/compare with relative URL and both sides", async () => {
    const calls: string[] = [];
    const api = new Api(async (url) => {
      calls.push(url);
      return new Response(JSON.stringify({ counts: {} }), { status: 200 });
    });
    await api.compare({ run: "a/b", stage: 3, layer: 5 }, { run: "c", stage: 0, layer: 10 });
    assert.deepEqual(calls, ["api/compare?a_run=a%2Fb&a_stage=3&a_layer=5&b_run=c&b_stage=0&b_layer=10"]);
  });
});

describe("phase chooser", () => {
  it("filters runs by their trace's phase and round-trips through the hash", async () => {
    const { runsForPhase, parseHash, formatHash } = await import("../../src/state/hash");
    const runs = [{ run: "d", trace: { phase: "decode" } }, { run: "p", trace: { phase: "prefill" } }, { run: "n", trace: null }];
    assert.deepEqual(runsForPhase(runs, undefined).map((r) => r.run), ["d", "p", "n"]);
    assert.deepEqual(runsForPhase(runs, "decode").map((r) => r.run), ["d"]);
    assert.deepEqual(runsForPhase(runs, "prefill").map((r) => r.run), ["p"]);
    assert.deepEqual(runsForPhase(runs, "none").map((r) => r.run), ["n"]);
    const st = parseHash("#phase=prefill&run=p&layer=3");
    assert.equal(st.phase, "prefill");
    assert.equal(parseHash(formatHash(st)).phase, "prefill");
    assert.equal(parseHash("#phase=bogus").phase, undefined);
  });
});
