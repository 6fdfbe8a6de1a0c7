"""Markdown to HTML on the server, code blocks highlighted by Pygments (no highlighter runs in the page).

Raw HTML in the Markdown is escaped, not passed through; links keep only safe schemes (markdown-it's default).
Highlighted code uses Pygments' short CSS classes (``k``, ``s``, ``c`` ...), styled by ``static/css/site.css``
for both themes.
"""

from __future__ import annotations

from html import escape

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

_FORMATTER = HtmlFormatter(nowrap=True)


def highlight_code(code: str, lang: str = "python") -> str:
    """The code as HTML spans (no wrapper); unknown languages come back escaped, unhighlighted."""
    try:
        lexer = get_lexer_by_name(lang) if lang else None
    except ClassNotFound:
        lexer = None
    if lexer is None:
        return escape(code)
    return highlight(code, lexer, _FORMATTER)


def _fence(code: str, lang: str, _attrs: str) -> str:
    lang = (lang or "").split()[0] if lang else ""
    body = highlight_code(code, lang) if lang else escape(code)
    cls = f' class="language-{escape(lang)}"' if lang else ""
    return f'<pre class="hl" tabindex="0"><code{cls}>{body}</code></pre>\n'


_MD = MarkdownIt("commonmark", {"html": False, "highlight": _fence, "typographer": False}).enable("table")


def markdown_html(text: str) -> str:
    return _MD.render(text)
