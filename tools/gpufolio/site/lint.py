"""Checks of the rendered HTML that ``mkdocs --strict`` does not make (the mkdocs hook runs them on every page).

- **Markdown that did not render.** GitHub turns a table or a list that follows a paragraph line into a table or
  a list; Python-Markdown needs a blank line first and otherwise prints ``| :-- |`` rows and run-together
  ``- item`` lines inside a paragraph. Both are found in the paragraphs of the HTML.
- **Words a reader should never see**: how the work was organised (who handed out GPU time, which round of it),
  not what was measured, and paths of a scratch machine (``/tmp/...``).
"""
from __future__ import annotations

import html
import re

# A table's delimiter row (| :-- | --: |) or any pipe row, on a line of its own inside a paragraph.
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_DELIMITER = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)+\|?\s*$")
# A list marker at the start of a paragraph's second or later line: a list that ran into the text above it.
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,2}[.)])\s+\S")
_PARAGRAPH = re.compile(r"<p\b[^>]*>(.*?)</p>", re.S)
_CODE = re.compile(r"<(pre|code)\b[^>]*>.*?</\1>", re.S)
_NOT_TEXT = re.compile(r"<(style|script)\b[^>]*>.*?</\1>|<!--.*?-->", re.S)
_TAG = re.compile(r"<[^>]+>")

# Internal process words: (pattern, what to write instead). Matched case-insensitively on the page's text.
PROCESS_WORDS: list[tuple[str, str]] = [
    (r"the issue'?s bar", "say what the target is and why"),
    (r"\bissue #?\d+\b", "say what the change does"),
    (r"\bround [0-9A-Z]\b|\brounds? \d+(?:\s*(?:[-–,]|and)\s*\d+)?\b|\bfinal round\b|\bGPU rounds?\b",
     "name the run (its date or id), not the round it was made in"),
    (r"\b(?:this|that|the|first|second|third|fourth|previous|next|last|each|one|a|earlier|later) sessions?\b"
     r"|\bsessions? \d+\b|(?<!/)\bsession\d+\b(?!/)", "name the run or the date, not the working session"),
    (r"\bGPU\.md\b", "a file outside the repository; describe the setup itself"),
    (r"\b(?:one )?GPU (?:is|was) lent\b|\blent GPU\b|\bdevice (?:time|budget|calls?)\b",
     "say what the measurement needed (e.g. one H200 for N minutes)"),
    (r"\bhelpers?\b(?! (?:function|module|kernel|script|class|method))", "say who or what did it"),
    (r"\bthe lead(?:'s| engineer| asked| said| decided| wants)\b|\bthe brief\b", "say what was decided and why"),
    (r"(?<![\w.~-])/tmp/\S*", "a scratch path: use a path inside the repository or a placeholder like OUT_DIR"),
]
_PROCESS = [(re.compile(p, re.I), hint) for p, hint in PROCESS_WORDS]


def _paragraph_lines(page_html: str):
    body = _CODE.sub(" ", _NOT_TEXT.sub(" ", page_html))
    for m in _PARAGRAPH.finditer(body):
        lines = html.unescape(_TAG.sub("", m.group(1))).split("\n")
        yield lines


def unrendered_markdown(page_html: str) -> list[str]:
    """Lines of paragraphs that are Markdown tables or lists the renderer did not recognise."""
    problems = []
    for lines in _paragraph_lines(page_html):
        for i, line in enumerate(lines):
            if _DELIMITER.match(line) or (_TABLE_ROW.match(line) and line.count("|") >= 3):
                problems.append(f"a table row rendered as text (blank line missing before the table?): {line.strip()[:80]!r}")
                break
            if i > 0 and _LIST_ITEM.match(line):
                problems.append(f"a list item ran into the paragraph above it (blank line missing before the list?): "
                                f"{line.strip()[:80]!r}")
                break
    return problems


def page_text(page_html: str) -> str:
    """What a reader reads: the HTML without tags, code included (a reproduce command is read too)."""
    return html.unescape(_TAG.sub(" ", _NOT_TEXT.sub(" ", page_html)))


def process_words(text: str) -> list[str]:
    """Each internal process word found in ``text``, with what to write instead."""
    problems = []
    for pattern, hint in _PROCESS:
        for m in pattern.finditer(text):
            start = max(0, m.start() - 30)
            context = " ".join(text[start:m.end() + 30].split())
            problems.append(f"{m.group(0)!r} ({hint}): …{context}…")
    return problems
