// "Your code on the server", in the grading server's panel (logged in only): "Save code to the server" (PUT
// /api/v1/workspaces/ID) and, when the server has code saved for this exercise that differs from the editor's,
// "Open saved code (saved <time>)", which puts it in the editor. Replacing code that is neither the starter nor
// the saved code asks first; the code replaced is kept (Ctrl+Z, "Put back the code you had", and the browser's
// progress: "replaced"). Errors (offline, over the size limit) are said here and change nothing.

const $ = (id) => document.getElementById(id);

/** `request(url, options)`: server.js's fetch of JSON ({ok, status, body}); `csrf()`: the session's CSRF token. */
export function setupWorkspace({ request, csrf, page }) {
  const box = $("server-code");
  const saveButton = $("server-save");
  const openButton = $("server-open");
  const putBack = $("server-put-back");
  const line = $("server-code-status");
  if (!box) return;
  const url = `/api/v1/workspaces/${encodeURIComponent(page.exercise.id)}`;
  let saved = null; // {code, saved_at} on the server, as last seen
  let previous = null; // the editor's code before the last "Open saved code"

  const when = (iso) => new Date(iso).toLocaleString();
  const say = (text, state) => {
    line.textContent = text;
    box.dataset.state = state;
  };

  function paint() {
    openButton.hidden = !saved || saved.code === page.code();
    if (saved) openButton.textContent = `Open saved code (saved ${when(saved.saved_at)})`;
    putBack.hidden = previous === null;
  }

  async function call(options, where = url) {
    try {
      return await request(where, options);
    } catch {
      return { ok: false, status: 0, body: {} }; // offline, or the server is away
    }
  }

  function problem(r, what) {
    if (r.status === 0) return `Could not reach the server to ${what}: nothing was changed, your code is still in the editor and in this browser.`;
    return `Could not ${what}: ${r.body.error?.message || `HTTP ${r.status}`} Your code is still in the editor and in this browser.`;
  }

  async function save() {
    if (saveButton.hasAttribute("aria-disabled")) return;
    saveButton.setAttribute("aria-disabled", "true");
    say("Saving your code to the server…", "saving");
    const code = page.code();
    const token = await csrf().catch(() => null);
    const r = token ? await call({ method: "PUT", headers: { "Content-Type": "application/json", "X-CSRF-Token": token },
      body: JSON.stringify({ code }) }) : { ok: false, status: 0, body: {} };
    saveButton.removeAttribute("aria-disabled");
    if (!r.ok) {
      say(problem(r, "save it to the server"), "error");
      return;
    }
    saved = { code, saved_at: r.body.saved_at };
    say(`Saved to the server ${when(r.body.saved_at)} (${r.body.size} bytes).`, "saved");
    paint();
  }

  function open() {
    if (!saved) return;
    const mine = page.code();
    const starter = page.exercise.starter;
    if (mine !== saved.code && mine !== starter
        && !window.confirm("Replace the code in the editor with the code saved on the server? Your code now is kept: "
          + "Ctrl+Z or \"Put back the code you had\" brings it back.")) return;
    previous = mine;
    page.setCode(saved.code);
    say(`Opened your code saved on the server ${when(saved.saved_at)}.`, "opened");
    paint();
  }

  function restore() {
    if (previous === null) return;
    page.setCode(previous);
    previous = null;
    say("Put back the code you had before opening the saved code.", "restored");
    paint();
  }

  saveButton.addEventListener("click", save);
  openButton.addEventListener("click", open);
  putBack.addEventListener("click", restore);
  document.addEventListener("input", () => paint()); // typing may make the editor equal to, or differ from, it
  box.hidden = false;

  (async () => { // the list first: no request that answers 404 when nothing is saved for this exercise
    const list = await call({}, "/api/v1/workspaces");
    const here = list.ok && list.body.workspaces?.some((w) => w.exercise === page.exercise.id);
    const r = here ? await call({}) : list;
    if (here && r.ok) saved = { code: r.body.code, saved_at: r.body.saved_at };
    else if (!r.ok) say(problem(r, "read the code saved on the server"), "error");
    paint();
  })();
}
