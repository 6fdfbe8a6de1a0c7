// The browser's judge worker (a module Web Worker started by supervisor.mjs): core.mjs, with every file it
// loads checked against the build's manifest. fetch() is wrapped so that each request for a manifest file
// carries its Subresource Integrity (the wheels' hashes also come from the lock file, through Pyodide): the
// browser refuses a file whose bytes differ. Nothing is fetched from another host.
import { serve } from "./core.mjs";

let manifest = null;
let base = null; // the manifest's URL: every manifest path is relative to it
const nativeFetch = globalThis.fetch.bind(globalThis);
const byURL = new Map();
let refuse; // rejects the boot as soon as one checked file fails (Pyodide swallows some of those errors)
const refused = new Promise((_, reject) => { refuse = reject; });
refused.catch(() => {});

function sri(hex) {
  const bytes = hex.match(/../g).map((h) => parseInt(h, 16));
  return "sha256-" + btoa(String.fromCharCode(...bytes));
}

async function sha256hex(buffer) {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", buffer));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function explain(url, rel, error) {
  // the fetch failed: say whether the bytes were wrong (integrity) or the file could not be fetched at all
  try {
    const r = await nativeFetch(url, { cache: "no-store" });
    if (!r.ok) return new Error(`could not fetch ${rel}: HTTP ${r.status}`);
    const got = await sha256hex(await r.arrayBuffer());
    const want = manifest.files[rel].sha256;
    if (got !== want) return new Error(`integrity check failed for ${rel}: expected sha256 ${want}, got ${got}; the browser refused it`);
  } catch (e) {
    /* fall through */
  }
  return new Error(`could not fetch ${rel}: ${error && error.message ? error.message : error}`);
}

globalThis.fetch = async function fetchChecked(input, init = {}) {
  const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url, base || location.href);
  if (url.origin !== location.origin) throw new Error(`refused: the judge fetches nothing from another host (${url.href})`);
  const rel = byURL.get(url.href);
  if (!rel) return nativeFetch(input, init);
  const opts = { ...init, integrity: sri(manifest.files[rel].sha256) };
  try {
    return await nativeFetch(url.href, opts);
  } catch (e) {
    const error = await explain(url.href, rel, e);
    refuse(error);
    throw error;
  }
};

async function checkedBytes(rel) {
  const r = await fetch(new URL(rel, base).href);
  if (!r.ok) throw new Error(`could not fetch ${rel}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

async function importChecked(rel) {
  const bytes = await checkedBytes(rel);
  const blob = URL.createObjectURL(new Blob([bytes], { type: "text/javascript" }));
  try {
    return await import(blob);
  } finally {
    URL.revokeObjectURL(blob);
  }
}

// Python's memory right after it started (core.mjs), kept in this browser's Cache API under a key made of the
// runtime files' sha256 and the env: a changed runtime file makes another key (the old entry is deleted when the
// new one is saved), and a kept snapshot whose bytes no longer match the sha256 saved beside them is refused.
const SNAPSHOTS = "minisgl-judge-python-snapshot";
const RUNTIME = ["pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip"];

async function snapshotKey() {
  const hashes = RUNTIME.map((n) => manifest.files[manifest.indexURL + n].sha256);
  const id = await sha256hex(new TextEncoder().encode(JSON.stringify([hashes, manifest.env])));
  return new URL(`python-snapshot/${id}`, base).href; // a Cache API key only: never requested from the site
}

const snapshot = globalThis.caches && {
  async load() {
    const key = await snapshotKey();
    const r = await (await caches.open(SNAPSHOTS)).match(key);
    if (!r) return null;
    const bytes = new Uint8Array(await r.arrayBuffer());
    if ((await sha256hex(bytes)) !== r.headers.get("x-sha256")) throw new Error("its bytes do not match their sha256");
    return bytes;
  },
  async save(bytes) {
    const key = await snapshotKey();
    const cache = await caches.open(SNAPSHOTS);
    for (const old of await cache.keys()) if (old.url !== key) await cache.delete(old);
    const headers = { "content-type": "application/octet-stream", "x-sha256": await sha256hex(bytes) };
    await cache.put(key, new Response(bytes, { headers }));
  },
  async drop() {
    await (await caches.open(SNAPSHOTS)).delete(await snapshotKey());
  },
};

const glue = fetch(new URL("glue.py", import.meta.url).href).then((r) => r.text());
let glueText = null;

const handle = serve({
  refused,
  post: (msg) => self.postMessage(msg),
  resolve: (rel) => new URL(rel, base).href,
  readBytes: checkedBytes,
  readText: () => glueText,
  snapshot,
  async importPyodide(rel) {
    glueText = await glue;
    // pyodide.asm.js defines globalThis._createPyodideModule; loaded here, checked, Pyodide does not fetch it again
    await importChecked(manifest.indexURL + "pyodide.asm.js");
    return (await importChecked(rel)).loadPyodide;
  },
});

self.onmessage = (e) => {
  const msg = e.data;
  if (msg.type === "init") {
    manifest = msg.manifest;
    base = msg.manifestURL;
    for (const rel of Object.keys(manifest.files)) byURL.set(new URL(rel, base).href, rel);
  }
  handle(msg);
};
