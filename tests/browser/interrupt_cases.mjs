// Interrupts sent to Python in Pyodide through the plain word Pyodide's docs show (a view of the SharedArrayBuffer) and
// through core.mjs's interruptWord:
// - "between": Python's check (CPython's _Py_CheckEmscriptenSignals_Helper: read the word, then write 0) with the
//   supervisor's store of a signal between its two steps, and with a signal read and taken;
// - "pyodide": Python looping in Pyodide, interrupted again as soon as it counted the last KeyboardInterrupt: how
//   many signals are lost (the word read 0, as if Python had taken it, and no KeyboardInterrupt came). The plain
//   word's figure depends on how the threads interleave (about 2 in 100 on an idle machine), and it stops after
//   STOP_AFTER_LOST.
// usage: node interrupt_cases.mjs <pyodide.mjs> <interrupts per view>; prints one JSON line per case and view.
import { Worker, isMainThread, workerData, parentPort } from "node:worker_threads";

const LOST_AFTER_MS = 1000; // the word read 0 and no KeyboardInterrupt this long after: lost (then it is sent again)
const STOP_AFTER_LOST = 3;
const VIEWS = { plain: (words) => words.subarray(0, 1), interruptWord: null };

function check(buffer, between = () => {}) {
  const result = buffer[0];
  between();
  buffer[0] = 0;
  return result;
}

if (isMainThread) {
  const [pyodideMjs, n] = [process.argv[2], Number(process.argv[3])];
  VIEWS.interruptWord = (await import(new URL("../../browser/js/core.mjs", import.meta.url))).interruptWord;
  for (const [view, make] of Object.entries(VIEWS)) {
    const w = new Int32Array(new SharedArrayBuffer(8));
    const read = check(make(w), () => Atomics.store(w, 0, 2));
    const kept = Atomics.load(w, 0);
    Atomics.store(w, 0, 2);
    const taken = check(make(w));
    console.log(JSON.stringify({ case: "between", view, read, kept, taken, after: Atomics.load(w, 0) }));
  }
  const words = new Int32Array(new SharedArrayBuffer(8)); // [0] the signal, [1] KeyboardInterrupts Python raised
  for (const view of ["plain", "interruptWord"]) {
    Atomics.store(words, 1, -1);
    const worker = new Worker(new URL(import.meta.url), { workerData: { words: words.buffer, view, n, pyodideMjs } });
    const failed = new Promise((_, reject) => worker.once("error", reject));
    await Promise.race([new Promise((resolve) => worker.once("message", resolve)), failed]);
    while (Atomics.load(words, 1) !== 0) Atomics.wait(words, 1, -1, 50);
    let lost = 0;
    let sent = 0;
    const t0 = Date.now();
    for (let i = 1; i <= n && lost < STOP_AFTER_LOST; i++, sent++) {
      Atomics.store(words, 0, 2);
      let since = null; // when the word was first seen 0 with no KeyboardInterrupt counted
      while (Atomics.wait(words, 1, i - 1, 20) !== "not-equal" && Atomics.load(words, 1) === i - 1) {
        if (Atomics.load(words, 0) !== 0) continue; // not read yet
        since ??= Date.now();
        if (Date.now() - since < LOST_AFTER_MS) continue;
        lost += 1;
        since = null;
        Atomics.store(words, 0, 2);
      }
    }
    console.log(JSON.stringify({ case: "pyodide", view, interrupts: sent, lost, ms: Date.now() - t0 }));
    await worker.terminate();
  }
} else {
  const { loadPyodide } = await import(workerData.pyodideMjs);
  const { interruptWord } = await import(new URL("../../browser/js/core.mjs", import.meta.url));
  const pyodide = await loadPyodide();
  const words = new Int32Array(workerData.words);
  pyodide.setInterruptBuffer(workerData.view === "plain" ? words.subarray(0, 1) : interruptWord(words));
  globalThis.taken = (n) => {
    Atomics.store(words, 1, n);
    Atomics.notify(words, 1);
  };
  parentPort.postMessage("ready");
  // each interrupt is sent once the previous one was counted, inside the try: none lands outside it
  pyodide.runPython(`
import js
n = 0
while n <= ${workerData.n}:
    try:
        js.taken(n)
        while True:
            pass
    except KeyboardInterrupt:
        n += 1
`);
}
