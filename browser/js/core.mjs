// The judge worker's core, shared by the browser's Web Worker (worker.mjs) and the Node runner's worker thread
// (node-worker.mjs): boot Pyodide from the build's manifest, then judge one job at a time with judge.harness
// (glue.py). No DOM and no Node API here: the host passes what differs.
//
// host = {
//   post(msg)                    send a message to the supervisor
//   resolve(rel)                 a manifest-relative path -> what Pyodide takes (a URL, or a file path in Node)
//   readBytes(rel) -> Uint8Array the bytes of a manifest file, integrity-checked
//   readText(name) -> string     a file beside this module (glue.py)
//   importPyodide(rel)           the loadPyodide function of pyodide.mjs (integrity-checked)
//   prepare?(pyodide, init)      host-specific set-up after boot (Node: mounts)
//   refused?                     a promise that rejects when a file fails its integrity check
//   snapshot?                    Python's memory right after it started, kept by the host (the browser: its Cache
//                                API): load() -> Uint8Array | null (rejects when what is kept is damaged),
//                                save(bytes), drop(). Restored instead of starting Python again (docs/browser.md)
// }
// Messages in:  {type:"init", manifest, control, options}, {type:"judge", id, job}, {type:"exec", id, code}
// Messages out: {type:"progress", ...}, {type:"ready", ms, env}, {type:"result", id, ...}, {type:"error", ...}

// The interrupt word (words[0]) as Python's signal check sees it (pyodide.setInterruptBuffer). That check reads the
// word, then writes 0: a signal the supervisor stored between the two was lost, and the word read 0 as if Python had
// taken it (a looping test then ran on until the worker was restarted; tests/browser/test_interrupt_word.py). Here
// the write clears the word only if it still holds what was read.
export function interruptWord(words) {
  let read = 0;
  return Object.defineProperty({}, 0, {
    get: () => (read = Atomics.load(words, 0)),
    set: (value) => Atomics.compareExchange(words, 0, read, value),
  });
}

