"""natscli's interactive questions, answered on standard input.

The questions (their wording, defaults and choices) are natscli's; the answers are read
one line each from stdin, so a terminal, a pipe or a test can answer them. Prompts go to
stderr so stdout keeps only the command's output. An empty answer takes the default.
When stdin ends before a question is answered the command fails with a one-line error
that names the question and the flag or `--defaults` that avoids it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import click

from .errors import CliError
from .units import parse_bytes

T = TypeVar("T")


def _ask(message: str, default: str | None, convert: Callable[[str], T],
         show_default: bool = True) -> T:
    while True:
        try:
            text = click.prompt(f"? {message}", default=default,
                                show_default=show_default and default not in (None, ""),
                                err=True, type=str)
        except click.Abort as exc:
            click.echo("", err=True)
            raise CliError(
                f"no answer to {message!r} on standard input: pass the value as a flag "
                "or use --defaults"
            ) from exc
        try:
            return convert(str(text).strip())
        except ValueError as exc:
            click.echo(f"X Sorry, your reply was invalid: {exc}", err=True)


def ask_input(message: str, default: str | None = None, required: bool = False) -> str:
    def check(text: str) -> str:
        if required and not text:
            raise ValueError("Value is required")
        return text

    return _ask(message, "" if default is None else default, check)


def ask_int(message: str, default: str) -> int:
    return _ask(message, default, int)


def ask_bytes(message: str, default: str) -> int:
    def convert(text: str) -> int:
        return parse_bytes("0" if text == "-1" else text)

    return _ask(message, default, convert)


def ask_select(message: str, options: Sequence[str], default: str | None = None) -> str:
    """One of `options`, by name (any case) or by its number in the list."""

    def convert(text: str) -> str:
        for option in options:
            if text.lower() == option.lower():
                return option
        if text.isdigit() and 1 <= int(text) <= len(options):
            return options[int(text) - 1]
        raise ValueError(f"choose one of {', '.join(options)}")

    return _ask(f"{message} ({', '.join(options)})", default, convert)


def confirm(message: str, default: bool) -> bool:
    def convert(text: str) -> bool:
        lowered = text.lower()
        if lowered in ("y", "yes", "true"):
            return True
        if lowered in ("n", "no", "false"):
            return False
        raise ValueError("answer y or n")

    return _ask(f"{message} (y/N)" if not default else f"{message} (Y/n)",
                "y" if default else "n", convert, show_default=False)
