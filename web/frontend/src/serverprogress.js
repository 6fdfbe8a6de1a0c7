// The grading server's progress of the logged-in learner (GET /api/v1/progress: per exercise "solved" or
// "tried"), for the list and exercise pages to merge into the browser's (progress.js mergedStatus). The page
// says where to ask with <meta name="minisgl-progress"> only when someone is logged in.

/** Whether the page was rendered for a logged-in learner. */
export function loggedIn() {
  return !!document.querySelector('meta[name="minisgl-progress"]');
}

/** The server's progress by exercise id; null when logged out, offline or refused (the browser's alone then). */
export async function fetchServerProgress() {
  const url = document.querySelector('meta[name="minisgl-progress"]')?.content;
  if (!url) return null;
  try {
    const r = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (!r.ok) return null;
    const body = await r.json();
    return body && typeof body.exercises === "object" ? body.exercises : null;
  } catch {
    return null;
  }
}
