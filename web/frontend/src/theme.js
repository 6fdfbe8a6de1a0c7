// Light and dark themes: follow the system unless the visitor picked one (kept in localStorage).
// Runs in <head> before the first paint; binds the toggle button once the page is parsed.
const KEY = "minisgl-practice.theme";
const ORDER = ["system", "light", "dark"];

function stored() {
  try {
    const v = localStorage.getItem(KEY);
    return ORDER.includes(v) ? v : "system";
  } catch {
    return "system";
  }
}

function effective(choice) {
  if (choice !== "system") return choice;
  return window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

function apply(choice) {
  const root = document.documentElement;
  if (choice === "system") delete root.dataset.theme;
  else root.dataset.theme = choice;
  root.dataset.effectiveTheme = effective(choice);
}

function label(button, choice) {
  const text = choice === "system" ? `Theme: system (${effective(choice)})` : `Theme: ${choice}`;
  button.querySelector(".theme-label").textContent = text;
  button.dataset.choice = choice;
  button.title = `${text}. Click for ${ORDER[(ORDER.indexOf(choice) + 1) % ORDER.length]}.`;
}

let choice = stored();
apply(choice);

document.addEventListener("DOMContentLoaded", () => {
  const button = document.getElementById("theme-toggle");
  if (!button) return;
  label(button, choice);
  button.addEventListener("click", () => {
    choice = ORDER[(ORDER.indexOf(choice) + 1) % ORDER.length];
    try {
      localStorage.setItem(KEY, choice);
    } catch {
      /* private mode: the choice lasts for this page only */
    }
    apply(choice);
    label(button, choice);
    document.dispatchEvent(new CustomEvent("themechange", { detail: effective(choice) }));
  });
  if (window.matchMedia) {
    matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
      apply(choice);
      label(button, choice);
    });
  }
});
