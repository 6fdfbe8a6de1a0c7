// The supervisor: owns the judge worker, enforces the deadlines, restarts the worker when it must. The same code
// runs in a page (client.mjs, with a Web Worker) and in the Node runner (node-runner.mjs, with a worker thread).
//
// Deadlines start when the tests start, never while Pyodide loads: the worker reports "load" (the learner's file
// is about to run) with the exercise's limits, then "plan", "test_start" and "test_end".
//   - a test past its limit is interrupted (pyodide.setInterruptBuffer: KeyboardInterrupt inside it, reported as
//     timeout by the harness, and the other tests still run); if it has not ended graceMs later, the worker is
//     terminated and restarted, and that test is timeout. The grace is extended once (to 2 x graceMs) when Python
//     took the interrupt but has not finished unwinding, or when the grace timer itself fired late (this thread was
//     starved); a test whose end is already on its way is never stopped;
//   - module-level code past the test limit, or a whole run past the run limit: terminated, restarted, timeout;
//   - the interpreter ending (os._exit) or the worker dying: restarted, runtime_error (internal_error when nothing
//     of the learner's had run yet).
// Verdicts built here (after a restart) have the shape and status rules of judge/verdict.py (finalize below).

export const ADVISORY =
  "Judged in your browser: an advisory verdict. Your code ran in this page, which you control; the tests are the " +
  "same as `python practice/judge.py test`, and only the grading server's verdict counts for a course.";

const now = () => (typeof performance !== "undefined" ? performance.now() : Date.now());

// The status rules of judge/verdict.py: Verdict.finalize (keep the two in step; a test compares them).
export function finalize(v) {
  const t = v.tests;
  v.passed = t.filter((x) => x.status === "pass").length;
  v.failed = t.filter((x) => ["fail", "error", "timeout"].includes(x.status)).length;
  v.skipped = t.filter((x) => x.status === "skip").length;
  v.total = t.length;
  if (v.status === "internal_error" || v.status === "compile_error") return v;
  const s = new Set(t.map((x) => x.status));
  if (v.status === "timeout" || s.has("timeout")) v.status = "timeout";
  else if (v.status === "runtime_error" || s.has("error")) v.status = "runtime_error";
  else if (s.has("fail")) v.status = "wrong_answer";
  else if (v.passed === 0) {
    v.status = "internal_error";
    if (!v.message) {
      v.message =
        `No test ran in mode ${JSON.stringify(v.mode).replaceAll('"', "'")}` +
        (v.run ? " (Run only runs the visible test_example* tests)" : "") +
        ": every test was skipped, so there is nothing to judge. This is not your fault.";
    }
  } else v.status = "accepted";
  return v;
}

function testResult(name, status, message, ms) {
  return { name, status, doc: "", message, output: "", ms, visible: name.startsWith("test_example") };
}

// A verdict from what the worker reported before it was stopped (judge/isolation.py's _partial).
function partial(job, st, env, status, message, currentStatus, currentMessage) {
  const tests = st.results.slice();
  const done = new Set(tests.map((x) => x.name));
  if (st.current && !done.has(st.current)) {
    tests.push(testResult(st.current, currentStatus, currentMessage, Math.round((now() - st.currentStarted) * 10) / 10));
    done.add(st.current);
  }
  for (const name of st.plan) {
    if (!done.has(name)) tests.push(testResult(name, "skip", "Not run: an earlier test ended the run.", 0));
  }
  return finalize({
    status, exercise: String(job.exercise), mode: "browser", run: Boolean(job.run_only), passed: 0, failed: 0,
    skipped: 0, total: 0, ms: Math.round((now() - st.started) * 10) / 10, message, output: "",
    env: { python: env.python || "", torch: env.torch || null, device: "cpu", gpu: null }, tests,
    seed: st.seed ?? (job.seed ?? null), trust: { level: "advisory", measures: ["in-process", "worker-restarted"] },
    version: env.verdict_version ?? 2,
  });
}

