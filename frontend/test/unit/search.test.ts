import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildHierarchy, opKey } from "../../src/model/hierarchy";
import { buildSearchIndex, fuzzyScore, search, stepHit } from "../../src/search/search";
import { loadLayer } from "./helpers";

describe("fuzzyScore", () => {
  it("ranks exact > prefix > substring > subsequence and rejects non-matches", () => {
    const exact = fuzzyScore("mm_3", "mm_3");
    const prefix = fuzzyScore("mm", "mm_3");
    const sub = fuzzyScore("mm", "bmm_3");
    const seq = fuzzyScore("fmla", "flashinfer_mla_with_cache");
    assert.ok(exact > prefix && prefix > sub && sub > seq && seq > 0, `${exact} ${prefix} ${sub} ${seq}`);
    assert.equal(fuzzyScore("zzz", "flashinfer_mla"), -1);
    assert.equal(fuzzyScore("", "x"), -1);
  });

  it("rejects matches scattered over a long name", () => {
    assert.equal(fuzzyScore("ab", "a" + "x".repeat(200) + "b"), -1);
  });
});

describe("search", () => {
  const h = buildHierarchy([loadLayer("dsv3_decode", 1)]);
  const index = buildSearchIndex(h);

  it("finds nodes by id, op and kernel name, case-insensitively", () => {
    assert.equal(search(index, "NOAUX_TC_OP")[0].key, opKey("noaux_tc_op"));
    assert.ok(search(index, "trtllm.noaux").some((x) => x.field === "op"));
    const k = search(index, "deepseek_v3_topk");
    assert.equal(k[0].key, opKey("noaux_tc_op"));
    assert.equal(k[0].field, "kernel");
  });

  it("finds the hostile kernel name as plain text", () => {
    const hits = search(index, "<script>");
    assert.equal(hits.length, 1);
    assert.match(hits[0].text, /<script>alert\(1\)<\/script>/);
  });

  it("lists substring hits in graph order before fuzzy ones", () => {
    const hits = search(index, "fp8_linear");
    assert.ok(hits.length >= 5);
    const order = hits.map((x) => h.opKeys.indexOf(x.key));
    assert.deepEqual(order, [...order].sort((a, b) => a - b));
  });

  it("steps through hits with wrap-around", () => {
    assert.equal(stepHit(3, -1, 1), 0);
    assert.equal(stepHit(3, -1, -1), 2);
    assert.equal(stepHit(3, 2, 1), 0);
    assert.equal(stepHit(3, 0, -1), 2);
    assert.equal(stepHit(0, 0, 1), -1);
  });

  it("returns nothing for an empty query", () => {
    assert.deepEqual(search(index, "   "), []);
  });
});