export function serve(host) {
  let py = null; // {pyodide, runJob, runCode}
  let control = null; // Int32Array over a SharedArrayBuffer: [0] interrupt signal, [1] running test's sequence number
  let seq = 0;
  let fatal = null;
  const pending = [];

  async function boot(init) {
    return host.refused ? Promise.race([host.refused, load(init)]) : load(init);
  }

  async function load(init) {
    const t0 = Date.now();
    const { manifest } = init;
    const options = init.options || {};
    const files = manifest.files;
    const coreNames = ["pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip"].map((n) => manifest.indexURL + n);
    coreNames.push(manifest.lockFileURL);
    const total = (manifest.boot || Object.keys(files)).reduce((a, rel) => a + files[rel].size, 0);
    let loaded = 0;
    const timings = {};
    let mark = Date.now();
    let current = null;
    const step = (what, rel) => {
      if (rel && files[rel]) loaded += files[rel].size;
      const t = Date.now();
      if (current) timings[current] = t - mark;
      mark = t;
      current = what.split(":")[0];
      host.post({ type: "progress", stage: "boot", what, loaded, total });
    };
    step("pyodide.mjs");
    const loadPyodide = await host.importPyodide(manifest.indexURL + "pyodide.mjs");
    loaded += files[manifest.indexURL + "pyodide.mjs"].size;
    const config = {
      indexURL: host.resolve(manifest.indexURL),
      lockFileURL: host.resolve(manifest.lockFileURL),
      env: { HOME: "/home/pyodide", ...manifest.env, ...(options.env || {}) },
      stdout: (text) => host.post({ type: "log", stream: "stdout", text: String(text).slice(0, 2000) }),
      stderr: (text) => host.post({ type: "log", stream: "stderr", text: String(text).slice(0, 2000) }),
      checkAPIVersion: true,
    };
    // Python's memory as it was right after it started, kept by this browser (taken before any package: Pyodide
    // 0.27 cannot snapshot loaded shared libraries such as numpy's). The runtime files are still fetched and
    // checked; only starting CPython and its first imports are skipped. Anything wrong: the normal boot.
    let snapshot = host.snapshot ? "made" : "off"; // what this boot did: restored | made | off, and why not
    let pyodide = null;
    const kept = host.snapshot ? await host.snapshot.load().catch((e) => e) : null;
    if (kept instanceof Uint8Array) {
      step("runtime: restoring Python from this browser's cache");
      try {
        pyodide = await loadPyodide({ ...config, _loadSnapshot: kept });
        snapshot = "restored";
      } catch (e) {
        snapshot = `made (the kept snapshot was refused: ${e && e.message ? e.message : e})`;
        await host.snapshot.drop().catch(() => {});
      }
    } else if (kept instanceof Error) {
      snapshot = `made (the kept snapshot was refused: ${kept.message})`;
    }
    if (!pyodide) {
      step("runtime: pyodide.asm.wasm, pyodide.asm.js, python_stdlib.zip");
      pyodide = await loadPyodide({ ...config, _makeSnapshot: Boolean(host.snapshot) });
      if (host.snapshot) {
        try {
          host.snapshot.save(pyodide.makeMemorySnapshot()).catch(() => {}); // kept while the packages load
        } catch (e) {
          snapshot = `off (could not be made: ${e && e.message ? e.message : e})`;
        }
      }
    }
    for (const rel of coreNames) loaded += files[rel] ? files[rel].size : 0;
    step("packages: " + manifest.packages.join(", "));
    const errors = [];
    await pyodide.loadPackage(manifest.packages, {
      messageCallback: () => {},
      errorCallback: (m) => errors.push(String(m)),
      checkIntegrity: true,
    });
    const missing = manifest.packages.filter((p) => !(p in pyodide.loadedPackages));
    if (missing.length) {
      throw new Error(`could not load the package(s) ${missing.join(", ")}: ${errors.join("; ") || "unknown error"}`);
    }
    const wheels = (manifest.boot || []).filter((rel) => rel.endsWith(".whl"));
    for (const rel of wheels) loaded += files[rel].size;
    step("data: exercises and the tiny model");
    const data = await host.readBytes(manifest.data.url);
    pyodide.unpackArchive(data, "zip", { extractDir: manifest.data.extract });
    loaded += files[manifest.data.url].size;
    if (host.prepare) await host.prepare(pyodide, init);
    step("imports: judge, torch, minisgl");
    pyodide.runPython(host.readText("glue.py"), { filename: "judge_glue.py", globals: pyodide.globals });
    const sysPath = [...(manifest.sys_path || []), ...(options.sys_path || [])];
    const env = JSON.parse(
      pyodide.globals.get("setup")(JSON.stringify({ ...manifest.env, ...(options.env || {}) }), JSON.stringify(sysPath)),
    );
    if (control) pyodide.setInterruptBuffer(interruptWord(control));
    py = { pyodide, runJob: pyodide.globals.get("run_job"), runCode: pyodide.globals.get("run_code") };
    step("ready");
    env.pyodide = pyodide.version;
    env.ms = Date.now() - t0;
    env.timings = timings;
    env.snapshot = snapshot;
    host.post({ type: "ready", ms: env.ms, env, build: manifest.build });
  }

  function emit(id, text) {
    const ev = JSON.parse(text);
    if (ev.event === "test_start") {
      seq += 1;
      ev.seq = seq;
      if (control) {
        Atomics.store(control, 1, seq); // the supervisor interrupts only while this very test runs
        Atomics.store(control, 0, 0); // and never with a signal meant for an earlier test
      }
    } else if (ev.event === "test_end" && control) {
      Atomics.store(control, 1, -1);
    }
    host.post({ type: "progress", id, ...ev });
  }

  function fail(id, e) {
    // after os._exit (or any fatal error) Pyodide cannot be used again: the supervisor restarts the worker
    const message = e && e.message ? e.message : String(e);
    fatal = message;
    host.post({ type: "error", id, fatal: true, message });
  }

  function handle(msg) {
    if (msg.type === "init") {
      control = msg.control ? new Int32Array(msg.control) : null;
      boot(msg).then(
        () => pending.splice(0).forEach(handle),
        (e) => host.post({ type: "error", fatal: true, stage: "boot", message: e && e.message ? e.message : String(e) }),
      );
      return;
    }
    if (!py) {
      pending.push(msg);
      return;
    }
    if (fatal) {
      host.post({ type: "error", id: msg.id, fatal: true, message: fatal });
      return;
    }
    if (msg.type === "judge") {
      let out;
      try {
        out = JSON.parse(py.runJob(JSON.stringify(msg.job), (text) => emit(msg.id, text)));
      } catch (e) {
        fail(msg.id, e);
        return;
      }
      if (out.verdict) host.post({ type: "result", id: msg.id, verdict: out.verdict });
      else if (out.interrupted) host.post({ type: "error", id: msg.id, fatal: true, message: "interrupted between tests" });
      else host.post({ type: "error", id: msg.id, fatal: false, message: out.error });
    } else if (msg.type === "exec") {
      try {
        host.post({ type: "result", id: msg.id, value: JSON.parse(py.runCode(msg.code)) });
      } catch (e) {
        if (e && e.constructor && e.constructor.name === "PythonError") {
          host.post({ type: "error", id: msg.id, fatal: false, message: e.message });
        } else fail(msg.id, e);
      }
    }
  }

  return handle;
}
