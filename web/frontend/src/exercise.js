// The exercise page: the editor (autosaved), Run and Submit judged in the browser, the verdict cards,
// the history of verdicts, Reset, Download; the hints and the reveal of the reference (hints.js, reveal.js).
import { createEditor, gotoLine, replaceAll } from "./editor.js";
import { setupHints } from "./hints.js";
import { createJudge } from "./judge.js";
import { STATUS_TEXT as PROGRESS_TEXT, addVerdict, load, mergedStatus, saveCode, saveReplaced } from "./progress.js";
import { setupReveal } from "./reveal.js";
import { fetchServerProgress } from "./serverprogress.js";
import { renderPending, renderVerdict, sourceBadge, sourceText, statusText } from "./verdict.js";

const data = JSON.parse(document.getElementById("exercise-data").textContent);
const $ = (id) => document.getElementById(id);
const verdictBox = $("verdict");
const pythonStatus = $("python-status");
const saveState = $("save-state");

// ---- the editor ---------------------------------------------------------------------------------
let saveTimer = null;
function scheduleSave(text) {
  clearTimeout(saveTimer);
  saveState.textContent = "Saving…";
  saveTimer = setTimeout(() => {
    saveState.textContent = saveCode(data.id, text) ? "Saved in this browser." : "Not saved: this browser refuses to store it.";
  }, 300);
}

const stored = load(data.id);
const host = $("editor");
host.replaceChildren();
const view = createEditor(host, stored.code ?? data.starter, {
  onChange: scheduleSave, onRun: () => judgeNow(true), onSubmit: () => judgeNow(false),
});
performance.mark("editor-ready");
window.minisglEditorReady = performance.now();
if (stored.code !== null) saveState.textContent = "Your saved code.";

const code = () => view.state.doc.toString();

// ---- verdicts -----------------------------------------------------------------------------------
function showTestLine(line) {
  const panel = $("visible-tests");
  panel.open = true;
  document.querySelectorAll(".test-line-target").forEach((n) => n.classList.remove("test-line-target"));
  const target = document.getElementById(`tests-line-${line}`);
  if (!target) return;
  target.classList.add("test-line-target");
  target.setAttribute("tabindex", "-1");
  target.scrollIntoView({ block: "center" });
  target.focus({ preventScroll: true });
}

const cardOptions = {
  onGotoLine: (line) => gotoLine(view, line),
  onShowTestLine: showTestLine,
  canShowTestLine: (line) => data.visible_tests.some((t) => line >= t.first && line <= t.last),
  testCount: data.test_count,
};

let serverEntry; // this exercise in the grading server's progress of the logged-in learner (GET /api/v1/progress)

function paintProgress(entry) {
  const s = mergedStatus(entry, serverEntry);
  for (const badge of document.querySelectorAll(`[data-progress-for="${data.id}"]`)) {
    badge.textContent = PROGRESS_TEXT[s];
    badge.dataset.status = s;
  }
  const list = $("history-list");
  $("history-count").textContent = String(entry.verdicts.length);
  list.replaceChildren(...entry.verdicts.map((v, i) => {
    const li = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "link-button";
    const when = new Date(v.at).toLocaleString();
    button.append(sourceBadge(v), `${statusText(v)}: ${v.passed}/${v.total} · ${v.run ? "Run" : "Submit"} · ${sourceText(v)} · ${when}`);
    button.addEventListener("click", () => renderVerdict(verdictBox, entry.verdicts[i], cardOptions));
    li.className = `history-item status-${v.status}`;
    li.append(button);
    return li;
  }));
}

/** Show and record a verdict from any judge (the browser's, or the grading server's panel). */
let lastVerdict = null;
function recordVerdict(verdict) {
  lastVerdict = verdict;
  renderVerdict(verdictBox, verdict, cardOptions);
  paintProgress(addVerdict(data.id, verdict));
  document.dispatchEvent(new CustomEvent("verdict", { detail: verdict }));
}

paintProgress(stored);
if (stored.verdicts.length) renderVerdict(verdictBox, stored.verdicts[0], cardOptions);

// ---- judging in the browser ---------------------------------------------------------------------
const buttons = [$("run-button"), $("submit-button")];
let busy = false;
let judge = null;

function startJudge() {
  if (judge) return judge;
  judge = createJudge({
    onStatus: (s) => {
      pythonStatus.textContent = s.text || "Python: loading…";
      pythonStatus.dataset.state = s.state;
    },
    onRunning: (name) => {
      if (busy) renderPending(verdictBox, `Running ${name}…`);
    },
  });
  return judge;
}

async function judgeNow(runOnly) {
  if (busy) return;
  busy = true;
  buttons.forEach((b) => b.setAttribute("aria-disabled", "true"));
  const what = runOnly ? "Running the visible tests" : "Submitting: running every test";
  renderPending(verdictBox, pythonStatus.dataset.state === "ready" ? `${what}…` : `${what} once Python has loaded…`);
  try {
    const verdict = await startJudge().judge({ exercise: data.id, source: code(), runOnly });
    recordVerdict(verdict);
  } catch (err) {
    renderPending(verdictBox, `Could not judge in the browser: ${err.message}`);
    verdictBox.dataset.status = "unavailable";
  } finally {
    busy = false;
    buttons.forEach((b) => b.removeAttribute("aria-disabled"));
  }
}

$("run-button").addEventListener("click", () => judgeNow(true));
$("submit-button").addEventListener("click", () => judgeNow(false));
document.addEventListener("keydown", (ev) => {
  // the shortcuts work outside the editor too (the editor handles its own)
  if (ev.key !== "Enter" || !(ev.ctrlKey || ev.metaKey) || view.hasFocus) return;
  ev.preventDefault();
  judgeNow(!ev.shiftKey);
});

// ---- reset, download; the hints and the reveal (hints.js, reveal.js) ---------------------------
$("reset-button").addEventListener("click", () => {
  replaceAll(view, data.starter);
  view.focus();
  saveState.textContent = "Reset to the starter (Ctrl+Z brings your code back).";
});

$("download-code").addEventListener("click", () => {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([code()], { type: "text/x-python" }));
  a.download = `${data.id}.py`;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
});

setupHints(data.id);
setupReveal(data, () => serverEntry?.status === "solved");
fetchServerProgress().then((got) => {
  serverEntry = got?.[data.id];
  if (serverEntry) paintProgress(load(data.id));
});

// ---- for other panels on this page (e.g. the grading server's) ----------------------------------
/** Put `text` in the editor (Ctrl+Z undoes it); the code it replaces is kept in the progress ("replaced"). */
function setCode(text) {
  saveReplaced(data.id, code());
  replaceAll(view, text);
  view.focus();
}

window.minisglPractice = {
  exercise: data, code, setCode, recordVerdict, lastVerdict: () => lastVerdict, history: () => load(data.id).verdicts,
  renderVerdict: (el, v) => renderVerdict(el, v, cardOptions), stored: () => load(data.id),
};

// Python loads behind the page, once the editor is usable
setTimeout(startJudge, 0);
