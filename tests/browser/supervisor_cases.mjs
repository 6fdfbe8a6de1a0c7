// The supervisor's grace rules against a scripted worker (no Pyodide): each case plays one way an interrupted
// test can behave, and prints {case, restarted, ms, status} a line. Driven by tests/browser/test_supervisor.py.
//   node tests/browser/supervisor_cases.mjs <graceMs>
import { Supervisor } from "../../browser/js/supervisor.mjs";

const graceMs = Number(process.argv[2] || 300);
const TEST_S = 0.2;

// What the scripted worker does once it sees the interrupt (word 0 set to 2), as Pyodide and the harness would:
// (times in graces after the interrupt; null: never) take: zero word 0 (Python raised KeyboardInterrupt); end: word 1
// = -1 (the harness sent test_end); post: that message reaches the supervisor; block: the supervisor's thread is
// frozen that long (as a descheduled process is)
const CASES = {
  prompt: { take: 0, end: 0.05, post: 0.05 }, // the usual interrupt: stopped in place
  slow_unwind: { take: 0, end: 1.4, post: 1.4 }, // took it, then needed more than one grace to unwind
  message_in_flight: { take: 0, end: 0.5, post: 1.4 }, // ended within the grace, its message arrived after it
  swallowed: { take: 0, end: null, post: null }, // took it and went on looping: stopped after 2 x grace
  never_taken: { take: null, end: null, post: null }, // stuck in C code: stopped after one grace
  starved: { block: 2, take: 2.05, end: 2.1, post: 2.1 }, // this thread frozen past the grace (a loaded machine)
};

function scriptedWorker(plan) {
  let control = null;
  const w = { onmessage: null, onerror: null, terminated: false };
  const post = (data) => setTimeout(() => !w.terminated && w.onmessage && w.onmessage({ data }), 0);
  w.terminate = () => { w.terminated = true; };
  w.postMessage = (m) => {
    if (m.type === "init") {
      control = new Int32Array(m.control);
      post({ type: "ready", ms: 1, env: { python: "3.12", verdict_version: 2 } });
      return;
    }
    if (m.type !== "judge") return;
    const id = m.id;
    post({ type: "progress", id, event: "load", limits: { test_s: TEST_S, run_s: 60 } });
    post({ type: "progress", id, event: "plan", tests: ["test_loop", "test_after"] });
    Atomics.store(control, 1, 1);
    post({ type: "progress", id, event: "test_start", name: "test_loop", seq: 1 });
    const poll = setInterval(() => {
      if (w.terminated) return clearInterval(poll);
      if (Atomics.load(control, 0) !== 2) return;
      clearInterval(poll);
      const at = (k, fn) => plan[k] !== null && setTimeout(() => !w.terminated && fn(), plan[k] * graceMs);
      at("take", () => Atomics.store(control, 0, 0));
      at("end", () => Atomics.store(control, 1, -1));
      at("post", () => {
        const t = (name, status) => ({ name, status, doc: "", message: "", output: "", ms: 1, visible: false });
        post({ type: "progress", id, event: "test_end", test: t("test_loop", "timeout") });
        post({ type: "progress", id, event: "test_end", test: t("test_after", "pass") });
        post({ type: "result", id, verdict: { status: "timeout", tests: [t("test_loop", "timeout"), t("test_after", "pass")] } });
      });
      const until = performance.now() + (plan.block ?? 0) * graceMs;
      while (performance.now() < until); // eslint-disable-line no-empty
    }, 2);
  };
  return w;
}

for (const [name, plan] of Object.entries(CASES)) {
  const sup = new Supervisor({ spawn: () => scriptedWorker(plan), init: {}, graceMs });
  const t0 = performance.now();
  const r = await sup.judge({ exercise: "toy", source: "", seed: 1 });
  const ms = Math.round(performance.now() - t0 - TEST_S * 1000);
  process.stdout.write(JSON.stringify({ case: name, restarted: r.restarted, ms, status: r.verdict.status,
    tests: r.verdict.tests.map((t) => [t.name, t.status]) }) + "\n");
  sup.close?.();
}
process.exit(0);
