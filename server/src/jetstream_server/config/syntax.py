"""The syntax of nats-server's config files: text in, nested mappings out.

    port: 4222            # `=`, `:` or whitespace separate key and value
    host = "127.0.0.1"    // comments with # or //
    authorization { users = [ { user: a, password: "b" } ] }

`parse_config_text` turns the text into `Entries` (a dict that also records
the line of each key in `lines`), lists and scalars: words become booleans
(``true``/``yes``/``on`` ...), integers, floats or strings; quoted strings stay
strings. Nothing is checked against the settings here (that is the blocks'
work), and nothing here knows them: the parser imports only `ConfigError`.
A syntax error is a `ConfigError` whose message starts with
``<source>:<line>:``. Sans-IO: the caller reads the file.
"""

from __future__ import annotations

import re
from typing import Any

from jetstream_server.config.errors import ConfigError


class _Lexer:
    """Tokens of the nats-server config format: words, strings, `{ } [ ] = : ,`."""

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.pos = 0
        self.line = 1

    def error(self, message: str, line: int | None = None) -> ConfigError:
        return ConfigError(f"{self.source}:{line or self.line}: {message}")

    def _skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == "\n":
                self.line += 1
                self.pos += 1
            elif ch in " \t\r;":
                self.pos += 1
            elif ch == "#" or text.startswith("//", self.pos):
                nl = text.find("\n", self.pos)
                self.pos = len(text) if nl < 0 else nl
            else:
                return

    def next(self) -> tuple[str, Any, int] | None:
        """(kind, value, line): kind is one of 'punct', 'str', 'word'; None at end."""
        self._skip()
        if self.pos >= len(self.text):
            return None
        text = self.text
        ch = text[self.pos]
        line = self.line
        if ch in "{}[]=:,":
            self.pos += 1
            return ("punct", ch, line)
        if ch in "\"'":
            end = self.pos + 1
            out = []
            while end < len(text) and text[end] != ch:
                if text[end] == "\\" and ch == '"' and end + 1 < len(text):
                    end += 1
                    out.append({"n": "\n", "t": "\t"}.get(text[end], text[end]))
                elif text[end] == "\n":
                    raise self.error("unterminated string")
                else:
                    out.append(text[end])
                end += 1
            if end >= len(text):
                raise self.error("unterminated string")
            self.pos = end + 1
            return ("str", "".join(out), line)
        end = self.pos
        while end < len(text) and text[end] not in " \t\r\n{}[]=,;#\"'" and not (
            text[end] == ":" and (end + 1 >= len(text) or text[end + 1] in " \t\r\n")
        ):
            if text.startswith("//", end):
                break
            end += 1
        word = text[self.pos : end]
        self.pos = end
        return ("word", word, line)

    def peek(self) -> tuple[str, Any, int] | None:
        pos, line = self.pos, self.line
        tok = self.next()
        self.pos, self.line = pos, line
        return tok


def _word_value(word: str) -> Any:
    low = word.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if re.fullmatch(r"-?\d+", word):
        return int(word)
    if re.fullmatch(r"-?\d+\.\d+", word):
        return float(word)
    return word


def _parse_value(lex: _Lexer) -> tuple[Any, int]:
    tok = lex.next()
    if tok is None:
        raise lex.error("value expected at end of file")
    kind, value, line = tok
    if kind == "str":
        return value, line
    if kind == "word":
        return _word_value(value), line
    if value == "{":
        return _parse_map(lex, closing=True), line
    if value == "[":
        items: list[Any] = []
        while True:
            nxt = lex.peek()
            if nxt is None:
                raise lex.error("unterminated array", line)
            if nxt[0] == "punct" and nxt[1] == "]":
                lex.next()
                return items, line
            if nxt[0] == "punct" and nxt[1] == ",":
                lex.next()
                continue
            items.append(_parse_value(lex)[0])
    raise lex.error(f"unexpected {value!r}", line)


class Entries(dict[str, Any]):
    """A parsed block that remembers the line of each key."""

    lines: dict[str, int]


def _parse_map(lex: _Lexer, closing: bool) -> Entries:
    out = Entries()
    out.lines = {}
    while True:
        tok = lex.next()
        if tok is None:
            if closing:
                raise lex.error("missing '}'")
            return out
        kind, key, line = tok
        if kind == "punct" and key == "}" and closing:
            return out
        if kind == "punct" and key == ",":
            continue
        if kind == "punct":
            raise lex.error(f"unexpected {key!r}, expected a key", line)
        if kind == "word" and ":" in key:
            # `port:4222`, written without a space after the colon
            key, _, inline = key.partition(":")
            if inline:
                out[key] = _word_value(inline)
                out.lines[key] = line
                continue
            nxt = lex.peek()
            value, _ = _parse_value(lex)
            out[str(key)] = value
            out.lines[str(key)] = line
            continue
        nxt = lex.peek()
        if nxt is not None and nxt[0] == "punct" and nxt[1] in ("=", ":"):
            lex.next()
        elif nxt is None or nxt[2] != line and not (nxt[0] == "punct" and nxt[1] == "{"):
            raise lex.error(f"key {key!r} has no value", line)
        value, _ = _parse_value(lex)
        out[str(key)] = value
        out.lines[str(key)] = line
    # unreachable


def parse_config_text(text: str, source: str = "<config>") -> Entries:
    """Parse the nats-server config syntax into nested dicts (no validation)."""
    return _parse_map(_Lexer(text, source), closing=False)
