// Bundles bench/layout_engines.ts (elkjs, optional, left external) and runs it under Node.
//   node bench/layout_engines.mjs [--big] [fixtures_dir]
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const frontend = join(here, "..");
const args = process.argv.slice(2);
let dir = args.find((a) => !a.startsWith("--"));
if (!dir) {
  dir = mkdtempSync(join(tmpdir(), "adl-bench-"));
  execFileSync("node", [join(frontend, "test", "fixtures", "gen_fixtures.mjs"), "--bench", dir], { stdio: "inherit" });
}
const out = join(mkdtempSync(join(tmpdir(), "adl-le-")), "layout_engines.mjs");
await build({ entryPoints: [join(here, "layout_engines.ts")], bundle: true, platform: "node", format: "esm", outfile: out, logLevel: "error", external: ["elkjs"] });
execFileSync("node", [out, dir, frontend, ...args.filter((a) => a.startsWith("--"))], { stdio: "inherit" });
