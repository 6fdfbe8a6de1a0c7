// "Judge on the grading server" on the exercise page: submit the editor's code to the grading server, follow it
// over Server-Sent Events (queued with position, running, done), show the verdict with the page's cards, and
// say where it ran (a GPU, or a CPU with emulated CUDA graphs; always trusted mode). After a reload it shows
// this learner's latest submission of the exercise (GET /api/v1/submissions?exercise=ID&limit=1) and follows
// it if it is still queued or running.
// It uses the page's own hooks (window.minisglPractice: the code, the cards, the history).
// Logged in, the panel also holds "Your code on the server" (workspace.js), runners or not.
import { setupWorkspace } from "./workspace.js";

const $ = (id) => document.getElementById(id);
const panel = $("server-panel");
const statusLine = $("server-status");
const submitButton = $("server-submit");
const cancelButton = $("server-cancel");
const note = $("server-note");
const verdictBox = $("server-verdict");
let csrf = null;
let mode = null; // the server's mode for this exercise: "gpu" (a GPU, or emulated on a CPU) or "cpu"
let current = null; // the submission being followed
let stream = null;

function page() {
  return window.minisglPractice;
}

/** The server's mode for an exercise with `modes`, among those the runners online take (`taken`). */
function modeFor(modes, taken) {
  if (modes.includes("gpu") && taken.includes("gpu")) return "gpu";
  if (modes.includes("local") && taken.includes("cpu")) return "cpu";
  return null;
}

async function json(url, options = {}) {
  const r = await fetch(url, { headers: { Accept: "application/json", ...(options.headers || {}) }, ...options });
  const body = r.status === 204 ? {} : await r.json().catch(() => ({}));
  return { ok: r.ok, status: r.status, body, retryAfter: r.headers.get("Retry-After") };
}

function say(text, state) {
  statusLine.textContent = text;
  panel.dataset.state = state;
}

// Cancel is there only while a submission is queued or running
function busy(on) {
  submitButton.toggleAttribute("aria-disabled", on);
  cancelButton.hidden = !on;
}

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

/** What judged it, from the submission's judged_on: "GPU NVIDIA H200", "CPU with emulated CUDA graphs", "CPU". */
function device(on) {
  if (on.gpu && on.device !== "cpu") return `GPU ${on.gpu}`;
  return on.emulated ? "CPU with emulated CUDA graphs" : "CPU";
}

/** A runner online, as the panel lists it for this exercise's mode. */
function runnerText(r) {
  if (mode === "gpu") return r.gpu ? `GPU ${r.gpu}` : `${r.runner}: CPU, emulated CUDA graphs`;
  return `${r.runner}: CPU`;
}

function describe(sub) {
  if (sub.status === "queued") return sub.position === 1 ? "Queued: next in line." : `Queued: position ${sub.position}.`;
  if (sub.status === "running") return `Running on ${sub.runner_label || "a runner"}…`;
  if (sub.status === "cancelled") return "Cancelled.";
  return "";
}

function end(sub, text, state) {
  if (current === sub || current?.id === sub.id) current = null;
  stream?.close();
  busy(false);
  say(text, state);
}

function showDone(sub) {
  const on = sub.judged_on || {};
  const what = device(on);
  end(sub, `Judged ${when(sub.finished_at)} by ${sub.runner_label || "a runner"}: ${what}, trusted mode.`, "done");
  note.hidden = !on.note;
  note.textContent = on.note || "";
  if (!sub.verdict) return;
  const verdict = { ...sub.verdict, source: { kind: "server", text: `grading server, ${what}, trusted`, submission: sub.id, at: sub.finished_at } };
  page().renderVerdict(verdictBox, verdict);
  if (!page().history().some((v) => v.source?.submission === sub.id)) page().recordVerdict(verdict);
}

const POLL_MS = 3000; // when the server refuses a stream (too many open: 429), the submission is read this often

function show(s) {
  if (s.status === "done") showDone(s);
  else if (s.status === "cancelled") end(s, `Cancelled${s.finished_at ? ` ${when(s.finished_at)}` : ""}.`, "cancelled");
  else say(describe(s), s.status);
}

// Without a stream: read the submission now and then until it ends (the same states, a little later).
async function poll(sub) {
  while (current === sub) {
    const r = await json(sub.links.self);
    if (current !== sub) return;
    if (r.ok) {
      show(r.body);
      if (r.body.status === "done" || r.body.status === "cancelled") return;
    } else if (r.status === 401) {
      end(sub, "Logged out: log in again to see this verdict (it is kept in your submissions).", "login");
      return;
    }
    await new Promise((done) => setTimeout(done, Math.max(POLL_MS, 1000 * (Number(r.retryAfter) || 0))));
  }
}

