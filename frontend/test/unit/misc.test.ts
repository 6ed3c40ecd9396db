import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Api, ApiError, apiUrl, downloadUrl } from "../../src/api/client";
import { allKeys, detectLang, rawEntry, t } from "../../src/i18n";

describe("i18n", () => {
  it("has English and Chinese for every key, with the same placeholders", () => {
    for (const k of allKeys()) {
      const e = rawEntry(k);
      assert.ok(e.en && e.zh, k);
      const ph = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort().join(",");
      assert.equal(ph(e.en), ph(e.zh), k);
    }
  });

  it("fills placeholders and picks the language", () => {
    assert.equal(t("nodes", { n: 3 }, "en"), "3 nodes");
    assert.equal(t("nodes", { n: 3 }, "zh"), "3 个节点");
    assert.equal(t("layerOption", { n: 5, kind: "moe" }, "en"), "Layer 5 · moe");
    assert.equal(detectLang(null, "zh-CN"), "zh");
    assert.equal(detectLang("en", "zh-CN"), "en");
    assert.equal(detectLang(null, undefined), "en");
  });
});

describe("api client", () => {
  it("builds relative URLs only", () => {
    assert.equal(apiUrl("layer", { run: "a/b c", stage: 3, layer: 0, x: undefined }), "api/layer?run=a%2Fb+c&stage=3&layer=0");
    assert.equal(apiUrl("runs"), "api/runs");
    assert.equal(downloadUrl("layer.dot", { run: "r" }), "api/download/layer.dot?run=r");
  });

  it("returns JSON, shares a request in flight and keeps nothing for the life of the tab", async () => {
    const calls: [string, RequestInit | undefined][] = [];
    let version = 1;
    const api = new Api(async (url, init) => {
      calls.push([url, init]);
      return new Response(JSON.stringify({ layer: 1, nodes: [], version }), { status: 200 });
    });
    const [a, b] = await Promise.all([api.layer("r", 2, 1), api.layer("r", 2, 1)]);
    assert.equal(a, b);
    assert.equal(calls.length, 1);
    assert.equal(calls[0][0], "api/layer?run=r&stage=2&layer=1");
    // Every request revalidates the browser's copy (ETag) instead of trusting it.
    assert.equal(calls[0][1]?.cache, "no-cache");
    version = 2;
    const c = (await api.layer("r", 2, 1)) as unknown as { version: number };
    assert.equal(c.version, 2);
    assert.equal(calls.length, 2);
  });

  it("turns error bodies into ApiError with the known values", async () => {
    const api = new Api(async () => new Response(JSON.stringify({ error: "unknown layer: 99", known: [0, 1] }), { status: 404 }));
    await assert.rejects(api.layer("r", 0, 99), (e: unknown) => e instanceof ApiError && e.status === 404 && e.message === "unknown layer: 99" && (e.known ?? []).length === 2);
    const bad = new Api(async () => new Response("<html>oops</html>", { status: 502 }));
    await assert.rejects(bad.runs(), /did not answer with JSON/);
    const down = new Api(async () => {
      throw new TypeError("Failed to fetch");
    });
    await assert.rejects(down.runs(), /api\/runs failed: Failed to fetch/);
  });
});

describe("source hygiene", () => {
  const src = join(process.env.ADL_FIXTURES ?? "test/fixtures", "..", "..", "src");
  const files = readdirSync(src, { recursive: true }).map(String).filter((f) => f.endsWith(".ts"));

  it("never writes markup from strings (names are text only)", () => {
    assert.ok(files.length > 10);
    for (const f of files) {
      const s = readFileSync(join(src, f), "utf8");
      assert.doesNotMatch(s, /\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|createContextualFragment|DOMParser/, f);
    }
  });

  it("uses no absolute or external URLs", () => {
    for (const f of files) {
      const s = readFileSync(join(src, f), "utf8");
      for (const m of s.matchAll(/["'`](\/data\/|https?:\/\/)[^"'`]*/g)) {
        assert.ok(m[0].includes("www.w3.org/2000/svg"), `${f}: ${m[0]}`);
      }
      assert.doesNotMatch(s, /new Worker\(\s*URL\.createObjectURL|blob:/, f);
    }
  });
});