class Slot {
  // one worker and the shared control words the supervisor interrupts it through
  constructor(spawn, init, onEvent, bootTimeoutMs) {
    const shared = typeof SharedArrayBuffer === "function" && globalThis.crossOriginIsolated !== false;
    this.control = shared ? new Int32Array(new SharedArrayBuffer(8)) : null;
    if (this.control) Atomics.store(this.control, 1, -1);
    this.listeners = new Set();
    this.env = {};
    this.dead = false;
    this.worker = spawn();
    this.ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the judge worker did not start within ${bootTimeoutMs / 1000} s`)),
        bootTimeoutMs);
      this.listeners.add((m) => {
        if (m.type === "ready") {
          clearTimeout(timer);
          this.env = m.env;
          resolve(m);
        } else if (m.type === "error" && m.stage === "boot") {
          clearTimeout(timer);
          reject(new Error(`the judge could not start: ${m.message}`));
        }
      });
    });
    this.ready.catch(() => {
      this.failed = true; // the next judging boots a new worker (the page may have been offline a moment)
      this.kill();
    });
    this.worker.onmessage = (e) => {
      const m = e.data;
      if (m.type === "progress" && m.stage === "boot") onEvent(m);
      for (const l of [...this.listeners]) l(m);
    };
    this.worker.onerror = (e) => {
      const message = (e && (e.message || (e.error && e.error.message))) || "the worker failed";
      if (e && e.preventDefault) e.preventDefault();
      for (const l of [...this.listeners]) l({ type: "error", fatal: true, stage: this.env.python ? "run" : "boot", message });
    };
    this.worker.postMessage({ ...init, type: "init", control: this.control ? this.control.buffer : null });
  }

  interrupt(seq) {
    // SIGINT to the running test, only while that very test runs
    const c = this.control;
    if (Atomics.load(c, 1) !== seq) return false;
    Atomics.store(c, 0, 2);
    if (Atomics.load(c, 1) !== seq) Atomics.compareExchange(c, 0, 2, 0);
    return true;
  }

  // where an interrupted test stands: "ended" (its test_end is on its way), "raised" (Python took the interrupt:
  // the KeyboardInterrupt is unwinding, or the learner's code swallowed it), "pending" (no check reached yet: the
  // interpreter is inside C code, or starved). Pyodide zeroes word 0 when it takes the signal.
  interruptState(seq) {
    const c = this.control;
    if (Atomics.load(c, 1) !== seq) return "ended";
    return Atomics.load(c, 0) === 0 ? "raised" : "pending";
  }

  kill() {
    this.dead = true;
    try {
      this.worker.terminate();
    } catch (e) {
      /* already gone */
    }
  }
}

export class Supervisor {
  constructor({ spawn, init, onEvent = () => {}, graceMs = 3000, bootTimeoutMs = 300000 }) {
    this.spawn = spawn;
    this.init = init;
    this.onEvent = onEvent;
    this.graceMs = graceMs;
    this.bootTimeoutMs = bootTimeoutMs;
    this.slot = null;
    this.queue = Promise.resolve();
    this.nextId = 0;
    this.restarts = 0;
  }

  #ensure() {
    if (!this.slot || this.slot.dead || this.slot.failed) {
      this.slot = new Slot(this.spawn, this.init, this.onEvent, this.bootTimeoutMs);
      this.slot.ready.then((m) => this.onEvent({ type: "ready", ms: m.ms, env: m.env, build: m.build }),
        (e) => this.onEvent({ type: "error", message: e.message }));
    }
    return this.slot;
  }

  // Resolves when a worker is ready: {ms, env}
  ready() {
    return this.#ensure().ready;
  }

  #enqueue(fn) {
    const p = this.queue.then(fn, fn);
    this.queue = p.catch(() => {});
    return p;
  }

  #restart(slot) {
    slot.kill();
    this.restarts += 1;
    if (this.slot === slot) this.slot = null;
    this.#ensure(); // boot the next worker now, so the next run does not wait for it
  }

  // Judge one job {exercise, source (null: the reference), run_only, seed, filename}; resolves to
  // {verdict, restarted, ms, advisory}. Rejects only when the judge cannot run at all (it cannot start, an unknown
  // exercise): a verdict is never blamed on the learner for that.
  judge(job) {
    return this.#enqueue(() => this.#judge(job));
  }

  async #judge(job) {
    const slot = this.#ensure();
    await slot.ready;
    const id = ++this.nextId;
    const st = { started: now(), plan: [], results: [], current: null, currentStarted: 0, loading: false,
      planned: false, limits: { test_s: 20, run_s: 60 } };
    return new Promise((resolve, reject) => {
      const timers = new Map();
      let ended = false;
      const clear = (...names) => names.forEach((n) => { clearTimeout(timers.get(n)); timers.delete(n); });
      const later = (name, s, fn) => { clear(name); timers.set(name, setTimeout(fn, s * 1000)); };
      const finish = (verdict, restarted) => {
        if (ended) return;
        ended = true;
        clear(...timers.keys());
        slot.listeners.delete(on);
        this.onEvent({ type: "result", id, verdict, restarted, advisory: ADVISORY });
        resolve({ verdict, restarted, ms: Math.round(now() - st.started), advisory: ADVISORY });
      };
      const stop = (why, detail = "") => {
        // the worker is beyond saving: terminate it, say what happened, start a fresh one
        if (ended) return;
        this.#restart(slot);
        const { test_s, run_s } = st.limits;
        let v;
        if (why === "test") {
          const msg = `Test ${st.current} ran past its time limit of ${test_s} s (an endless loop?) and was stopped.`;
          v = partial(job, st, slot.env, "timeout", msg, "timeout", msg);
        } else if (why === "load" || (why === "run" && st.loading && !st.planned)) {
          const msg = `Your file's module-level code ran past the time limit of ${why === "load" ? test_s : run_s} s ` +
            "and was stopped (an endless loop?).";
          v = partial(job, st, slot.env, "timeout", msg, "timeout", msg);
        } else if (why === "run") {
          const msg = `The run went past its time limit of ${run_s} s and was stopped.`;
          v = partial(job, st, slot.env, "timeout", msg, "timeout", msg);
        } else if (!st.loading) {
          v = partial(job, st, slot.env, "internal_error",
            `The judge's worker failed before your code ran (not your fault): ${detail}`, "error", "");
        } else {
          const msg = "The Python interpreter running your code ended before it could report a verdict: did your " +
            `code call os._exit()? (${detail})`;
          v = partial(job, st, slot.env, "runtime_error", msg, "error", st.current ? msg : "");
        }
        finish(v, true);
      };
      const on = (m) => {
        if (m.type === "error" && m.fatal && (m.id === id || m.id === undefined)) return stop("crash", m.message);
        if (m.id !== id) return;
        if (m.type === "error") {
          ended = true;
          clear(...timers.keys());
          slot.listeners.delete(on);
          return reject(new Error(m.message));
        }
        if (m.type === "result") return finish(m.verdict, false);
        if (m.type !== "progress") return;
        this.onEvent(m);
        if (m.event === "load") {
          st.loading = true;
          if (m.limits) st.limits = m.limits;
          if (m.seed !== undefined) st.seed = m.seed;
          later("load", st.limits.test_s, () => stop("load"));
          later("run", st.limits.run_s, () => stop("run"));
        } else if (m.event === "plan") {
          st.planned = true;
          st.plan = m.tests.slice();
          clear("load");
        } else if (m.event === "test_start") {
          st.current = m.name;
          st.currentStarted = now();
          later("test", st.limits.test_s, () => {
            if (!slot.control) return stop("test");
            slot.interrupt(m.seq);
            let extended = false;
            const armedAt = now();
            const graceOver = () => {
              const state = slot.interruptState(m.seq);
              if (state === "ended") return; // its test_end is queued behind this timer
              const late = now() - armedAt > 1.5 * this.graceMs;
              if (!extended && (state === "raised" || late)) {
                extended = true;
                return later("grace", this.graceMs / 1000, graceOver);
              }
              stop("test");
            };
            later("grace", this.graceMs / 1000, graceOver);
          });
        } else if (m.event === "test_end") {
          clear("test", "grace");
          st.results.push(m.test);
          st.current = null;
        }
      };
      slot.listeners.add(on);
      slot.worker.postMessage({ type: "judge", id, job });
    });
  }

  // Run Python code in the worker (authors, tests, benchmarks); resolves to the JSON value of its global RESULT.
  exec(code, { timeoutMs = 300000 } = {}) {
    return this.#enqueue(async () => {
      const slot = this.#ensure();
      await slot.ready;
      const id = ++this.nextId;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          slot.listeners.delete(on);
          this.#restart(slot);
          reject(new Error(`exec ran past ${timeoutMs / 1000} s; the worker was restarted`));
        }, timeoutMs);
        const on = (m) => {
          if (m.id !== id && !(m.type === "error" && m.fatal && m.id === undefined)) return;
          if (m.type !== "result" && m.type !== "error") return;
          clearTimeout(timer);
          slot.listeners.delete(on);
          if (m.type === "result") return resolve(m.value);
          if (m.fatal) this.#restart(slot);
          reject(new Error(m.message));
        };
        slot.listeners.add(on);
        slot.worker.postMessage({ type: "exec", id, code });
      });
    });
  }

  close() {
    if (this.slot) this.slot.kill();
    this.slot = null;
  }
}
