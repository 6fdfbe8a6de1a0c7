// The page's side of in-browser judging. The judge itself (Pyodide in a Web Worker, its supervisor with the
// deadlines and restarts) is served by the `browser_judge` blueprint under /judge/ (docs/browser.md); this
// module loads its client API and adapts it to the page:
//   const judge = createJudge({ onStatus });   // starts loading Python behind the page
//   await judge.judge({ exercise, source, runOnly })  -> a verdict (judge/verdict.schema.json), advisory
// onStatus({ state: "loading" | "ready" | "unavailable", text, loaded, total }); onRunning(test name).
export const CLIENT_URL = "/judge/js/client.mjs";

// the worker's boot steps (docs/browser.md), in the learner's words
const STEPS = {
  "pyodide.mjs": "loading the Python runtime",
  runtime: "loading the Python runtime",
  packages: "loading numpy and the engine",
  data: "loading the exercises and the tiny model",
  imports: "importing numpy, torch and the engine",
};

function describe(ev) {
  // the worker's boot progress: {type: "progress", stage: "boot", what, loaded, total} (docs/browser.md)
  const what = String(ev.what || "");
  if (what.startsWith("runtime: restoring")) return "Python: restoring from this browser's cache…";
  const words = STEPS[what.split(":")[0]] || "loading";
  const downloading = ev.total && ev.loaded < ev.total && words.startsWith("loading");
  const size = downloading ? ` (${(ev.loaded / 1e6).toFixed(1)} of ${(ev.total / 1e6).toFixed(1)} MB)` : "";
  return `Python: ${words}${size}…`;
}

export function createJudge({ onStatus = () => {}, onRunning = () => {}, clientUrl = CLIENT_URL } = {}) {
  let client = null;
  let failed = null;
  const ready = (async () => {
    onStatus({ state: "loading", text: "Python: loading the judge…" });
    let mod;
    try {
      mod = await import(clientUrl);
    } catch {
      throw new Error("in-browser judging is not installed on this site: use “Run locally” below");
    }
    client = mod.createJudge({
      onEvent: (ev) => {
        if (ev.type === "progress" && ev.stage === "boot") {
          onStatus({ state: "loading", text: describe(ev), loaded: ev.loaded, total: ev.total });
        } else if (ev.type === "progress" && ev.event === "test_start") onRunning(ev.name);
      },
    });
    await client.ready;
    onStatus({ state: "ready", text: "Python is ready: Run and Submit judge in your browser (advisory verdicts)." });
    return client;
  })();
  ready.catch((err) => {
    failed = err;
    onStatus({ state: "unavailable", text: `In-browser judging is unavailable: ${err.message}. Use “Run locally” below.` });
  });

  return {
    ready,
    get failed() {
      return failed;
    },
    async judge({ exercise, source, runOnly }) {
      const c = await ready;
      const { verdict } = await c.judge(exercise, source, { run: runOnly });
      return verdict;
    },
  };
}
