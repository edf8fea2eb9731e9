"""What the docs ask a reader to run: shell commands and Python snippets found in Markdown.

The docs check (tests/test_docs.py) runs or accounts for each of them; this module only finds
them. A `Command` is one of:

- a logical line of a ```` ```bash ```` / ```` ```sh ```` / ```` ```shell ```` block (continuation
  lines joined, the trailing `# comment` dropped); a block with shell control structure (a `for`
  loop, a here-document) is one command, its whole text;
- an inline code span whose first word (after `VAR=value` assignments) is a program of
  `PROGRAMS` and which has at least one argument: prose that names a command to type;
- a ```` ```python ```` block (kind "python").

Blocks with any other info string (`conf`, `json`, none) are configuration or output. Links
(`[text](target)`) are collected too, so the check can resolve every page and anchor.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

SHELL_BLOCKS = frozenset({"bash", "sh", "shell"})
PYTHON_BLOCKS = frozenset({"python", "py"})
# The first word of an inline span that makes it a command (with at least one argument).
PROGRAMS = frozenset({
    "make", "pip", "pip3", "python", "python3", "pytest", "jetstream", "jetstream-server",
    "nats-server", "nats", "spark-submit", "kill", "export", "mkdir", "cp", "java",
})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Command:
    """One thing to run: `text` as the reader sees it (normalised whitespace for shell)."""

    page: Path
    line: int
    kind: str  # "shell" or "python"
    text: str
    inline: bool = False

    def where(self, root: Path) -> str:
        return f"{self.page.relative_to(root)}:{self.line}"


@dataclass(frozen=True)
class Link:
    page: Path
    line: int
    target: str


@dataclass
class Page:
    path: Path
    commands: list[Command]
    links: list[Link]
    anchors: set[str]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to
    hyphens (so "Read options (`spark.read` / `spark.readStream`)" gives
    "read-options-sparkread--sparkreadstream")."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _first_word(words: list[str]) -> str | None:
    for word in words:
        if not _ASSIGNMENT.match(word):
            return word
    return None


def _is_program(word: str) -> bool:
    return word in PROGRAMS or word.startswith((".venv/bin/", "$SPARK_HOME/"))


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def _is_inline_command(span: str) -> bool:
    words = _split(span)
    first = _first_word(words)
    if first is None or not _is_program(first):
        return False
    rest = words[words.index(first) + 1:]
    if not rest:  # a bare program name is a mention, unless it is a path (a script to run)
        return "/" in first
    # `jetstream { store_dir: ... }` is a config block, not the `jetstream` CLI
    return not rest[0].startswith("{")


def strip_comment(line: str) -> str:
    """`line` without a trailing shell comment (a `#` after whitespace, outside quotes), its
    whitespace collapsed."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            line = line[:i]
            break
    return " ".join(line.split())


def _shell_commands(page: Path, start: int, lines: list[str]) -> list[Command]:
    body = "\n".join(lines)
    if re.search(r"^\s*(for|while|until|if)\s|<<-?\s*'?\w+", body, re.MULTILINE):
        return [Command(page, start, "shell", body.strip())]
    found: list[Command] = []
    pending = ""
    pending_line = start
    for offset, raw in enumerate(lines):
        line = raw.rstrip()
        if not pending:
            pending_line = start + offset
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        pending += line
        text = strip_comment(pending)
        if text:
            found.append(Command(page, pending_line, "shell", text))
        pending = ""
    return found


def _inline_spans(paragraph: str) -> list[tuple[int, str]]:
    """Code spans of a paragraph (offset, text), CommonMark's way: a run of n backticks up to
    the next run of exactly n."""
    spans: list[tuple[int, str]] = []
    i = 0
    while True:
        m = re.compile(r"`+").search(paragraph, i)
        if m is None:
            return spans
        ticks = m.group(0)
        closing = re.compile(rf"(?<!`){ticks}(?!`)").search(paragraph, m.end())
        if closing is None:
            i = m.end()
            continue
        spans.append((m.start(), paragraph[m.end():closing.start()].strip()))
        i = closing.end()


def read_page(path: Path) -> Page:
    lines = path.read_text(encoding="utf-8").split("\n")
    commands: list[Command] = []
    links: list[Link] = []
    anchors: set[str] = set()
    paragraph: list[tuple[int, str]] = []  # (line number, text) of the current paragraph

    def flush_paragraph() -> None:
        text = " ".join(part for _, part in paragraph)
        starts, offset = [], 0
        for number, part in paragraph:
            starts.append((offset, number))
            offset += len(part) + 1
        for at, span in _inline_spans(text):
            if _is_inline_command(span):
                line = max(number for start, number in starts if start <= at)
                commands.append(Command(path, line, "shell", " ".join(span.split()), inline=True))
        paragraph.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            flush_paragraph()
            marker, info = fence.group(2), fence.group(3).lower()
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append(lines[i])
                i += 1
            start = i - len(body) + 1  # 1-based line of the block's first body line
            if info in SHELL_BLOCKS:
                commands.extend(_shell_commands(path, start, body))
            elif info in PYTHON_BLOCKS:
                commands.append(Command(path, start, "python", "\n".join(body)))
            i += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            flush_paragraph()
            anchor = slug(heading.group(2))
            seen = sum(1 for a in anchors if a == anchor or re.fullmatch(rf"{re.escape(anchor)}-\d+", a))
            anchors.add(f"{anchor}-{seen}" if seen else anchor)
        if not line.strip() or heading:
            flush_paragraph()
        else:
            paragraph.append((i + 1, line.strip()))
            for m in _LINK.finditer(line):
                links.append(Link(path, i + 1, m.group(1) or m.group(2)))
        i += 1
    flush_paragraph()
    return Page(path, commands, links, anchors)
