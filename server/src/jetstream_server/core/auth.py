"""Authentication decisions, sans-IO: CONNECT options in, an identity or a refusal out.

An `Authenticator` looks at the options of one CONNECT (and the nonce the
session put in its INFO) and answers with an `Identity` (the client may go
on, and is known by that identity: a user name, an account, permissions) or
a `Refusal` (the session closes with ``-ERR 'Authorization Violation'``; the
refusal's `reason` is for the server log only, never for the client, as
nats-server keeps why from a client that failed). It holds no per-connection
state and does no I/O, so the same instance serves every session.

- `StaticAuth`: nats-server's single-user authorization block: one token
  and/or one user with a password (``--auth``, ``--user/--pass``,
  ``authorization { token, user, password }``).
- `UsersAuth`: ``authorization { users = [...] }``: users with passwords and
  NKey users (challenge-response: the client signs the INFO nonce with its
  seed), each with optional `Permissions`, and ``no_auth_user`` (the user a
  client that sends no credentials becomes).

Passwords and tokens are plain text or bcrypt hashes (``$2a$``, ``$2b$``,
``$2x$``, ``$2y$`` and a two-digit cost, exactly the forms nats-server
recognises); bcrypt needs the `bcrypt` package and NKeys the `nkeys` package
(optional extras of the server distribution: ``jetstream-server[bcrypt]``,
``jetstream-server[nkeys]``). `require_bcrypt` / `require_nkeys` say clearly
when one is missing, for the config loader.

Invariants:
- secrets are compared in constant time (`hmac.compare_digest`), and a
  user/password pair is compared in full even when the user already differs,
  so the time taken says nothing about which part was wrong;
- a credential that is not a string (a number, null, a list) is a refusal,
  never an exception; non-ASCII text is compared as UTF-8 bytes;
- a bcrypt check runs at most once per (hash, password) pair that passed:
  successes are remembered as keyed digests (never the password), so
  reconnecting clients do not stall the event loop for the hash's cost.

`Identity.account` is the account the session belongs to; every identity is
in nats-server's global account ``$G`` until accounts are configured.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from jetstream_server.core.permissions import Permissions

GLOBAL_ACCOUNT: Final = "$G"
NONCE_RAW_LEN: Final = 11  # 15 characters in base64url, as nats-server's nonce

_BCRYPT_RE: Final = re.compile(r"^\$2[abxy]\$\d{2}\$")
_BCRYPT_MAX_PASSWORD: Final = 72  # bcrypt reads no further; Go's compare ignores the rest
_USER_KEY_PREFIX: Final = 20 << 3  # the version byte of a user public key ('U...')
_VERIFIED_MAX: Final = 1024


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a session is, once its CONNECT was accepted.

    `user` is the name the monitoring endpoints show (``authorized_user``):
    the authenticated user (an NKey user's public key), or, where no user was
    checked, the ``user`` the client sent (None when it sent none).
    `permissions` None means unrestricted.
    """

    user: str | None = None
    account: str = GLOBAL_ACCOUNT
    permissions: Permissions | None = None
    expires: int = 0  # Unix seconds when the credentials run out (a user JWT's exp); 0: never
    max_subs: int = -1  # a user JWT's `subs` (-1: no limit of the user's own)
    max_payload: int = -1  # a user JWT's `payload` (-1: no limit of the user's own)
    name_tag: str = ""  # the account's name where it differs from `account` (operator mode)


@dataclass(frozen=True, slots=True)
class Refusal:
    """A CONNECT that does not pass; `reason` goes to the server log only."""

    reason: str


AuthResult = Identity | Refusal


class Authenticator(Protocol):
    @property
    def required(self) -> bool:
        """True when credentials are checked: a client must send an accepted
        CONNECT before anything else (unless `anonymous` lets it in), and the
        auth timer runs."""
        ...

    @property
    def anonymous(self) -> Identity | None:
        """Who a client that sends no credentials is (``no_auth_user``), None
        when such a client is refused. INFO says ``auth_required`` when
        `required` and this is None."""
        ...

    @property
    def nonce_required(self) -> bool:
        """True when INFO must carry a nonce (NKey users)."""
        ...

    def authenticate(self, options: Mapping[str, Any], nonce: bytes = b"") -> AuthResult:
        """Decide on the options of one CONNECT; `nonce` is what its INFO carried."""
        ...


def new_nonce() -> str:
    """A fresh INFO nonce: 11 random bytes in unpadded base64url, like nats-server's."""
    return base64.urlsafe_b64encode(secrets.token_bytes(NONCE_RAW_LEN)).rstrip(b"=").decode()


