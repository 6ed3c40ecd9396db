import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatHash, parseHash, sameState } from "../../src/state/hash";

describe("URL hash state", () => {
  it("round-trips", () => {
    const s = { run: "dsv3/decode run", stage: 12, layer: 5, node: "mm_3", color: "time" as const, depth: 2, tl: "all" as const };
    const h = formatHash(s);
    assert.ok(h.startsWith("#run=dsv3%2Fdecode+run&stage=12&layer=5&node=mm_3"));
    assert.deepEqual(parseHash(h), s);
    assert.ok(sameState(s, parseHash(h)));
  });

  it("accepts layer=all and stage=last", () => {
    assert.deepEqual(parseHash("#run=a&stage=last&layer=all"), { run: "a", layer: "all" });
  });

  it("ignores invalid values instead of failing", () => {
    assert.deepEqual(parseHash("#stage=x&layer=-1&color=red&depth=99&tl=no&node="), {});
    assert.deepEqual(parseHash(""), {});
    assert.deepEqual(parseHash("#%E0%A4%A"), {});
  });

  it("keeps names with markup as plain strings", () => {
    const s = parseHash(formatHash({ run: "<img src=x onerror=alert(1)>", node: "a&b=c" }));
    assert.equal(s.run, "<img src=x onerror=alert(1)>");
    assert.equal(s.node, "a&b=c");
  });

  it("writes nothing for an empty state", () => {
    assert.equal(formatHash({}), "");
  });
});
