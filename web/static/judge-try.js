// The minimal judge page, /judge/ (web/templates/browser_judge/try.html): pick an exercise, edit, Run / Submit,
// see the verdict. A file, not an inline script: the site's Content-Security-Policy allows no inline script.
// Served at <site>/static/, so the judge's client (<site>/judge/js/) and the exercise list are found beside it.
import { createJudge, ADVISORY } from "../judge/js/client.mjs";

const $ = (id) => document.getElementById(id);
const state = (text) => { $("status-text").textContent = text; };
$("advisory").textContent = ADVISORY;
const judge = createJudge({
  onEvent(ev) {
    if (ev.type === "progress" && ev.stage === "boot") {
      $("progress").value = ev.total ? ev.loaded / ev.total : 0;
      state(`Loading ${ev.what}…`);
    } else if (ev.type === "progress" && ev.event === "test_start") state(`Running ${ev.name}…`);
    else if (ev.type === "ready") { $("progress").value = 1; state(`Python ready (${(ev.ms / 1000).toFixed(1)} s).`); }
    else if (ev.type === "error") state(`Error: ${ev.message}`);
  },
});
window.judge = judge;  // for tests and the curious

const exercises = await (await fetch(new URL("../judge/exercises.json", import.meta.url))).json();
for (const e of exercises) $("exercise").add(new Option(`${e.title} (${e.slug})`, e.slug));
const starter = () => exercises.find((e) => e.slug === $("exercise").value)?.starter ?? "";
$("source").value = starter();
$("exercise").onchange = $("reset").onclick = () => { $("source").value = starter(); $("verdict").textContent = ""; };

function show(result) {
  const v = result.verdict;
  const box = $("verdict");
  box.textContent = "";
  const h = document.createElement("h2");
  h.id = "verdict-status";
  h.dataset.status = v.status;
  h.textContent = `${v.status.replace("_", " ").toUpperCase()} · ${v.passed}/${v.total} passed · ${(v.ms / 1000).toFixed(2)} s`;
  box.append(h);
  if (v.message) { const p = document.createElement("pre"); p.textContent = v.message; box.append(p); }
  for (const t of v.tests) {
    const d = document.createElement("div");
    d.className = t.status;
    d.dataset.test = t.name;
    d.textContent = `${t.status.toUpperCase()}  ${t.name}${t.visible ? "" : " (hidden)"}  ${t.status === "skip" ? "" : t.ms.toFixed(0) + " ms"}`;
    box.append(d);
    if (t.message && t.status !== "pass") { const p = document.createElement("pre"); p.textContent = t.message; box.append(p); }
  }
  window.lastResult = result;
}

async function go(run) {
  $("run").disabled = $("submit").disabled = true;
  state(run ? "Running the examples…" : "Running all tests…");
  try {
    const r = await judge.judge($("exercise").value, $("source").value, { run });
    show(r);
    state(r.restarted ? "Done (the Python worker was restarted)." : "Done.");
  } catch (e) {
    state(`Error: ${e.message}`);
  } finally {
    $("run").disabled = $("submit").disabled = false;
  }
}
$("run").onclick = () => go(true);
$("submit").onclick = () => go(false);
judge.ready.then(() => { $("run").disabled = $("submit").disabled = false; }, () => {});
