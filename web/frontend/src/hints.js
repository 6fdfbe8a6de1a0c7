// The exercise page's hints: written with the exercise (hints.md, rendered by the site, hidden in the page),
// shown one at a time; how many were shown is kept in this browser's progress and said in the history.
import { load, saveHints } from "./progress.js";

/** How many of the exercise's ``total`` hints were shown in this browser. */
export function hintsUsed(slug, total) {
  const used = load(slug).hints;
  return Number.isInteger(used) ? Math.min(Math.max(used, 0), total) : 0;
}

export function setupHints(slug) {
  const list = document.getElementById("hint-list");
  if (!list) return; // an exercise without hints
  const items = [...list.children];
  const button = document.getElementById("show-hint");
  const usedLine = document.getElementById("hints-used");
  const total = items.length;

  function paint(used) {
    items.forEach((li, i) => { li.hidden = i >= used; });
    button.hidden = used >= total;
    button.textContent = `Show hint ${used + 1} of ${total}`;
    usedLine.textContent = ` · ${used} of ${total} hints used`;
  }

  paint(hintsUsed(slug, total));
  button.addEventListener("click", () => {
    const used = Math.min(hintsUsed(slug, total) + 1, total);
    saveHints(slug, used);
    paint(used);
    if (used >= total) items[used - 1].focus(); // the button is gone: the last hint takes the focus
  });
}
