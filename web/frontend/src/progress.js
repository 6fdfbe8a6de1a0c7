// Progress, kept in this browser only (localStorage): per exercise, the code (autosaved), the last 20
// verdicts, whether it was solved (a Submit that was accepted) and how many hints were shown. Export/import as
// one versioned JSON file.
//
// Storage: one key per exercise, "minisgl-practice.v1.<id>" -> {code, savedAt, verdicts[], solved, solvedAt,
// hints} ("hints" came later: entries and exports without it read as 0).
// A verdict from the grading server's panel has a `source` ({kind: "server", text, submission, at}); one judged
// in this browser has none. Either kind of accepted Submit marks the exercise solved.
// Logged in, the pages also show the grading server's progress of the account (serverprogress.js): the better
// of the two statuses (mergedStatus), never written here, so an export is what this browser has.
// "replaced" ({code, at}): the code the editor held when the learner opened the code saved on the server.

export const FORMAT = "minisgl-practice-progress";
export const VERSION = 1;
export const MAX_VERDICTS = 20;
const PREFIX = `minisgl-practice.v${VERSION}.`;
const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const MAX_CODE = 200_000; // characters; a bigger "code" in an import is refused
const MAX_HINTS = 100; // a bigger "hints" count in an import is refused
const STATUSES = ["accepted", "wrong_answer", "runtime_error", "compile_error", "timeout", "internal_error"];
const TEST_STATUSES = ["pass", "fail", "error", "skip", "timeout"];

export class ProgressError extends Error {}

function cap(text, n) {
  text = typeof text === "string" ? text : "";
  return text.length <= n ? text : `${text.slice(0, n)}\n... [${text.length - n} more characters not kept]`;
}

export function blank() {
  return { code: null, savedAt: null, verdicts: [], solved: false, solvedAt: null, hints: 0 };
}

function read(slug) {
  try {
    const raw = localStorage.getItem(PREFIX + slug);
    return raw ? { ...blank(), ...JSON.parse(raw) } : blank();
  } catch {
    return blank();
  }
}

function write(slug, entry) {
  localStorage.setItem(PREFIX + slug, JSON.stringify(entry)); // throws when storage is full or disabled
}

export function load(slug) {
  return read(slug);
}

/** Autosave; returns false when the browser refuses to store (full, or disabled). */
export function saveCode(slug, code) {
  const entry = read(slug);
  entry.code = code;
  entry.savedAt = new Date().toISOString();
  try {
    write(slug, entry);
    return true;
  } catch {
    return false;
  }
}

/** Record that the first ``count`` hints were shown (never fewer than before); false when storage refuses. */
export function saveHints(slug, count) {
  const entry = read(slug);
  entry.hints = Math.max(Number.isInteger(entry.hints) ? entry.hints : 0, count);
  try {
    write(slug, entry);
    return true;
  } catch {
    return false;
  }
}

/** Where a server verdict came from (the panel's label, its submission, its time); null for the browser's. */
function sourceOf(verdict) {
  const s = verdict.source;
  if (!s || s.kind !== "server") return null;
  return { kind: "server", text: cap(s.text, 200), submission: Number.isInteger(s.submission) ? s.submission : null,
    at: typeof s.at === "string" ? s.at : null };
}

/** What is kept of a verdict: everything the cards show, long texts capped. */
export function compact(verdict) {
  const source = sourceOf(verdict);
  return {
    at: source?.at || new Date().toISOString(), source,
    status: verdict.status, run: !!verdict.run, mode: verdict.mode,
    passed: verdict.passed, failed: verdict.failed, skipped: verdict.skipped, total: verdict.total, ms: verdict.ms,
    message: cap(verdict.message, 2000), output: cap(verdict.output, 1000), env: verdict.env || null,
    tests: (verdict.tests || []).map((t) => ({
      name: t.name, doc: t.doc, status: t.status, message: cap(t.message, 2000), output: cap(t.output, 1000),
      ms: t.ms, visible: !!t.visible,
    })),
  };
}

/** Record a verdict (newest first, at most 20); a Submit that is accepted marks the exercise solved. */
export function addVerdict(slug, verdict) {
  const entry = read(slug);
  entry.verdicts = [compact(verdict), ...entry.verdicts].slice(0, MAX_VERDICTS);
  if (verdict.status === "accepted" && !verdict.run && !entry.solved) {
    entry.solved = true;
    entry.solvedAt = new Date().toISOString();
  }
  try {
    write(slug, entry);
  } catch {
    // storage full: keep only the newest verdict rather than lose the solved state
    entry.verdicts = entry.verdicts.slice(0, 1);
    try { write(slug, entry); } catch { /* nothing more we can do */ }
  }
  return entry;
}

export function status(entry) {
  if (entry.solved) return "solved";
  return entry.verdicts.length ? "tried" : "new";
}

const RANK = { new: 0, tried: 1, solved: 2 };

/** The better of this browser's status for an entry and the server's for the same exercise (solved > tried >
 * not tried); `server` is the exercise's entry of GET /api/v1/progress, or undefined. */
