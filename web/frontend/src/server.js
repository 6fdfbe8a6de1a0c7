// "Judge on the GPU server" on the exercise page: submit the editor's code to the grading server, follow it
// over Server-Sent Events (queued with position, running, done), show the verdict with the page's cards.
// It uses the page's own hooks (window.minisglPractice: the code, the cards, the history).

const $ = (id) => document.getElementById(id);
const panel = $("server-panel");
const statusLine = $("server-status");
const submitButton = $("server-submit");
const cancelButton = $("server-cancel");
const note = $("server-note");
const verdictBox = $("server-verdict");
let csrf = null;
let current = null; // the submission being followed
let stream = null;

function page() {
  return window.minisglPractice;
}

function modeFor(modes) {
  if (modes.includes("gpu")) return "gpu";
  if (modes.includes("local")) return "cpu";
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

function busy(on) {
  submitButton.toggleAttribute("aria-disabled", on);
  cancelButton.hidden = !on;
}

function describe(sub) {
  if (sub.status === "queued") return sub.position === 1 ? "Queued: next in line." : `Queued: position ${sub.position}.`;
  if (sub.status === "running") return `Running on ${sub.runner || "a runner"}…`;
  if (sub.status === "cancelled") return "Cancelled.";
  return "";
}

function showDone(sub) {
  busy(false);
  current = null;
  const on = sub.judged_on || {};
  const where = on.gpu ? `on ${on.gpu}` : on.emulated ? "on the CPU (emulated CUDA graphs)" : "";
  say(`Judged by ${on.runner || sub.runner || "a runner"} ${where}.`.replace(" .", "."), "done");
  note.hidden = !on.note;
  note.textContent = on.note || "";
  if (sub.verdict) {
    page().renderVerdict(verdictBox, sub.verdict);
    page().recordVerdict(sub.verdict);
  }
}

const POLL_MS = 3000; // when the server refuses a stream (too many open: 429), the submission is read this often

function show(s) {
  if (s.status === "done") {
    showDone(s);
  } else if (s.status === "cancelled") {
    busy(false);
    current = null;
    say("Cancelled.", "cancelled");
  } else {
    say(describe(s), s.status);
  }
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
      busy(false);
      current = null;
      say("Logged out: log in again to see this verdict (it is kept in your submissions).", "login");
      return;
    }
    await new Promise((done) => setTimeout(done, Math.max(POLL_MS, 1000 * (Number(r.retryAfter) || 0))));
  }
}

function follow(sub) {
  current = sub;
  stream?.close();
  stream = new EventSource(sub.links.events);
  const update = (ev) => {
    const s = JSON.parse(ev.data);
    if (s.status === "done" || s.status === "cancelled") stream.close();
    show(s);
  };
  for (const name of ["queued", "running", "done", "cancelled"]) stream.addEventListener(name, update);
  stream.onerror = () => {
    if (!current) return;
    if (stream.readyState === EventSource.CLOSED) {
      // refused, not dropped (an HTTP error such as 429 too_many_streams): the browser will not retry it
      poll(sub);
      return;
    }
    say(`${statusLine.textContent.split(" (")[0]} (reconnecting…)`, panel.dataset.state);
  };
}

async function submit() {
  if (current || submitButton.hasAttribute("aria-disabled")) return;
  const data = page().exercise;
  busy(true);
  verdictBox.replaceChildren();
  note.hidden = true;
  say("Sending your code…", "sending");
  if (!csrf) {
    const me = await json("/api/v1/me");
    if (!me.ok) {
      busy(false);
      say("Log in to judge on the GPU server.", "login");
      return;
    }
    csrf = me.body.csrf_token;
  }
  const r = await json("/api/v1/submissions", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
    body: JSON.stringify({ exercise: data.id, code: page().code(), mode: modeFor(data.modes), run: false }),
  });
  if (!r.ok) {
    busy(false);
    const wait = r.retryAfter ? ` Try again in ${r.retryAfter} s.` : "";
    say(`${r.body.error?.message || `The server refused it (HTTP ${r.status}).`}${wait}`, "refused");
    return;
  }
  say(describe(r.body), r.body.status);
  follow(r.body);
}

async function cancel() {
  if (!current) return;
  await json(current.links.cancel, { method: "POST", headers: { "X-CSRF-Token": csrf } });
}

async function init() {
  if (!panel || !page()) return;
  const mode = modeFor(page().exercise.modes);
  if (!mode) return;
  const g = await json("/api/v1/grading");
  if (!g.ok || g.body.runners < 1) return; // no runners: no panel
  panel.hidden = false;
  const gpus = g.body.gpus.length ? g.body.gpus.join(", ") : "no GPU: CUDA graphs emulated on the CPU";
  $("server-about").textContent += ` Runners now: ${g.body.runners} (${gpus}).`;
  if (!g.body.logged_in) {
    $("server-login").hidden = false;
    $("server-login-link").href = `${g.body.login_url}?next=${encodeURIComponent(location.pathname)}`;
    return;
  }
  $("server-actions").hidden = false;
  submitButton.addEventListener("click", submit);
  cancelButton.addEventListener("click", cancel);
}

// the page's own script sets window.minisglPractice; modules run in order, but wait for it to be sure
if (page()) init();
else window.addEventListener("load", init);
