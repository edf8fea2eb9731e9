"""Authentication decisions, sans-IO: CONNECT options in, an identity or a refusal out.

An `Authenticator` looks at the options of one CONNECT and answers with an
`Identity` (the client may go on, and is known by that identity) or a
`Refusal` (the session closes with ``-ERR 'Authorization Violation'``; the
refusal's `reason` is for the server log only, never for the client, as
nats-server keeps why from a client that failed). It holds no per-connection
state and does no I/O, so the same instance serves every session.

`StaticAuth` is nats-server's single-user authorization block: one token
and/or one user with a password (``--auth``, ``--user/--pass``,
``authorization { token, user, password }``).

Invariants:
- secrets are compared in constant time (`hmac.compare_digest`), and a
  user/password pair is compared in full even when the user already differs,
  so the time taken says nothing about which part was wrong;
- a credential that is not a string (a number, null, a list) is a refusal,
  never an exception; non-ASCII text is compared as UTF-8 bytes.

Later kinds of authentication (several users, nkeys, JWT, accounts and
their permissions) are further `Authenticator`s; an `Identity` grows fields
for what they decide (account, permissions) without its users changing.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a session is, once its CONNECT was accepted.

    `user` is the name the monitoring endpoints show (``authorized_user``):
    the authenticated user, or, where no user was checked, the ``user`` the
    client sent (None when it sent none).
    """

    user: str | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """A CONNECT that does not pass; `reason` goes to the server log only."""

    reason: str


AuthResult = Identity | Refusal


class Authenticator(Protocol):
    @property
    def required(self) -> bool:
        """True when a client must send an accepted CONNECT before anything else
        (INFO then says ``auth_required``)."""
        ...

    def authenticate(self, options: Mapping[str, Any]) -> AuthResult:
        """Decide on the options of one CONNECT."""
        ...


def _claimed_user(options: Mapping[str, Any]) -> str | None:
    user = options.get("user")
    return user if isinstance(user, str) else None


def same_secret(given: object, expected: str) -> bool:
    """Constant-time comparison of a client-supplied value with a secret.

    False for anything that is not a string; non-ASCII text (and lone
    surrogates from undecodable bytes) compares as UTF-8 bytes."""
    if not isinstance(given, str):
        return False
    return hmac.compare_digest(
        given.encode("utf-8", "surrogateescape"), expected.encode("utf-8", "surrogateescape")
    )


@dataclass(frozen=True, slots=True)
class StaticAuth:
    """One token and/or one user with a password; neither set means no authentication.

    With both set, either the token or the user and password let a client in."""

    user: str | None = None
    password: str | None = None
    token: str | None = None

    @property
    def required(self) -> bool:
        return self.token is not None or self.user is not None

    def authenticate(self, options: Mapping[str, Any]) -> AuthResult:
        claimed = _claimed_user(options)
        if not self.required:
            return Identity(claimed)
        if self.token is not None and same_secret(options.get("auth_token"), self.token):
            return Identity(claimed)
        if self.user is not None:
            # both halves compared, always: `and` would skip the password
            # when the user differs, and the timing would tell
            user_ok = same_secret(options.get("user"), self.user)
            pass_ok = same_secret(options.get("pass"), self.password or "")
            if user_ok & pass_ok:
                return Identity(self.user)
        if not any(key in options for key in ("auth_token", "user", "pass")):
            return Refusal("no credentials in CONNECT")
        return Refusal("credentials do not match")


NO_AUTH: StaticAuth = StaticAuth()
