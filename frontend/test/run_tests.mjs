// Unit tests: bundles every test/**/*.test.ts with esbuild and runs them with Node's test runner.
//   node test/run_tests.mjs [filter]
import { build } from "esbuild";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const filter = process.argv[2] ?? "";
const files = readdirSync(here, { recursive: true })
  .map(String)
  .filter((f) => f.endsWith(".test.ts") && f.includes(filter))
  .sort()
  .map((f) => join(here, f));
if (!files.length) {
  console.error(`no test files match "${filter}"`);
  process.exit(1);
}
const out = mkdtempSync(join(tmpdir(), "adl-tests-"));
try {
  await build({
    entryPoints: files,
    outdir: out,
    outbase: here,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node18",
    sourcemap: "inline",
    logLevel: "warning",
    outExtension: { ".js": ".mjs" },
  });
  const compiled = files.map((f) => join(out, relative(here, f).replace(/\.ts$/, ".mjs")));
  const r = spawnSync(process.execPath, ["--enable-source-maps", "--test", ...compiled], { stdio: "inherit", env: { ...process.env, ADL_FIXTURES: join(here, "fixtures") } });
  process.exitCode = r.status ?? 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
