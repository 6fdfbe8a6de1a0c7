// A verdict (judge/verdict.schema.json) as per-test cards: status, what it checks, message, output, time.
// Failed cards are open. A line in the message is a link: the learner's line (submission.py) moves the
// editor's cursor there; a line of a visible test (tests.py) shows it in the listing of visible tests.

export const STATUS_TEXT = {
  accepted: "Accepted",
  wrong_answer: "Wrong answer",
  runtime_error: "Runtime error",
  compile_error: "Compile error",
  timeout: "Time limit exceeded",
  internal_error: "Internal error (not your fault)",
};
/** The verdict's status in words. Only a Submit (every test) is "Accepted": a Run that passes says what it
 * showed, that the visible tests pass. */
export function statusText(v) {
  if (v.run && v.status === "accepted") return "Visible tests passed";
  return STATUS_TEXT[v.status] || v.status;
}
export const TEST_TEXT = { pass: "pass", fail: "fail", error: "error", skip: "skip", timeout: "timeout" };
const FAILED = new Set(["fail", "error", "timeout"]);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

function seconds(ms) {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

/** The learner's line (deepest frame in submission.py) and the tests.py line, if the message names them. */
export function linesIn(message, filename = "submission.py") {
  const esc = filename.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const mine = [...message.matchAll(new RegExp(`${esc}"?, line (\\d+)`, "g"))].map((m) => Number(m[1]));
  const tests = [...message.matchAll(/tests\.py"?, line (\d+)/g)].map((m) => Number(m[1]));
  return { code: mine.length ? mine[mine.length - 1] : null, tests: tests.length ? tests[tests.length - 1] : null };
}

function lineLinks(message, { onGotoLine, onShowTestLine, canShowTestLine, filename }) {
  const { code, tests } = linesIn(message || "", filename);
  const links = [];
  if (code && onGotoLine) {
    links.push(el("button", { type: "button", class: "link-button goto-code", "data-line": code, onclick: () => onGotoLine(code) },
      `Go to line ${code} of your code`));
  }
  if (tests && onShowTestLine && canShowTestLine?.(tests)) {
    links.push(el("button", { type: "button", class: "link-button goto-test", "data-line": tests, onclick: () => onShowTestLine(tests) },
      `Show line ${tests} of tests.py`));
  }
  return links.length ? el("p", { class: "line-links" }, ...links) : null;
}

function testCard(t, opts) {
  const failed = FAILED.has(t.status);
  return el("details", { class: `test-card status-${t.status}`, open: failed, "data-test": t.name },
    el("summary", {},
      el("span", { class: `test-status status-${t.status}`, text: TEST_TEXT[t.status] || t.status }),
      el("code", { class: "test-name", text: t.name }),
      t.visible ? null : el("span", { class: "test-hidden", text: "hidden" }),
      el("span", { class: "test-ms", text: seconds(t.ms || 0) })),
    t.doc ? el("p", { class: "test-doc", text: t.doc }) : null,
    t.message ? el("pre", { class: "test-message", text: t.message }) : null,
    t.message ? lineLinks(t.message, opts) : null,
    t.output ? el("div", { class: "test-output" }, el("p", { class: "output-title", text: "Printed" }),
      el("pre", { text: t.output })) : null);
}

/** Where a verdict was judged, in words: the grading server's (``source``, set by the server panel) or this
 * browser's. */
export function sourceText(v) {
  if (v.source?.kind === "server") return v.source.text;
  if (v.mode === "browser") return "this browser, advisory";
  return v.mode === "gpu" ? "grading server, GPU, trusted" : `mode ${v.mode}`;
}

/** The same as a word at a glance: "Server" (trusted) or "Browser" (advisory). */
export function sourceBadge(v) {
  const server = v.source?.kind === "server" || v.mode === "gpu";
  return el("span", { class: `verdict-source source-${server ? "server" : "browser"}`, text: server ? "Server" : "Browser" });
}

/** What Submit runs, after a Run that passed: "Submit runs all 10 tests (8 of them hidden)". `testCount` is
 * the exercise's {visible, hidden}, when the page knows it. */
function submitRuns(testCount) {
  if (!testCount) return "Submit runs all the tests";
  const all = testCount.visible + testCount.hidden;
  return `Submit runs all ${all} tests${testCount.hidden ? ` (${testCount.hidden} of them hidden)` : ""}`;
}

/** Render `verdict` into `container` (replacing what was there). `opts.testCount` ({visible, hidden}) lets a
 * passing Run say how many tests Submit runs. */
export function renderVerdict(container, verdict, opts = {}) {
  const v = verdict;
  const what = v.run ? "Run (visible tests)" : "Submit (all tests)";
  const counts = `${v.passed}/${v.total} passed, ${v.failed} failed${v.skipped ? `, ${v.skipped} skipped` : ""}`;
  const runPassed = v.run && v.status === "accepted";
  const head = el("div", { class: `verdict-head status-${v.status}${runPassed ? " run-passed" : ""}` },
    el("p", { class: "verdict-status", text: runPassed ? `${statusText(v)} · ${v.passed}/${v.total}` : statusText(v) }),
    runPassed ? el("p", { class: "verdict-next", text: `Not accepted yet: ${submitRuns(opts.testCount)}.` }) : null,
    el("p", { class: "verdict-counts", text: `${counts} · ${seconds(v.ms || 0)} · ${what}` }),
    el("p", { class: "verdict-where" }, sourceBadge(v), `Judged on: ${sourceText(v)}`));
  const parts = [head];
  if (v.message) parts.push(el("pre", { class: "verdict-message", text: v.message }), lineLinks(v.message, opts));
  if (v.output) parts.push(el("div", { class: "test-output" }, el("p", { class: "output-title", text: "Printed while loading" }), el("pre", { text: v.output })));
  if (v.tests?.length) parts.push(el("div", { class: "test-cards" }, ...v.tests.map((t) => testCard(t, opts))));
  if (v.metrics && Object.keys(v.metrics).length) {
    parts.push(el("dl", { class: "metrics" }, ...Object.entries(v.metrics).flatMap(([k, n]) => [el("dt", { text: k }), el("dd", { text: String(n) })])));
  }
  container.replaceChildren(...parts.filter(Boolean));
  container.dataset.status = v.status;
}

/** A line saying what is being judged (while waiting for the verdict). */
export function renderPending(container, text) {
  container.replaceChildren(el("div", { class: "verdict-head status-pending" }, el("p", { class: "verdict-status", text })));
  container.dataset.status = "pending";
}