export function mergedStatus(entry, server) {
  const mine = status(entry);
  const theirs = server && RANK[server.status] !== undefined ? server.status : "new";
  return RANK[theirs] > RANK[mine] ? theirs : mine;
}

/** Keep the code the editor had before it was replaced by the server's (recoverable); false when storage refuses. */
export function saveReplaced(slug, code) {
  const entry = read(slug);
  entry.replaced = { code, at: new Date().toISOString() };
  try {
    write(slug, entry);
    return true;
  } catch {
    return false;
  }
}

export const STATUS_TEXT = { solved: "solved", tried: "tried", new: "not tried" };

export function slugs() {
  const out = [];
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    if (key && key.startsWith(PREFIX)) out.push(key.slice(PREFIX.length));
  }
  return out.sort();
}

/** The exercise worked on last (its code saved or a verdict kept, newest), of those in `known`; null if none.
 * From the times the entries already carry (savedAt, verdicts' at), so exports old and new say it too. */
export function lastTouched(known) {
  let best = null;
  let bestAt = -Infinity;
  for (const slug of slugs()) {
    if (!known.includes(slug)) continue;
    const entry = read(slug);
    const at = Math.max(...[entry.savedAt, entry.verdicts[0]?.at].map((t) => Date.parse(t)).filter((t) => !Number.isNaN(t)));
    if (at > bestAt) [best, bestAt] = [slug, at];
  }
  return best;
}

export function exportAll() {
  const exercises = {};
  for (const slug of slugs()) exercises[slug] = read(slug);
  return { format: FORMAT, version: VERSION, exported_at: new Date().toISOString(), exercises };
}

function check(cond, message) {
  if (!cond) throw new ProgressError(message);
}

function validEntry(slug, e) {
  const where = `exercise "${slug}"`;
  check(e && typeof e === "object" && !Array.isArray(e), `${where}: not an object`);
  check(e.code === null || e.code === undefined || typeof e.code === "string", `${where}: "code" must be text`);
  check(typeof e.code !== "string" || e.code.length <= MAX_CODE, `${where}: "code" is longer than ${MAX_CODE} characters`);
  check(e.solved === undefined || typeof e.solved === "boolean", `${where}: "solved" must be true or false`);
  check(e.hints === undefined || Number.isInteger(e.hints) && e.hints >= 0 && e.hints <= MAX_HINTS,
    `${where}: "hints" must be a whole number from 0 to ${MAX_HINTS}`);
  const verdicts = e.verdicts === undefined ? [] : e.verdicts;
  check(Array.isArray(verdicts), `${where}: "verdicts" must be a list`);
  verdicts.forEach((v, i) => {
    check(v && typeof v === "object" && STATUSES.includes(v.status), `${where}: verdict ${i + 1} has no valid status`);
    check(Array.isArray(v.tests || []), `${where}: verdict ${i + 1}: "tests" must be a list`);
    (v.tests || []).forEach((t, j) => {
      check(t && typeof t.name === "string" && TEST_STATUSES.includes(t.status),
        `${where}: verdict ${i + 1}, test ${j + 1}: needs a name and a valid status`);
    });
  });
  return {
    code: typeof e.code === "string" ? e.code : null,
    savedAt: typeof e.savedAt === "string" ? e.savedAt : null,
    verdicts: verdicts.slice(0, MAX_VERDICTS).map((v) => compact(v)).map((c, i) => ({ ...c, at: verdicts[i].at || c.at })),
    solved: !!e.solved,
    solvedAt: typeof e.solvedAt === "string" ? e.solvedAt : null,
    hints: e.hints || 0,
  };
}

/** Parse and check an export; write it only when all of it is valid (exercises in the file replace
 * those in this browser, others are kept). Throws ProgressError with a message, changing nothing. */
export function importAll(text) {
  let data;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new ProgressError(`this file is not JSON (${e.message}); nothing was imported`);
  }
  check(data && typeof data === "object" && data.format === FORMAT,
    `this is not a progress export (expected "format": "${FORMAT}"); nothing was imported`);
  check(Number.isInteger(data.version), "the export has no version; nothing was imported");
  check(data.version <= VERSION, `the export is version ${data.version}, made by a newer site (this one reads ${VERSION}); nothing was imported`);
  check(data.exercises && typeof data.exercises === "object" && !Array.isArray(data.exercises),
    `"exercises" must be an object; nothing was imported`);
  const entries = [];
  for (const [slug, e] of Object.entries(data.exercises)) {
    check(SLUG.test(slug) && slug.length <= 64, `"${slug.slice(0, 80)}" is not an exercise id; nothing was imported`);
    try {
      entries.push([slug, validEntry(slug, e)]);
    } catch (err) {
      throw new ProgressError(`${err.message}; nothing was imported`);
    }
  }
  const before = entries.map(([slug]) => [slug, localStorage.getItem(PREFIX + slug)]);
  try {
    for (const [slug, e] of entries) write(slug, e);
  } catch {
    for (const [slug, raw] of before) {
      if (raw === null) localStorage.removeItem(PREFIX + slug);
      else localStorage.setItem(PREFIX + slug, raw);
    }
    throw new ProgressError("this browser's storage is full; nothing was imported");
  }
  return entries.length;
}
