// The explanation and reference solution: shown at once once the exercise is solved (in this browser, or on the
// grading server for the logged-in learner) or every hint was used; before that, only after a confirmation (a
// modal <dialog>). "Loading…" until it arrives.
import { createEditor } from "./editor.js";
import { hintsUsed } from "./hints.js";
import { load } from "./progress.js";

/** The confirmation's question, or null when the reference may be shown at once. */
function question(slug, totalHints, solvedOnServer) {
  if (load(slug).solved || solvedOnServer()) return null;
  const left = totalHints - hintsUsed(slug, totalHints);
  if (left <= 0) return null;
  return `You have not solved it and have ${left} ${left === 1 ? "hint" : "hints"} left. Show the reference anyway?`;
}

/** Open the dialog; resolves true for Show, false for Cancel or Esc. */
function confirmed(dialog, text) {
  dialog.querySelector("#reveal-confirm-text").textContent = text;
  return new Promise((resolve) => {
    const show = dialog.querySelector("#reveal-show");
    const cancel = dialog.querySelector("#reveal-cancel");
    const done = (answer) => () => dialog.close(answer);
    const onShow = done("show");
    const onCancel = done("cancel");
    show.addEventListener("click", onShow);
    cancel.addEventListener("click", onCancel);
    dialog.addEventListener("close", () => {
      show.removeEventListener("click", onShow);
      cancel.removeEventListener("click", onCancel);
      resolve(dialog.returnValue === "show");
    }, { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
}

async function showReference(box, button, url) {
  button.setAttribute("aria-disabled", "true");
  const loading = document.createElement("p");
  loading.className = "solution-loading";
  loading.textContent = "Loading the reference…";
  box.replaceChildren(loading);
  box.setAttribute("aria-busy", "true");
  box.hidden = false;
  try {
    const r = await fetch(url, { headers: { Accept: "application/json" } });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.error?.message || `${r.status} ${r.statusText}`);
    const explanation = document.createElement("div");
    explanation.className = "prose";
    explanation.innerHTML = body.explanation_html; // rendered by the site from the exercise's explanation.md
    const title = document.createElement("h3");
    title.textContent = "Reference solution";
    const listing = document.createElement("div");
    listing.className = "solution-code";
    box.replaceChildren(explanation, title, listing);
    createEditor(listing, body.solution, { readOnly: true, label: "Reference solution" });
    button.hidden = true;
  } catch (err) {
    const line = document.createElement("p");
    line.className = "solution-error";
    line.textContent = `Could not load the reference: ${err.message}. Try the button again.`;
    box.replaceChildren(line);
    button.removeAttribute("aria-disabled");
  } finally {
    box.removeAttribute("aria-busy");
  }
}

/** `solvedOnServer()`: whether the grading server has an accepted submission of the learner (logged in). */
export function setupReveal(data, solvedOnServer = () => false) {
  const button = document.getElementById("reveal-solution");
  const box = document.getElementById("solution");
  const dialog = document.getElementById("reveal-confirm");
  let busy = false;
  button.addEventListener("click", async () => {
    if (busy) return;
    busy = true;
    try {
      const ask = question(data.id, data.hints, solvedOnServer);
      if (ask && !(await confirmed(dialog, ask))) {
        button.focus();
        return;
      }
      await showReference(box, button, data.urls.solution);
    } finally {
      busy = false;
    }
  });
}
