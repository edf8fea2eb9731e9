"""Secrets in option values (options/secrets.py): how a URL and a text are shown."""

from __future__ import annotations

import pytest

from spark_jetstream.options.secrets import redact_text, redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("nats://alice:s3cret@host:4222", "nats://alice:***@host:4222"),
        ("tls://alice:p%40ss@host", "tls://alice:***@host"),
        ("nats://mytoken@host:4222", "nats://***@host:4222"),
        ("nats://a:b:c@d@host:1/path", "nats://a:***@host:1/path"),  # the last @ ends the user part
        ("alice:s3cret@host:4222", "alice:***@host:4222"),  # no scheme (refused, but redacted in the error)
        ("nats://host:4222", "nats://host:4222"),
        ("nats://[::1]:4222", "nats://[::1]:4222"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_redact_text_replaces_every_secret_and_ignores_empty_ones() -> None:
    text = "auth failed for pw1 (token tok9, again pw1)"
    assert redact_text(text, ("pw1", None, "", "tok9")) == "auth failed for *** (token ***, again ***)"
