// The page's API for judging in the browser (docs/browser.md). One judge per page; it boots its worker at once.
//
//   import { createJudge } from "/judge/js/client.mjs";
//   const judge = createJudge({ onEvent: (ev) => console.log(ev) });   // ev: progress | ready | result | error
//   await judge.ready;                                                 // {ms, env}
//   const { verdict, restarted, ms, advisory } = await judge.judge("graph-bs-list", source, { run: true });
//
// verdict is the JSON of judge/verdict.schema.json (mode "browser"). Browser verdicts are advisory: show
// `advisory` (or ADVISORY) beside them.
import { ADVISORY, Supervisor } from "./supervisor.mjs";

export { ADVISORY };
export const DEFAULT_MANIFEST = new URL("../assets/manifest.json", import.meta.url).href;

export function createJudge({ manifestURL = DEFAULT_MANIFEST, onEvent = () => {}, graceMs = 3000 } = {}) {
  const url = new URL(manifestURL, location.href).href;
  const manifest = fetch(url, { cache: "no-cache" }).then((r) => {
    if (!r.ok) throw new Error(`the judge's assets are not built (${url}: HTTP ${r.status}); run \`make browser\``);
    return r.json();
  });
  let sup = null;
  const started = manifest.then((m) => {
    sup = new Supervisor({
      spawn: () => new Worker(new URL("./worker.mjs", import.meta.url), { type: "module", name: "judge" }),
      init: { manifest: m, manifestURL: url },
      onEvent,
      graceMs,
    });
    return sup;
  });
  const ready = started.then((s) => s.ready());
  ready.then(
    (r) => performance.mark("judge-ready", { detail: { ms: r.ms, snapshot: r.env.snapshot } }),
    (e) => onEvent({ type: "error", message: e.message }),
  );
  return {
    ready,
    manifest,
    // judge(exercise slug, source (null: the reference), {run: only the visible examples, seed, filename})
    async judge(exercise, source, { run = false, seed = null, filename = "submission.py" } = {}) {
      const s = await started;
      return s.judge({ exercise, source, run_only: run, seed, filename });
    },
    get restarts() {
      return sup ? sup.restarts : 0;
    },
    close() {
      if (sup) sup.close();
    },
  };
}
