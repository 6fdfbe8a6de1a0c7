// The code editor: CodeMirror 6 with Python highlighting, bracket matching, indentation, a syntax check
// that underlines the error as you type, and the Run/Submit shortcuts.
import { autocompletion, closeBrackets, closeBracketsKeymap } from "@codemirror/autocomplete";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";
import { bracketMatching, ensureSyntaxTree, indentOnInput, indentUnit, syntaxHighlighting } from "@codemirror/language";
import { linter } from "@codemirror/lint";
import { EditorSelection, EditorState, Prec } from "@codemirror/state";
import {
  EditorView, drawSelection, highlightActiveLine, highlightActiveLineGutter, highlightSpecialChars, keymap, lineNumbers,
} from "@codemirror/view";
import { classHighlighter } from "@lezer/highlight";

/** Syntax errors from Lezer's Python parser: each error node underlined. */
export const pythonSyntax = linter((view) => {
  const { state } = view;
  const tree = ensureSyntaxTree(state, state.doc.length, 500);
  if (!tree) return [];
  const found = [];
  tree.iterate({
    enter(node) {
      if (!node.type.isError || found.length >= 20) return;
      let { from, to } = node;
      if (to <= from) {
        to = Math.min(from + 1, state.doc.length);
        if (to <= from) from = Math.max(0, from - 1);
      }
      const line = state.doc.lineAt(from).number;
      found.push({ from, to, severity: "error", source: "syntax", message: `Syntax error on line ${line}: Python cannot parse this` });
    },
  });
  return found;
}, { delay: 300 });

const theme = EditorView.theme({
  "&": { color: "var(--code-fg)", backgroundColor: "var(--code-bg)", fontSize: "0.9rem", border: "1px solid var(--border)", borderRadius: "6px" },
  "&.cm-focused": { outline: "2px solid var(--focus)", outlineOffset: "1px" },
  ".cm-content": { fontFamily: "var(--mono)", caretColor: "var(--fg)", padding: "6px 0" },
  ".cm-scroller": { fontFamily: "var(--mono)", lineHeight: "1.5" },
  ".cm-gutters": { backgroundColor: "var(--code-gutter-bg)", color: "var(--muted)", borderRight: "1px solid var(--border)" },
  ".cm-activeLine": { backgroundColor: "var(--code-active)" },
  ".cm-activeLineGutter": { backgroundColor: "var(--code-active)", color: "var(--fg)" },
  "&.cm-focused .cm-matchingBracket": { backgroundColor: "var(--bracket)", outline: "1px solid var(--muted)" },
  ".cm-selectionBackground, &.cm-focused .cm-selectionBackground": { backgroundColor: "var(--selection) !important" },
  ".cm-cursor": { borderLeftColor: "var(--fg)" },
  ".cm-tooltip": { backgroundColor: "var(--bg-raised)", color: "var(--fg)", border: "1px solid var(--border)" },
});

/**
 * The page's style nonce (web/headers.py), carried by the site's stylesheet link: CodeMirror puts its styles in a
 * <style> element, which the Content-Security-Policy admits only with it. (A nonce attribute reads as "" once
 * parsed; the property keeps its value.)
 */
export function styleNonce() {
  return document.querySelector("link[rel=stylesheet][nonce]")?.nonce ?? "";
}

/**
 * Create the editor in `parent` with `doc`. `onChange(text)` after each edit; `onRun()`/`onSubmit()` on the shortcuts.
 */
export function createEditor(parent, doc, { onChange, onRun, onSubmit, label = "Your code", readOnly = false }) {
  const shortcuts = Prec.highest(keymap.of([
    { key: "Mod-Enter", run: () => { onRun?.(); return true; } },
    { key: "Shift-Mod-Enter", run: () => { onSubmit?.(); return true; } },
  ]));
  const extensions = [
    lineNumbers(), highlightActiveLineGutter(), highlightSpecialChars(), history(), drawSelection(),
    indentOnInput(), bracketMatching(), closeBrackets(), highlightActiveLine(), autocompletion({ activateOnTyping: false }),
    syntaxHighlighting(classHighlighter), python(), indentUnit.of("    "), EditorState.tabSize.of(4),
    EditorView.lineWrapping, EditorView.contentAttributes.of({ "aria-label": label, tabindex: "0" }),
    theme, EditorView.cspNonce.of(styleNonce()),
  ];
  if (readOnly) {
    extensions.push(EditorState.readOnly.of(true), EditorView.editable.of(false));
  } else {
    extensions.push(
      shortcuts, pythonSyntax,
      keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, indentWithTab]),
      EditorView.updateListener.of((u) => { if (u.docChanged) onChange?.(u.state.doc.toString()); }),
    );
  }
  return new EditorView({ parent, state: EditorState.create({ doc, extensions }) });
}

/** Replace the whole text as one undoable change. */
export function replaceAll(view, text) {
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text }, selection: { anchor: 0 } });
}

/** Put the cursor on `line` (1-based), scroll it into view, focus the editor and flash the line. */
export function gotoLine(view, line) {
  const n = Math.max(1, Math.min(line, view.state.doc.lines));
  const at = view.state.doc.line(n);
  view.dispatch({ selection: EditorSelection.cursor(at.from), effects: EditorView.scrollIntoView(at.from, { y: "center" }) });
  view.focus();
  return n;
}
