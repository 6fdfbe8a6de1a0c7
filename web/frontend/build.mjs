// Bundles the page scripts (and CodeMirror 6) into web/static/dist/: `npm ci && npm run build`.
// Prints each output's size, raw and gzipped (what a learner downloads).
import * as esbuild from "esbuild";
import { gzipSync } from "node:zlib";
import { readFileSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const outdir = fileURLToPath(new URL("../static/dist/", import.meta.url));
const src = (name) => fileURLToPath(new URL(`src/${name}`, import.meta.url));
rmSync(outdir, { recursive: true, force: true });

const common = { bundle: true, minify: true, target: ["es2020"], outdir, legalComments: "none", metafile: true, logLevel: "warning" };
const results = await Promise.all([
  // ES modules, loaded with <script type="module">
  esbuild.build({ ...common, format: "esm", entryPoints: { exercise: src("exercise.js"), list: src("list.js"), server: src("server.js") } }),
  // a classic script in <head>: sets the theme before the first paint
  esbuild.build({ ...common, format: "iife", entryPoints: { theme: src("theme.js") } }),
]);
for (const r of results) {
  for (const file of Object.keys(r.metafile.outputs)) {
    const bytes = readFileSync(file);
    console.log(`${file.padEnd(28)} ${(bytes.length / 1024).toFixed(1).padStart(7)} KiB  ${(gzipSync(bytes).length / 1024).toFixed(1).padStart(6)} KiB gzip`);
  }
}
