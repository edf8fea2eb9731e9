"""Decentralized (operator mode) authentication, sans-IO: user JWTs in CONNECT.

nats-server's operator mode as this server keeps it: the configuration
trusts one or more operators (``operator: <JWT or file>``) and knows the
accounts through ``resolver: MEMORY`` and ``resolver_preload`` (account
JWTs signed by an operator key). A client sends its user JWT (signed by its
account's key or one of the account's signing keys) and the INFO nonce
signed with the user's seed; `JwtAuth.authenticate` decides as
processClientOrLeafAuthentication does, in its order:

user JWT decodes and its signature holds -> its times hold -> the account
(``issuer_account`` when a signing key signed it, else ``iss``) is known ->
the account JWT was issued by a trusted operator key -> the user's issuer is
the account or one of its signing keys -> the account has not expired ->
the nonce signature verifies (unless the JWT is a bearer token) -> the user
is not revoked by the account (``revocations``: the user's key or ``*``
at or after its ``iat``).

Any failure is a `Refusal` (the client sees ``-ERR 'Authorization
Violation'``, as from nats-server; the reason goes to the log). An accepted
user gets an `Identity` in its account (the account's public key) with the
JWT's ``pub``/``sub``/``resp`` permissions (none: the account's defaults,
unrestricted here), its ``subs`` and ``payload`` limits, and `expires`
(Unix seconds, 0 = never) so the connection can be closed when the JWT
runs out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jetstream_server.core.auth import Identity, Refusal, verify_nonce_signature
from jetstream_server.core.jwt import Claims, JwtError, decode
from jetstream_server.core.permissions import (
    DEFAULT_RESPONSE_EXPIRES_S,
    DEFAULT_RESPONSE_MAX_MSGS,
    Permissions,
    ResponsePermission,
    SubjectPermission,
)

AuthResult = Identity | Refusal


@dataclass(frozen=True, slots=True)
class JwtAccount:
    """An account of the resolver: its verified claims."""

    claims: Claims

    @property
    def public_key(self) -> str:
        return self.claims.subject

    @property
    def signing_keys(self) -> frozenset[str]:
        keys: set[str] = set()
        for entry in self.claims.nats.get("signing_keys") or ():
            if isinstance(entry, str):
                keys.add(entry)
            elif isinstance(entry, dict) and isinstance(entry.get("key"), str):
                keys.add(entry["key"])
        return frozenset(keys)

    def revoked(self, user: str, issued_at: int) -> bool:
        revocations = self.claims.nats.get("revocations")
        if not isinstance(revocations, dict) or not revocations:
            return False
        for key in (user, "*"):
            at = revocations.get(key)
            if isinstance(at, int) and not isinstance(at, bool) and at >= issued_at:
                return True
        return False


def _subjects(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(s for s in value if isinstance(s, str))


def _subject_permission(value: object) -> SubjectPermission | None:
    if not isinstance(value, dict):
        return None
    allow, deny = _subjects(value.get("allow")), _subjects(value.get("deny"))
    if not allow and not deny:
        return None
    return SubjectPermission(allow or None, deny)


def user_permissions(nats: Mapping[str, Any]) -> Permissions | None:
    """nats-server's buildPermissionsFromJwt: None when the JWT restricts nothing."""
    publish = _subject_permission(nats.get("pub"))
    subscribe = _subject_permission(nats.get("sub"))
    resp = nats.get("resp")
    responses: ResponsePermission | None = None
    if isinstance(resp, dict):
        max_msgs = resp.get("max")
        ttl_ns = resp.get("ttl")
        responses = ResponsePermission(
            max_msgs if isinstance(max_msgs, int) and max_msgs != 0 else DEFAULT_RESPONSE_MAX_MSGS,
            ttl_ns / 1e9 if isinstance(ttl_ns, int) and ttl_ns != 0 else DEFAULT_RESPONSE_EXPIRES_S,
        )
    if publish is None and subscribe is None and responses is None:
        return None
    return Permissions(publish, subscribe, responses)


class JwtAuth:
    """Operator mode: user JWTs of the accounts the memory resolver holds."""

    __slots__ = ("_trusted", "_accounts", "_now")

    def __init__(
        self,
        trusted_keys: frozenset[str],
        accounts: Mapping[str, JwtAccount],
        now: Callable[[], float] = time.time,
    ) -> None:
        self._trusted = trusted_keys
        self._accounts = dict(accounts)
        self._now = now

    @property
    def required(self) -> bool:
        return True

    @property
    def anonymous(self) -> Identity | None:
        return None

    @property
    def nonce_required(self) -> bool:
        return True

    def authenticate(self, options: Mapping[str, Any], nonce: bytes = b"") -> AuthResult:
        token = options.get("jwt")
        if not isinstance(token, str) or not token:
            return Refusal("Authentication requires a user JWT")
        try:
            user = decode(token, "user")
            user.check_times(self._now())
        except JwtError as exc:
            return Refusal(f"User JWT not valid: {exc}")
        issuer_account = user.nats.get("issuer_account")
        account_key = issuer_account if isinstance(issuer_account, str) and issuer_account else user.issuer
        account = self._accounts.get(account_key)
        if account is None:
            return Refusal(f"Account JWT lookup error: {account_key} not found")
        if account.claims.issuer not in self._trusted:
            return Refusal("Account JWT not signed by trusted operator")
        if user.issuer != account.public_key and user.issuer not in account.signing_keys:
            return Refusal("User JWT issuer is not known")
        try:
            account.claims.check_times(self._now())
        except JwtError:
            return Refusal("Account JWT has expired")
        if not user.nats.get("bearer_token"):
            if not verify_nonce_signature(user.subject, nonce, options.get("sig")):
                return Refusal("Signature missing or not verified")
        if account.revoked(user.subject, user.issued_at):
            return Refusal("User authentication revoked")
        return Identity(
            user.subject,
            account.public_key,
            user_permissions(user.nats),
            expires=user.expires,
            name_tag=account.claims.name or account.public_key,
            max_subs=_limit(user.nats.get("subs")),
            max_payload=_limit(user.nats.get("payload")),
        )


def _limit(value: object) -> int:
    """A JWT limit: a positive int limits, anything else (-1, 0, absent) does not."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else -1