function follow(sub) {
  current = sub;
  busy(true);
  say(describe(sub), sub.status);
  stream?.close();
  stream = new EventSource(sub.links.events);
  const update = (ev) => {
    if (current === sub) show(JSON.parse(ev.data));
  };
  for (const name of ["queued", "running", "done", "cancelled"]) stream.addEventListener(name, update);
  stream.onerror = () => {
    if (current !== sub) return;
    if (stream.readyState === EventSource.CLOSED) {
      // refused, not dropped (an HTTP error such as 429 too_many_streams): the browser will not retry it
      poll(sub);
      return;
    }
    say(`${statusLine.textContent.split(" (")[0]} (reconnecting…)`, panel.dataset.state);
  };
}

async function token() {
  if (!csrf) {
    const me = await json("/api/v1/me");
    if (me.ok) csrf = me.body.csrf_token;
  }
  return csrf;
}

async function submit() {
  if (current || submitButton.hasAttribute("aria-disabled")) return;
  const data = page().exercise;
  busy(true);
  verdictBox.replaceChildren();
  note.hidden = true;
  say("Sending your code…", "sending");
  if (!(await token())) {
    busy(false);
    say("Log in to judge on the grading server.", "login");
    return;
  }
  const r = await json("/api/v1/submissions", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
    body: JSON.stringify({ exercise: data.id, code: page().code(), mode, run: false }),
  });
  if (!r.ok) {
    busy(false);
    const wait = r.retryAfter ? ` Try again in ${r.retryAfter} s.` : "";
    say(`${r.body.error?.message || `The server refused it (HTTP ${r.status}).`}${wait}`, "refused");
    return;
  }
  follow(r.body);
}

async function cancel() {
  const sub = current;
  if (!sub || !(await token())) return;
  say("Cancelling…", panel.dataset.state);
  const r = await json(sub.links.cancel, { method: "POST", headers: { "X-CSRF-Token": csrf } });
  if (current !== sub) return; // it ended meanwhile (the stream said so)
  if (r.ok) show(r.body);
  else if (r.status === 409) show((await json(sub.links.self)).body); // finished before the cancel: show how
  else say(`Could not cancel: ${r.body.error?.message || `HTTP ${r.status}`}. ${describe(sub)}`, sub.status);
}

/** After a reload: this learner's latest submission of this exercise, shown (or followed) in the panel. */
async function resume() {
  const id = encodeURIComponent(page().exercise.id);
  const r = await json(`/api/v1/submissions?exercise=${id}&limit=1`);
  const last = r.ok ? r.body.submissions?.[0] : null;
  if (!last || current) return;
  if (last.status === "queued" || last.status === "running") follow(last);
  else if (last.status === "cancelled") say(`Your last submission here (${when(last.created_at)}) was cancelled.`, "cancelled");
  else {
    const full = await json(last.links.self);
    if (full.ok && !current) show(full.body);
  }
}

async function init() {
  if (!panel || !page()) return;
  const g = await json("/api/v1/grading").catch(() => ({ ok: false }));
  if (!g.ok) return;
  // no runners, or none judges this exercise's modes (browser only, or no runner takes them): no judging here
  mode = g.body.runners < 1 ? null : modeFor(page().exercise.modes, g.body.modes);
  if (g.body.logged_in) {
    panel.hidden = false;
    setupWorkspace({ request: json, csrf: token, page: page() });
  }
  if (!mode) {
    if (g.body.logged_in) { // only the code part: the panel is about that
      $("server-h").textContent = "Your code on the grading server";
      $("server-about").textContent = "Save your code here to open it in another browser once you log in there.";
    }
    return;
  }
  panel.hidden = false;
  const able = g.body.online.filter((r) => r.modes.includes(mode));
  const counts = new Map();
  for (const r of able) counts.set(runnerText(r), (counts.get(runnerText(r)) || 0) + 1);
  const where = [...counts].map(([text, n]) => (n > 1 ? `${text} (${n} runners)` : text)).join("; ");
  $("server-where").textContent = `It runs now on: ${where}.`;
  if (mode === "gpu") {
    $("server-about").textContent = "A runner of the grading server judges your code in trusted mode, on a GPU with "
      + "real CUDA graphs (or, on a runner without one, on the CPU with emulated CUDA graphs: the verdict says which). "
      + "This verdict counts for the course.";
    submitButton.textContent = able.every((r) => r.gpu) ? "Judge on a GPU" : "Judge on the grading server";
  } else {
    $("server-about").textContent = "This exercise has no GPU mode: a runner of the grading server judges it on "
      + "its CPU, in trusted mode. This verdict counts for the course.";
    submitButton.textContent = "Judge on the server's CPU";
  }
  if (!g.body.logged_in) {
    $("server-login").hidden = false;
    $("server-login-link").href = `${g.body.login_url}?next=${encodeURIComponent(location.pathname)}`;
    return;
  }
  $("server-actions").hidden = false;
  submitButton.addEventListener("click", submit);
  cancelButton.addEventListener("click", cancel);
  await resume();
}

// the page's own script sets window.minisglPractice; modules run in order, but wait for it to be sure
if (page()) init();
else window.addEventListener("load", init);
