"""Authentication decisions (core/auth.py): CONNECT options in, an identity or a refusal out."""

from __future__ import annotations

from typing import Any

import pytest

from jetstream_server.core.auth import NO_AUTH, Identity, Refusal, StaticAuth, same_secret


def test_no_auth_lets_everyone_in_under_the_name_they_give() -> None:
    assert not NO_AUTH.required
    assert NO_AUTH.authenticate({}) == Identity(None)
    assert NO_AUTH.authenticate({"user": "bob", "pass": "x"}) == Identity("bob")
    assert NO_AUTH.authenticate({"user": 7}) == Identity(None)


@pytest.mark.parametrize(
    ("options", "accepted"),
    [
        ({"auth_token": "s3cret"}, True),
        ({"auth_token": "s3cret", "user": "anyone"}, True),
        ({"auth_token": "s3cret!"}, False),
        ({"auth_token": "S3CRET"}, False),
        ({"auth_token": ""}, False),
        ({"auth_token": None}, False),
        ({"auth_token": 123}, False),
        ({"auth_token": ["s3cret"]}, False),
        ({"user": "s3cret", "pass": "s3cret"}, False),
        ({}, False),
    ],
)
def test_token(options: dict[str, Any], accepted: bool) -> None:
    auth = StaticAuth(token="s3cret")
    assert auth.required
    result = auth.authenticate(options)
    assert isinstance(result, Identity if accepted else Refusal)


@pytest.mark.parametrize(
    ("options", "accepted"),
    [
        ({"user": "alice", "pass": "pw"}, True),
        ({"user": "alice", "pass": "pw", "auth_token": "x"}, True),
        ({"user": "alice", "pass": "PW"}, False),
        ({"user": "alic", "pass": "pw"}, False),
        ({"user": "alice"}, False),
        ({"pass": "pw"}, False),
        ({"user": "alice", "pass": 1}, False),
        ({"user": None, "pass": "pw"}, False),
    ],
)
def test_user_password(options: dict[str, Any], accepted: bool) -> None:
    result = StaticAuth(user="alice", password="pw").authenticate(options)
    if accepted:
        assert result == Identity("alice")
    else:
        assert isinstance(result, Refusal)


def test_token_or_user_when_both_are_set() -> None:
    auth = StaticAuth(user="alice", password="pw", token="t")
    assert auth.authenticate({"auth_token": "t"}) == Identity(None)
    assert auth.authenticate({"user": "alice", "pass": "pw"}) == Identity("alice")
    assert isinstance(auth.authenticate({"user": "alice", "pass": "t"}), Refusal)


def test_user_without_password_means_empty_password() -> None:
    auth = StaticAuth(user="alice")
    assert auth.authenticate({"user": "alice", "pass": ""}) == Identity("alice")
    assert isinstance(auth.authenticate({"user": "alice", "pass": "x"}), Refusal)


def test_non_ascii_credentials() -> None:
    auth = StaticAuth(user="jürgen", password="pässword")
    assert auth.authenticate({"user": "jürgen", "pass": "pässword"}) == Identity("jürgen")
    # undecodable bytes arrive as lone surrogates: refused, never an exception
    assert isinstance(auth.authenticate({"user": "j\udcfcrgen", "pass": "p\udce4ssword"}), Refusal)


def test_refusal_reason_is_for_the_log() -> None:
    auth = StaticAuth(token="t")
    assert auth.authenticate({}) == Refusal("no credentials in CONNECT")
    assert auth.authenticate({"auth_token": "x"}) == Refusal("credentials do not match")


def test_same_secret() -> None:
    assert same_secret("abc", "abc")
    assert not same_secret("abc", "abd")
    assert not same_secret("ab", "abc")
    assert not same_secret(b"abc", "abc")
    assert not same_secret(None, "")
