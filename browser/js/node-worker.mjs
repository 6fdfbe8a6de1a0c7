// The Node runner's worker thread: core.mjs on the build's files read from disk (their sha256 checked first, as
// the browser checks them), plus host folders mounted into Pyodide's file system (exercise authors, tests).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parentPort, workerData } from "node:worker_threads";
import { serve } from "./core.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const site = resolve(workerData.site);
let manifest = null;

function checked(rel) {
  const file = manifest.files[rel];
  if (!file) throw new Error(`${rel}: not in the manifest`);
  const bytes = readFileSync(join(site, rel));
  const got = createHash("sha256").update(bytes).digest("hex");
  if (got !== file.sha256) {
    throw new Error(`integrity check failed for ${rel}: expected sha256 ${file.sha256}, got ${got}`);
  }
  return bytes;
}

const handle = serve({
  post: (msg) => parentPort.postMessage(msg),
  resolve: (rel) => join(site, rel) + (rel.endsWith("/") ? "/" : ""),
  readBytes: (rel) => new Uint8Array(checked(rel)),
  readText: (name) => readFileSync(join(here, name), "utf8"),
  async importPyodide(rel) {
    for (const name of Object.keys(manifest.files)) checked(name); // Pyodide reads them itself, unchecked in Node
    return (await import(pathToFileURL(join(site, rel)).href)).loadPyodide;
  },
  prepare(pyodide, init) {
    for (const [host, guest] of (init.options && init.options.mounts) || []) {
      pyodide.FS.mkdirTree(guest);
      pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: resolve(host) }, guest);
    }
  },
});

parentPort.on("message", (msg) => {
  if (msg.type === "init") manifest = msg.manifest;
  handle(msg);
});
