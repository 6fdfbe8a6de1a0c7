// The Node runner: judges jobs in Pyodide on the very files the site serves, with the page's supervisor
// (deadlines, interrupts, restarts). For CI and exercise authors; the Python driver is browser/node.py.
//
//   node browser/js/node-runner.mjs < request.json
//   request: {"site": ".cache/browser/site", "jobs": [{"exercise": slug, "source": str|null, "run_only": bool,
//             "seed": int|null, "filename": str} | {"exec": python code}], "mounts": [[host, guest]],
//             "env": {K: V}, "sys_path": [guest dirs], "progress": bool (also print the progress events)}
//   stdout: one JSON object a line: {"type":"ready",...}, then per job {"type":"result","index":i,"verdict":...,
//           "restarted":bool,"ms":n} | {"type":"value","index":i,"value":...} | {"type":"error","index":i,"message":...}
// What the learner's code prints never reaches stdout (the worker thread's stdout is piped to stderr).
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { Supervisor } from "./supervisor.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const request = JSON.parse(readFileSync(0, "utf8"));
const site = resolve(request.site);
const manifest = JSON.parse(readFileSync(join(site, "manifest.json"), "utf8"));
const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

function spawn() {
  // a worker thread that looks like a Web Worker to the supervisor
  const w = new Worker(join(here, "node-worker.mjs"), { workerData: { site }, stdout: true, stderr: true });
  w.stdout.pipe(process.stderr);
  w.stderr.pipe(process.stderr);
  const shim = { onmessage: null, onerror: null, postMessage: (m) => w.postMessage(m), terminate: () => w.terminate() };
  w.on("message", (data) => shim.onmessage && shim.onmessage({ data }));
  w.on("error", (e) => shim.onerror && shim.onerror({ message: e && e.message ? e.message : String(e) }));
  w.on("exit", (code) => shim.onerror && !shim.terminated && shim.onerror({ message: `the worker exited (code ${code})` }));
  const terminate = shim.terminate;
  shim.terminate = () => { shim.terminated = true; return terminate(); };
  return shim;
}

const sup = new Supervisor({
  spawn,
  init: { manifest, options: { mounts: request.mounts || [], env: request.env || {}, sys_path: request.sys_path || [] } },
  graceMs: request.grace_ms ?? 3000,
  onEvent: (ev) => {
    if (request.progress && ev.type === "progress") out(ev);
  },
});

// jobs are queued at once: their deadlines start when their tests start, not while Pyodide boots
const booted = sup.ready().then(
  (ready) => { out({ type: "ready", ms: ready.ms, env: ready.env, build: manifest.build }); return true; },
  (e) => { out({ type: "error", index: -1, message: e.message }); return false; },
);
for (const [index, job] of (request.jobs || []).entries()) {
  try {
    if (job.exec !== undefined) {
      out({ type: "value", index, value: await sup.exec(job.exec, { timeoutMs: (job.timeout_s ?? 300) * 1000 }) });
    } else {
      const r = await sup.judge(job);
      out({ type: "result", index, verdict: r.verdict, restarted: r.restarted, ms: r.ms });
    }
  } catch (e) {
    out({ type: "error", index, message: e.message });
  }
}
const ok = await booted;
sup.close();
process.exit(ok ? 0 : 1);
