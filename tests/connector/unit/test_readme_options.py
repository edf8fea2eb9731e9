"""Contract: the README's option grammar and its read and write option tables are exactly
what the option table in the code generates (`python -m spark_jetstream.options`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spark_jetstream.options.table import readme_sections, section

README = Path(__file__).resolve().parents[3] / "README.md"


@pytest.mark.parametrize("name", list(readme_sections()))
def test_readme_section_equals_the_generated_one(name: str) -> None:
    body = section(README.read_text(encoding="utf-8"), name)
    assert body is not None, f"README.md has no generated section {name!r}"
    assert body == readme_sections()[name], (
        f"README.md section {name!r} differs from the code: run "
        "`python -m spark_jetstream.options --update README.md`"
    )


def test_the_check_command_agrees() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spark_jetstream.options", "--check", str(README)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    printed = subprocess.run(
        [sys.executable, "-m", "spark_jetstream.options"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert all(body in printed for body in readme_sections().values())
