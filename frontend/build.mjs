// Builds the panel into ../tb_ad_layer/plugin/static/:
//   index.js          ES module exporting render() (TensorBoard's plugin iframe imports it)
//   layout_worker.js  classic Web Worker script (loaded as new Worker("static/layout_worker.js"))
//   THIRD_PARTY_LICENSES.txt  licences of the bundled layout engine (dagre, graphlib)
// Usage: node build.mjs [--dev]   (--dev: no minification, inline source maps)
import { build } from "esbuild";
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, "..", "tb_ad_layer", "plugin", "static");
const dev = process.argv.includes("--dev");

rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });

const common = {
  bundle: true,
  minify: !dev,
  sourcemap: dev ? "inline" : false,
  target: ["chrome109", "firefox115", "safari16"],
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
  define: { "process.env.NODE_ENV": '"production"' },
};

await build({ ...common, entryPoints: [join(here, "src", "index.ts")], format: "esm", outfile: join(outDir, "index.js") });
await build({ ...common, entryPoints: [join(here, "src", "layout", "worker.ts")], format: "iife", outfile: join(outDir, "layout_worker.js") });

// The worker bundles @dagrejs/dagre and @dagrejs/graphlib (MIT): ship their licence texts.
writeFileSync(
  join(outDir, "THIRD_PARTY_LICENSES.txt"),
  ["@dagrejs/dagre", "@dagrejs/graphlib"]
    .map((p) => `${p} ${JSON.parse(readFileSync(join(here, "node_modules", p, "package.json"), "utf8")).version} (in layout_worker.js)\n\n${readFileSync(join(here, "node_modules", p, "LICENSE"), "utf8").trim()}\n`)
    .join("\n"),
);

// The panel must not reference anything outside its origin (TensorBoard's CSP is default-src 'self').
// XML namespace identifiers are names, not fetches.
const ALLOWED = new Set(["http://www.w3.org/2000/svg", "http://www.w3.org/1999/xhtml", "http://www.w3.org/1999/xlink"]);
let bad = 0;
for (const f of readdirSync(outDir)) {
  const p = join(outDir, f);
  const src = readFileSync(p, "utf8");
  for (const m of src.matchAll(/https?:\/\/[^\s"'`)]+/g)) {
    if (!ALLOWED.has(m[0])) {
      console.error(`error: ${f} references an external URL: ${m[0]}`);
      bad++;
    }
  }
  const size = statSync(p).size;
  console.log(`${f.padEnd(20)} ${(size / 1024).toFixed(1).padStart(7)} KiB  (${(gzipSync(readFileSync(p)).length / 1024).toFixed(1)} KiB gzip)`);
}
if (bad) process.exit(1);
