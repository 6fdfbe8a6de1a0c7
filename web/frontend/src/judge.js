// The page's side of in-browser judging: loads the judge client that the site serves under
// /static/judge/ (Pyodide in a Web Worker, branch `browser`) and adapts it to what the page needs:
//   const judge = createJudge({ onStatus });   // starts loading Python behind the page
//   await judge.judge({ exercise, source, runOnly })  -> a verdict (judge/verdict.schema.json)
// onStatus({ state: "loading" | "ready" | "busy" | "unavailable" | "error", text, loaded, total }).
export const CLIENT_URL = "/static/judge/client.js";

export function createJudge({ onStatus = () => {}, clientUrl = CLIENT_URL } = {}) {
  let client = null;
  const ready = (async () => {
    onStatus({ state: "loading", text: "Python: loading the judge…" });
    let mod;
    try {
      mod = await import(/* @vite-ignore */ clientUrl);
    } catch {
      onStatus({ state: "unavailable", text: "In-browser judging is not installed on this site: use “Run locally” below." });
      throw new Error("in-browser judging is not installed on this site");
    }
    client = await mod.createClient({ onProgress: (p) => onStatus({ state: "loading", ...p }) });
    onStatus({ state: "ready", text: "Python is ready: Run and Submit judge in your browser." });
    return client;
  })();
  ready.catch(() => {});

  return {
    ready,
    async judge({ exercise, source, runOnly }) {
      const c = await ready;
      return c.judge({ exercise, source, runOnly });
    },
  };
}
