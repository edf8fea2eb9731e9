"""Contract: the option grammar and the read, write and connection option tables of
docs/options.md are exactly what the option table in the code generates
(`python -m spark_jetstream.options`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spark_jetstream.options.table import readme_sections, section

OPTIONS_PAGE = Path(__file__).resolve().parents[3] / "docs" / "options.md"


@pytest.mark.parametrize("name", list(readme_sections()))
def test_page_section_equals_the_generated_one(name: str) -> None:
    body = section(OPTIONS_PAGE.read_text(encoding="utf-8"), name)
    assert body is not None, f"docs/options.md has no generated section {name!r}"
    assert body == readme_sections()[name], (
        f"docs/options.md section {name!r} differs from the code: run "
        "`python -m spark_jetstream.options --update docs/options.md`"
    )


def test_the_check_command_agrees() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spark_jetstream.options", "--check", str(OPTIONS_PAGE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    printed = subprocess.run(
        [sys.executable, "-m", "spark_jetstream.options"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert all(body in printed for body in readme_sections().values())
