// Bundles bench/repeats.ts and runs it under Node: node bench/repeats.mjs
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "adl-rep-"));
try {
  const out = join(dir, "repeats.mjs");
  await build({ entryPoints: [join(here, "repeats.ts")], bundle: true, platform: "node", format: "esm", outfile: out, logLevel: "error" });
  execFileSync("node", [out], { stdio: "inherit" });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
