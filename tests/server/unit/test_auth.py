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


# -- several users, bcrypt, nkeys -----------------------------------------------------------


def _bcrypt_hash(password: str) -> str:
    import bcrypt

    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()


def test_is_bcrypt_accepts_nats_server_forms_only() -> None:
    from jetstream_server.core.auth import is_bcrypt

    for prefix in ("$2a$", "$2b$", "$2x$", "$2y$"):
        assert is_bcrypt(prefix + "10$abcdefghijklmnopqrstuv")
    for text in ("$2c$10$x", "$2a$1$x", "2a$10$x", "plain", "$2a$10"):
        assert not is_bcrypt(text)


def test_bcrypt_passwords_and_the_success_cache() -> None:
    from jetstream_server.core import auth as A

    # a password long enough that no 32-byte digest holds it by chance (a 2-byte
    # one is inside one random digest in about 2,000)
    password = "pw-7c1e9a4f2b"
    hashed = _bcrypt_hash(password)
    assert A.check_password(hashed, password)
    assert not A.check_password(hashed, hashed)  # the hash is not a password
    assert not A.check_password(hashed, password[:-1] + "x")
    assert not A.check_password(hashed, None)
    assert not A.check_password("$2a$10$malformed", password)
    # remembered as a keyed digest, never as the password
    assert A._verified and all(len(key) == 32 for key in A._verified)
    assert all(password.encode() not in key for key in A._verified)
    assert A.check_password(hashed, password)


def test_users_auth() -> None:
    from jetstream_server.core.auth import User, UsersAuth
    from jetstream_server.core.permissions import Permissions, SubjectPermission

    perms = Permissions(SubjectPermission(("a",)))
    auth = UsersAuth((User("alice", "pw", perms), User("bob", _bcrypt_hash("secret"))))
    assert auth.required and auth.anonymous is None and not auth.nonce_required
    assert auth.authenticate({"user": "alice", "pass": "pw"}) == Identity("alice", "$G", perms)
    assert auth.authenticate({"user": "bob", "pass": "secret"}) == Identity("bob")
    for bad in (
        {"user": "alice", "pass": "secret"},
        {"user": "carol", "pass": "pw"},
        {"auth_token": "pw"},
        {"pass": "pw"},
        {"user": ["alice"], "pass": "pw"},
        {},
    ):
        assert isinstance(auth.authenticate(bad), Refusal), bad


def test_no_auth_user_is_who_sends_no_credentials() -> None:
    from jetstream_server.core.auth import User, UsersAuth

    auth = UsersAuth((User("guest", ""), User("admin", "pw")), no_auth_user="guest")
    assert auth.anonymous == Identity("guest")
    assert auth.authenticate({"verbose": False, "user": ""}) == Identity("guest")
    assert auth.authenticate({"user": "admin", "pass": "pw"}) == Identity("admin")
    assert isinstance(auth.authenticate({"user": "admin", "pass": "x"}), Refusal)
    with pytest.raises(ValueError, match="no_auth_user"):
        UsersAuth((User("a", ""),), no_auth_user="b")


def test_nkey_challenge() -> None:
    import base64
    import os

    import nkeys

    from jetstream_server.core.auth import NkeyUser, UsersAuth, decode_user_key, new_nonce

    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    kp = nkeys.from_seed(seed)
    public = kp.public_key.decode()
    assert decode_user_key(public) is not None
    assert decode_user_key(public[:-1] + ("A" if public[-1] != "A" else "B")) is None  # checksum
    account = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_ACCOUNT)
    assert decode_user_key(nkeys.from_seed(account).public_key.decode()) is None  # not a user
    auth = UsersAuth((), (NkeyUser(public),))
    assert auth.nonce_required
    nonce = new_nonce()
    assert len(nonce) == 15
    sig = kp.sign(nonce.encode())
    for encoded in (base64.b64encode(sig).decode(), base64.urlsafe_b64encode(sig).decode().rstrip("=")):
        assert auth.authenticate({"nkey": public, "sig": encoded}, nonce.encode()) == Identity(public)
    other = new_nonce()
    assert isinstance(auth.authenticate({"nkey": public, "sig": base64.b64encode(sig).decode()}, other.encode()), Refusal)
    assert isinstance(auth.authenticate({"nkey": public}, nonce.encode()), Refusal)
    assert isinstance(auth.authenticate({"nkey": public, "sig": "!!"}, nonce.encode()), Refusal)
    assert isinstance(auth.authenticate({"nkey": "UNKNOWN", "sig": "x"}, nonce.encode()), Refusal)
