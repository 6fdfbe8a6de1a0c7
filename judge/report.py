"""The verdict as text for a terminal: one line per test, the failures explained, the summary."""

from __future__ import annotations

import os
import textwrap

from .verdict import Verdict

STATUS_TEXT = {
    "accepted": "ACCEPTED",
    "wrong_answer": "WRONG ANSWER",
    "runtime_error": "RUNTIME ERROR",
    "compile_error": "COMPILE ERROR",
    "timeout": "TIME LIMIT EXCEEDED",
    "internal_error": "INTERNAL ERROR (not your fault)",
}


class Style:
    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text


def style_for(stream) -> Style:
    return Style(hasattr(stream, "isatty") and stream.isatty() and not os.environ.get("NO_COLOR")
                 and os.environ.get("TERM") != "dumb")


def format_verdict(v: Verdict, style: Style | None = None) -> str:
    c = style or Style(False)
    lines = []
    what = "Run (visible examples only)" if v.run else "Submit (all tests)"
    dev = (v.env.gpu or v.env.device) + (f" (Triton {v.env.triton})" if v.env.triton else "")
    trust = {"advisory": "advisory (browser)", "local": "local", "trusted": "trusted (referee)"}.get(
        v.trust.level, v.trust.level)
    lines.append(c(f"{v.exercise}", "1") + f"  ·  {what}  ·  mode {v.mode}  ·  {dev}  ·  {trust}")
    if v.output:
        lines.append(c("  output while loading your file:", "2"))
        lines.extend("    " + ln for ln in v.output.rstrip().splitlines())
    for t in v.tests:
        mark = {"pass": c("PASS", "32"), "fail": c("FAIL", "31"), "error": c("ERROR", "31"),
                "timeout": c("TIMEOUT", "33"), "skip": c("SKIP", "2")}[t.status]
        hidden = "" if t.visible else c(" (hidden)", "2")
        ms = f"{t.ms:.0f} ms" if t.status != "skip" else ""
        lines.append(f"  {mark:<6} {t.name}{hidden}  {c(ms, '2')}".rstrip())
        if t.doc and t.status in ("fail", "error", "timeout"):
            lines.extend(c(f"         {ln}", "2") for ln in textwrap.wrap(" ".join(t.doc.split()), 90))
        if t.message and t.status != "pass":
            lines.extend("         " + ln for ln in t.message.rstrip().splitlines())
        if t.output and t.status != "pass":
            lines.append(c("         output:", "2"))
            lines.extend("           " + ln for ln in t.output.rstrip().splitlines()[:40])
    if v.message and not any(t.message == v.message for t in v.tests):
        lines.append("")
        lines.extend("  " + ln for ln in v.message.rstrip().splitlines())
    color = "32" if v.accepted else ("33" if v.status in ("timeout", "internal_error") else "31")
    counts = f"{v.passed}/{v.total} passed"
    if v.failed:
        counts += f", {v.failed} failed"
    if v.skipped:
        counts += f", {v.skipped} skipped"
    lines.append("")
    verdict = c(f"Verdict: {STATUS_TEXT.get(v.status, v.status)}", "1;" + color)
    lines.append(verdict + f"  ({counts}, {v.ms / 1000:.1f} s)")
    if v.metrics:
        lines.append("  metrics: " + ", ".join(f"{k}={val:g}" for k, val in v.metrics.items()))
    if v.seed is not None and not v.accepted and v.status != "compile_error":
        lines.append(c(f"  hidden inputs drawn with seed {v.seed} (--seed {v.seed} draws the same again)", "2"))
    if v.accepted and v.run:
        lines.append(c("  The visible examples pass. Now submit: drop --run to run all the tests.", "2"))
    return "\n".join(lines)
