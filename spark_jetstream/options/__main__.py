"""`python -m spark_jetstream.options [--update FILE | --check FILE]`.

Prints the generated docs/options.md sections (the value grammar, the read and the
write option tables); `--update docs/options.md` rewrites them in place between
their `BEGIN/END GENERATED` markers; `--check docs/options.md` exits 1 when the file
differs from what the option table says.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spark_jetstream.options.table import readme_sections, update_sections


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jetstream.options", description="Print or update the docs/options.md sections generated from the option table.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--update", metavar="FILE", type=Path, help="rewrite the generated sections of FILE")
    group.add_argument("--check", metavar="FILE", type=Path, help="exit 1 if FILE's sections differ")
    args = parser.parse_args(argv)
    if args.update is None and args.check is None:
        for name, body in readme_sections().items():
            sys.stdout.write(f"<!-- {name} -->\n{body}\n\n")
        return 0
    path: Path = args.update or args.check
    text = path.read_text(encoding="utf-8")
    try:
        updated = update_sections(text)
    except ValueError as exc:
        sys.stderr.write(f"{path}: {exc}\n")
        return 2
    if args.check is not None:
        if updated != text:
            sys.stderr.write(f"{path}: the option tables differ from the code; run with --update\n")
            return 1
        return 0
    if updated != text:
        path.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