def _claimed_user(options: Mapping[str, Any]) -> str | None:
    user = options.get("user")
    return user if isinstance(user, str) else None


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def same_secret(given: object, expected: str) -> bool:
    """Constant-time comparison of a client-supplied value with a secret.

    False for anything that is not a string; non-ASCII text (and lone
    surrogates from undecodable bytes) compares as UTF-8 bytes."""
    if not isinstance(given, str):
        return False
    return hmac.compare_digest(_bytes(given), _bytes(expected))


# -- bcrypt ----------------------------------------------------------------------------


def is_bcrypt(secret: str) -> bool:
    """nats-server's test: ``$2a$``/``$2b$``/``$2x$``/``$2y$`` and a two-digit cost."""
    return secret.startswith("$") and _BCRYPT_RE.match(secret) is not None


def require_bcrypt() -> None:
    """Raise ImportError with the fix when the bcrypt package is missing."""
    try:
        import bcrypt  # noqa: F401
    except ImportError:
        raise ImportError(
            "bcrypt password hashes need the 'bcrypt' package: "
            "pip install 'jetstream-server[bcrypt]'"
        ) from None


_digest_key = secrets.token_bytes(32)
_verified: OrderedDict[bytes, None] = OrderedDict()


def _bcrypt_matches(hashed: str, given: str) -> bool:
    digest = hmac.new(_digest_key, _bytes(hashed) + b"\0" + _bytes(given), hashlib.sha256).digest()
    if digest in _verified:
        _verified.move_to_end(digest)
        return True
    try:
        import bcrypt
    except ImportError:
        return False  # the config loader refuses bcrypt hashes without the package
    try:
        ok = bool(bcrypt.checkpw(_bytes(given)[:_BCRYPT_MAX_PASSWORD], _bytes(hashed)))
    except ValueError:  # a malformed hash: nobody logs in with it
        return False
    if ok:
        _verified[digest] = None
        if len(_verified) > _VERIFIED_MAX:
            _verified.popitem(last=False)
    return ok


def check_password(stored: str, given: object) -> bool:
    """nats-server's comparePasswords: bcrypt when `stored` is a hash, else
    constant-time equality. Anything but a string from the client fails."""
    if not isinstance(given, str):
        return False
    if is_bcrypt(stored):
        return _bcrypt_matches(stored, given)
    return same_secret(given, stored)


# -- NKeys -------------------------------------------------------------------------------


def require_nkeys() -> None:
    """Raise ImportError with the fix when the nkeys package (and its pynacl) is missing."""
    try:
        import nacl.signing  # noqa: F401
        import nkeys  # noqa: F401
    except ImportError:
        raise ImportError(
            "NKey users need the 'nkeys' package: pip install 'jetstream-server[nkeys]'"
        ) from None


def decode_user_key(public_key: str) -> bytes | None:
    """The 32 raw bytes of a user public NKey (``U...``), None when it is not one
    (bad base32, wrong role, bad checksum)."""
    if not isinstance(public_key, str) or len(public_key) != 56 or not public_key.startswith("U"):
        return None
    try:
        raw = base64.b32decode(public_key)
    except (binascii.Error, ValueError):
        return None
    import nkeys

    if len(raw) != 35 or raw[0] != _USER_KEY_PREFIX:
        return None
    if bytes(nkeys.crc16_checksum(raw[:33])) != raw[33:]:
        return None
    return raw[1:33]


def _decode_signature(sig: str) -> bytes | None:
    # nats-server tries unpadded base64url first, then standard base64
    padded = sig + "=" * (-len(sig) % 4)
    for altchars in (b"-_", None):
        try:
            return base64.b64decode(padded, altchars=altchars, validate=True)
        except (binascii.Error, ValueError):
            continue
    return None


def verify_nonce_signature(public_key: str, nonce: bytes, sig: object) -> bool:
    """Did the holder of `public_key`'s seed sign `nonce` (`sig` as the client sent it)?"""
    if not isinstance(sig, str) or not nonce:
        return False
    raw_key = decode_user_key(public_key)
    signature = _decode_signature(sig)
    if raw_key is None or signature is None:
        return False
    import nacl.exceptions
    import nacl.signing

    try:
        nacl.signing.VerifyKey(raw_key).verify(nonce, signature)
    except (nacl.exceptions.BadSignatureError, ValueError, TypeError):
        return False
    return True


