// The exercise list: the start block's buttons (Start, Continue where you left off, Next), filters applied as
// you type (and kept in the URL), progress badges, export/import. Logged in, the badges, the summary, the
// status filter and Next show the better of this browser's progress and the grading server's.
import { ProgressError, STATUS_TEXT, exportAll, importAll, lastTouched, load, mergedStatus, slugs } from "./progress.js";
import { fetchServerProgress, loggedIn } from "./serverprogress.js";

const form = document.getElementById("filters");
const items = [...document.querySelectorAll(".exercise-item")];
const FIELDS = ["q", "chapter", "difficulty", "mode", "tag", "status"];

let server; // GET /api/v1/progress's exercises once read (logged in only); null: they could not be read

function progressOf(slug) {
  return mergedStatus(load(slug), server?.[slug]);
}

function paintBadges() {
  for (const el of document.querySelectorAll("[data-progress-for]")) {
    const s = progressOf(el.dataset.progressFor);
    el.textContent = STATUS_TEXT[s];
    el.dataset.status = s;
  }
  const solved = items.filter((li) => progressOf(li.dataset.id) === "solved").length;
  const tried = items.filter((li) => progressOf(li.dataset.id) === "tried").length;
  const counts = `Solved ${solved} of ${items.length}, tried ${tried} more`;
  const kept = "your code, your last 20 verdicts per exercise, and what you solved";
  document.getElementById("progress-summary").textContent = server
    ? `${counts}, with your account's verdicts on the grading server. This browser keeps ${kept} (local storage).`
    : server === null ? `${counts}. Kept in this browser (local storage): ${kept}; the grading server's `
      + "verdicts could not be read just now."
      : `${counts}. Kept in this browser${loggedIn() ? "" : " only"} (local storage): ${kept}.`;
}

/** The exercise the grading server last judged for this learner (another computer's work), if any. */
function serverLast(order) {
  let best = null;
  for (const slug of order) {
    const at = server?.[slug]?.last_at;
    if (at && (!best || at > server[best].last_at)) best = slug;
  }
  return best;
}

/** The start block's buttons, from the progress in this browser (else, logged in, the grading server's last
 * verdict). Nothing touched: "Start with the first exercise" is the primary button. The exercise worked on last (lastTouched) not solved yet: "Continue where you
 * left off: <title>" is. It solved: "Next: <title>", the next unsolved exercise after it in list order (from the
 * top again past the end), and no Continue. Once anything is touched, Start is a plain button. */
function paintContinue() {
  const first = document.getElementById("start-first");
  const resume = document.getElementById("continue-last");
  const next = document.getElementById("next-unsolved");
  if (!first || !resume || !next) return;
  const order = items.map((li) => li.dataset.id);
  const titleLink = (slug) => slug && document.querySelector(`.exercise-item[data-id="${slug}"] a.ex-title`);
  const last = lastTouched(order) || serverLast(order);
  let primary = last ? null : first;
  resume.hidden = true;
  next.hidden = true;
  if (last && progressOf(last) === "solved") {
    const at = order.indexOf(last);
    const link = titleLink([...order.slice(at + 1), ...order.slice(0, at)].find((s) => progressOf(s) !== "solved"));
    if (link) {
      next.href = link.href;
      next.textContent = `Next: ${link.textContent}`;
      next.hidden = false;
      primary = next;
    }
  } else if (titleLink(last)) {
    resume.href = titleLink(last).href;
    resume.textContent = `Continue where you left off: ${titleLink(last).textContent}`;
    resume.hidden = false;
    primary = resume;
  }
  for (const button of [first, resume, next]) button.classList.toggle("primary", button === primary);
  if (primary) first.parentElement.prepend(primary); // the primary action comes first
}

function values() {
  const data = new FormData(form);
  return Object.fromEntries(FIELDS.map((k) => [k, String(data.get(k) || "").trim()]));
}

function matches(li, f) {
  const words = f.q.toLowerCase().split(/\s+/).filter(Boolean);
  return words.every((w) => li.dataset.search.includes(w))
    && (!f.chapter || li.dataset.chapter === f.chapter)
    && (!f.difficulty || li.dataset.difficulty === f.difficulty)
    && (!f.mode || li.dataset.modes.split(" ").includes(f.mode))
    && (!f.tag || li.dataset.tags.split(" ").includes(f.tag))
    && (!f.status || progressOf(li.dataset.id) === f.status);
}

function applyFilters() {
  const f = values();
  let shown = 0;
  for (const li of items) {
    li.hidden = !matches(li, f);
    if (!li.hidden) shown++;
  }
  for (const section of document.querySelectorAll("section.chapter")) {
    section.hidden = !section.querySelector(".exercise-item:not([hidden])");
  }
  document.getElementById("list-count").textContent = `${shown} of ${items.length} exercises`;
  document.getElementById("list-empty").hidden = shown > 0;
  const params = new URLSearchParams();
  for (const k of FIELDS) if (f[k]) params.set(k, f[k]);
  const query = params.toString();
  history.replaceState(null, "", query ? `?${query}` : location.pathname);
}

form.addEventListener("input", applyFilters);
form.addEventListener("change", applyFilters);
form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  applyFilters();
});

const message = document.getElementById("progress-message");

function say(text, isError = false) {
  message.textContent = text;
  message.classList.toggle("is-error", isError);
}

document.getElementById("export-progress").addEventListener("click", () => {
  const data = exportAll();
  const blob = new Blob([JSON.stringify(data, null, 2)], { type: "application/json" });
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = `minisgl-practice-progress-${data.exported_at.slice(0, 10)}.json`;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  say(`Exported the progress of ${slugs().length} exercise(s).`);
});

document.getElementById("import-progress").addEventListener("change", async (ev) => {
  const file = ev.target.files[0];
  ev.target.value = "";
  if (!file) return;
  try {
    const n = importAll(await file.text());
    say(`Imported the progress of ${n} exercise(s) from ${file.name}.`);
    paintBadges();
    paintContinue();
    applyFilters();
  } catch (err) {
    if (!(err instanceof ProgressError)) throw err;
    say(`Import refused: ${err.message}.`, true);
  }
});

paintBadges();
paintContinue();
applyFilters();
if (loggedIn()) {
  fetchServerProgress().then((got) => {
    server = got;
    paintBadges();
    paintContinue();
    applyFilters();
  });
}
// back from an exercise, a page restored from the back/forward cache shows what was done there
addEventListener("pageshow", (ev) => {
  if (!ev.persisted) return;
  paintBadges();
  paintContinue();
});
