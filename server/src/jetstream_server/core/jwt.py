"""NATS JWTs, sans-IO: decode, verify the signature, check the times.

A NATS JWT (the Go ``nats-io/jwt`` v2 format) is ``header.payload.signature``
in unpadded base64url; the header says ``{"typ":"JWT","alg":"ed25519-nkey"}``
and the signature is the ed25519 signature of ``header.payload`` by the key
the claims name as ``iss`` (a public NKey). `decode(token, kind)` returns the
`Claims` of a token whose signature holds and whose ``nats.type`` is `kind`
(operator, account, user), or raises `JwtError` naming what is wrong; it
never raises anything else for any input. `Claims.check_times(now)` is the
time part of the Go library's validation (``exp`` passed: "claim is
expired"; ``nbf`` in the future: "claim is not yet valid").

Tokens of the library's first version are read as it migrates them: the
header's ``alg`` is ``ed25519``, the claim ``type`` (and ``tags``, a user's
``issuer_account``) stands at the top level and moves into ``nats``, the
signature covers the encoded claims alone, and an account's ``limits`` lose
what JetStream would read (v1 accounts have no JetStream); the `Claims`
record ``version`` 1.

Public NKeys are decoded here for every role (operator ``O``, account
``A``, user ``U``): base32, the role's prefix byte, a CRC-16 checksum.
Verification needs the `nkeys` package (and its pynacl), as NKey users do.

Invariant: a `Claims` exists only for a token whose signature was verified
with its issuer's key.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, Final

PREFIX_OPERATOR: Final = 14 << 3
PREFIX_ACCOUNT: Final = 0
PREFIX_USER: Final = 20 << 3
_PREFIX_OF_KIND: Final = {"operator": PREFIX_OPERATOR, "account": PREFIX_ACCOUNT, "user": PREFIX_USER}
_ISSUER_OF_KIND: Final = {"operator": PREFIX_OPERATOR, "account": PREFIX_OPERATOR, "user": PREFIX_ACCOUNT}
_ALGORITHMS: Final = ("ed25519-nkey", "ed25519")
MAX_JWT_LEN: Final = 1 << 20  # nothing legitimate comes near; bounds the work per token
# what the v1 library's account limits hold (nats and account limits; no JetStream)
_V1_ACCOUNT_LIMITS: Final = frozenset({
    "subs", "data", "payload", "imports", "exports", "wildcards", "conn", "leaf", "disallow_bearer",
})


class JwtError(ValueError):
    """A token that is not a valid NATS JWT of the kind asked for."""


@dataclass(frozen=True, slots=True)
class Claims:
    """The verified claims of one token: `subject` (``sub``), `issuer`
    (``iss``), times in Unix seconds (0: unset), and the ``nats`` object."""

    subject: str
    issuer: str
    name: str
    issued_at: int
    expires: int
    not_before: int
    nats: dict[str, Any] = field(default_factory=dict)
    version: int = 2

    @property
    def kind(self) -> str:
        return str(self.nats.get("type", ""))

    def check_times(self, now_s: float) -> None:
        """The Go library's time checks; raises JwtError."""
        if self.expires and now_s > self.expires:
            raise JwtError("claim is expired")
        if self.not_before and now_s < self.not_before:
            raise JwtError("claim is not yet valid")


def decode_public_key(key: object, prefix: int) -> bytes | None:
    """The 32 raw bytes of a public NKey with role `prefix`, None when it is not one."""
    if not isinstance(key, str) or len(key) != 56:
        return None
    try:
        raw = base64.b32decode(key)
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 35 or raw[0] != prefix:
        return None
    import nkeys

    if bytes(nkeys.crc16_checksum(raw[:33])) != raw[33:]:
        return None
    return raw[1:33]


def is_public_key(key: object, kind: str) -> bool:
    return decode_public_key(key, _PREFIX_OF_KIND[kind]) is not None


def _b64decode(part: str) -> bytes:
    padded = part + "=" * (-len(part) % 4)
    try:
        return base64.urlsafe_b64decode(padded.encode("ascii"))
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise JwtError("bad base64 in token") from None


def verify_signature(public_key: str, prefix: int, data: bytes, signature: bytes) -> bool:
    raw = decode_public_key(public_key, prefix)
    if raw is None:
        return False
    import nacl.exceptions
    import nacl.signing

    try:
        nacl.signing.VerifyKey(raw).verify(data, signature)
    except (nacl.exceptions.BadSignatureError, ValueError, TypeError):
        return False
    return True


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def decode(token: object, kind: str) -> Claims:
    """The verified claims of `token`, which must be a `kind` JWT
    (``operator``, ``account`` or ``user``); JwtError otherwise."""
    if not isinstance(token, str) or not token:
        raise JwtError("no token")
    if len(token) > MAX_JWT_LEN:
        raise JwtError("token too long")
    parts = token.strip().split(".")
    if len(parts) != 3:
        raise JwtError("expected 3 chunks")
    try:
        header = json.loads(_b64decode(parts[0]))
        body = json.loads(_b64decode(parts[1]))
    except (ValueError, RecursionError):
        raise JwtError("token is not JSON") from None
    if not isinstance(header, dict) or str(header.get("typ", "")).upper() != "JWT":
        raise JwtError("not a JWT header")
    if header.get("alg") not in _ALGORITHMS:
        raise JwtError(f"unexpected {header.get('alg')!r} algorithm")
    if not isinstance(body, dict):
        raise JwtError("claims are not an object")
    nats = body.get("nats") if isinstance(body.get("nats"), dict) else {}
    assert isinstance(nats, dict)
    version = 2
    if isinstance(body.get("type"), str) and body["type"]:
        version = 1
        nats = _migrate_v1(body, nats)
    if nats.get("type") != kind:
        raise JwtError(f"not a {kind} claim")
    issuer, subject = body.get("iss"), body.get("sub")
    if not isinstance(issuer, str) or not isinstance(subject, str):
        raise JwtError("claims have no issuer or subject")
    if decode_public_key(subject, _PREFIX_OF_KIND[kind]) is None:
        raise JwtError(f"subject is not a public {kind} key")
    # v1 signed the encoded claims only; v2 signs header.claims
    signed = (parts[1] if version == 1 else f"{parts[0]}.{parts[1]}").encode("ascii")
    if not verify_signature(issuer, _ISSUER_OF_KIND[kind], signed, _b64decode(parts[2])):
        raise JwtError("claim failed signature verification")
    return Claims(
        subject=subject,
        issuer=issuer,
        name=str(body.get("name") or ""),
        issued_at=_int(body.get("iat")),
        expires=_int(body.get("exp")),
        not_before=_int(body.get("nbf")),
        nats=nats,
        version=version,
    )


def _migrate_v1(body: dict[str, Any], nats: dict[str, Any]) -> dict[str, Any]:
    """The ``nats`` object of a v1 token as the v2 library migrates it."""
    out = dict(nats)
    out["type"] = body["type"]
    out["version"] = 1
    for key in ("tags", "issuer_account"):
        if key in body:
            out[key] = body[key]
    if body["type"] == "account":
        limits = nats.get("limits")
        out["limits"] = (
            {k: v for k, v in limits.items() if k in _V1_ACCOUNT_LIMITS}
            if isinstance(limits, dict) else {}
        )
    elif body["type"] == "user":
        # v1 users had no limit unless they said so
        for key in ("subs", "data", "payload"):
            out.setdefault(key, -1)
    return out