# -- authenticators ---------------------------------------------------------------------


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

    @property
    def anonymous(self) -> Identity | None:
        return None if self.required else Identity()

    @property
    def nonce_required(self) -> bool:
        return False

    def authenticate(self, options: Mapping[str, Any], nonce: bytes = b"") -> AuthResult:
        claimed = _claimed_user(options)
        if not self.required:
            return Identity(claimed)
        if self.token is not None and check_password(self.token, options.get("auth_token")):
            return Identity(claimed)
        if self.user is not None:
            # both halves compared, always: `and` would skip the password
            # when the user differs, and the timing would tell
            user_ok = same_secret(options.get("user"), self.user)
            pass_ok = check_password(self.password or "", options.get("pass"))
            if user_ok & pass_ok:
                return Identity(self.user)
        if not any(key in options for key in ("auth_token", "user", "pass")):
            return Refusal("no credentials in CONNECT")
        return Refusal("credentials do not match")


NO_AUTH: StaticAuth = StaticAuth()


@dataclass(frozen=True, slots=True)
class User:
    """A user of ``authorization { users = [...] }`` with a password (plain or bcrypt)."""

    name: str
    password: str = ""
    permissions: Permissions | None = None
    account: str = GLOBAL_ACCOUNT


@dataclass(frozen=True, slots=True)
class NkeyUser:
    """A user known by its public NKey (``nkey: U...``)."""

    public_key: str
    permissions: Permissions | None = None
    account: str = GLOBAL_ACCOUNT


def _empty(options: Mapping[str, Any], key: str) -> bool:
    return options.get(key) in (None, "")


class UsersAuth:
    """Several users (passwords) and NKey users, and an optional ``no_auth_user``.

    Decided as nats-server's processClientOrLeafAuthentication: a CONNECT with
    no user, password, token or nkey is the ``no_auth_user`` (when set); an
    ``nkey`` in CONNECT must be a configured NKey user that signed the nonce;
    otherwise the ``user`` must be configured and the password must match.
    A token is never accepted here (nats-server refuses a token next to a
    users list)."""

    __slots__ = ("_users", "_nkeys", "_no_auth_user", "_anonymous", "_dummy")

    def __init__(
        self,
        users: tuple[User, ...] = (),
        nkey_users: tuple[NkeyUser, ...] = (),
        no_auth_user: str | None = None,
    ) -> None:
        self._users = {u.name: u for u in users}
        self._nkeys = {u.public_key: u for u in nkey_users}
        self._no_auth_user = no_auth_user
        self._anonymous: Identity | None = None
        if no_auth_user is not None:
            if no_auth_user in self._users:
                u = self._users[no_auth_user]
                self._anonymous = Identity(u.name, u.account, u.permissions)
            elif no_auth_user in self._nkeys:
                k = self._nkeys[no_auth_user]
                self._anonymous = Identity(k.public_key, k.account, k.permissions)
            else:
                raise ValueError(f"no_auth_user {no_auth_user!r} is not a configured user or nkey")
        # compared against when the user is unknown, so the time taken does not
        # tell whether a user name exists
        self._dummy = secrets.token_hex(16)

    @property
    def required(self) -> bool:
        return True

    @property
    def anonymous(self) -> Identity | None:
        return self._anonymous

    @property
    def nonce_required(self) -> bool:
        return bool(self._nkeys)

    def authenticate(self, options: Mapping[str, Any], nonce: bytes = b"") -> AuthResult:
        if self._anonymous is not None and all(
            _empty(options, k) for k in ("user", "pass", "auth_token", "nkey")
        ):
            return self._anonymous
        nkey = options.get("nkey")
        if self._nkeys and not _empty(options, "nkey"):
            entry = self._nkeys.get(nkey) if isinstance(nkey, str) else None
            if entry is None:
                return Refusal("unknown nkey")
            if not verify_nonce_signature(entry.public_key, nonce, options.get("sig")):
                return Refusal(f"nkey {entry.public_key}: signature missing or not verified")
            return Identity(entry.public_key, entry.account, entry.permissions)
        name = options.get("user")
        if self._users and isinstance(name, str) and name:
            user = self._users.get(name)
            if user is None:
                check_password(self._dummy, options.get("pass"))
                return Refusal(f"unknown user {name!r}")
            if not check_password(user.password, options.get("pass")):
                return Refusal(f"password mismatch for user {name!r}")
            return Identity(user.name, user.account, user.permissions)
        if not any(key in options for key in ("auth_token", "user", "pass", "nkey")):
            return Refusal("no credentials in CONNECT")
        return Refusal("credentials do not match")
