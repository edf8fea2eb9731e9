"""NKeys, JWTs and server configurations for the authentication tests, made at test time.

`new_key(prefix)` makes an NKey pair (seed + public key) with the nkeys
package; `encode_jwt(claims, signer)` signs NATS JWT claims the way the Go
`nats-io/jwt` library does (header `{"typ":"JWT","alg":"ed25519-nkey"}`, `jti`
= base32 of the SHA-512/256 of the claims with an empty `jti`). With them,
`operator_config(...)` writes a nats-server configuration in operator mode
(memory resolver, one account with JetStream, a system account) and returns
a user JWT and seed for that account; `nkey_user_config(...)` writes one with
an NKey user. No key is ever committed. Not collected by pytest.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nkeys


@dataclass(frozen=True)
class Key:
    seed: str
    public: str

    def sign(self, data: bytes) -> bytes:
        kp = nkeys.from_seed(bytearray(self.seed.encode()))
        return bytes(kp.sign(data))


def new_key(prefix: int) -> Key:
    seed = nkeys.encode_seed(os.urandom(32), prefix).decode()
    kp = nkeys.from_seed(bytearray(seed.encode()))
    return Key(seed, kp.public_key.decode())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def encode_jwt(claims: dict[str, Any], signer: Key) -> str:
    body = {**claims, "jti": "", "iat": int(time.time()), "iss": signer.public}
    digest = hashlib.new("sha512_256", json.dumps(body, separators=(",", ":")).encode()).digest()
    body["jti"] = base64.b32encode(digest).decode().rstrip("=")
    header = _b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    payload = _b64(json.dumps(body, separators=(",", ":")).encode())
    signature = _b64(signer.sign(f"{header}.{payload}".encode()))
    return f"{header}.{payload}.{signature}"


def encode_jwt_v1(claims: dict[str, Any], signer: Key) -> str:
    body = {**claims, "jti": "", "iat": int(time.time()), "iss": signer.public}
    digest = hashlib.sha256(json.dumps(body, separators=(",", ":")).encode()).digest()
    body["jti"] = base64.b32encode(digest).decode().rstrip("=")
    header = _b64(json.dumps({"typ": "jwt", "alg": "ed25519"}).encode())
    payload = _b64(json.dumps(body, separators=(",", ":")).encode())
    return f"{header}.{payload}.{_b64(signer.sign(payload.encode()))}"


UNLIMITED = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": True,
             "conn": -1, "leaf": -1}
JETSTREAM_UNLIMITED = {"mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}


@dataclass(frozen=True)
class JwtUser:
    jwt: str
    seed: str

    def creds(self) -> str:
        """The `.creds` file text (the layout `nsc` writes)."""
        return (
            f"-----BEGIN NATS USER JWT-----\n{self.jwt}\n------END NATS USER JWT------\n\n"
            "************************* IMPORTANT *************************\n"
            "NKEY Seed printed below can be used to sign and prove identity.\n\n"
            f"-----BEGIN USER NKEY SEED-----\n{self.seed}\n------END USER NKEY SEED------\n"
        )


def operator_config(path: Path, store_dir: Path) -> JwtUser:
    """A nats-server configuration in operator mode at `path`; a user JWT of its account."""
    operator = new_key(nkeys.PREFIX_BYTE_OPERATOR)
    system, account, user = (new_key(nkeys.PREFIX_BYTE_ACCOUNT), new_key(nkeys.PREFIX_BYTE_ACCOUNT),
                             new_key(nkeys.PREFIX_BYTE_USER))
    op_jwt = encode_jwt({"sub": operator.public, "name": "test-operator",
                         "nats": {"type": "operator", "version": 2}}, operator)

    def account_jwt(key: Key, name: str, jetstream: bool) -> str:
        limits = {**UNLIMITED, **(JETSTREAM_UNLIMITED if jetstream else {})}
        return encode_jwt({"sub": key.public, "name": name,
                           "nats": {"limits": limits, "type": "account", "version": 2}}, operator)

    user_jwt = encode_jwt({"sub": user.public, "name": "spark",
                           "nats": {"pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1,
                                    "type": "user", "version": 2}}, account)
    path.write_text(
        f"operator: {op_jwt}\n"
        f"system_account: {system.public}\n"
        "resolver: MEMORY\n"
        "resolver_preload: {\n"
        f"  {system.public}: {account_jwt(system, 'SYS', False)}\n"
        f"  {account.public}: {account_jwt(account, 'APP', True)}\n"
        "}\n"
        f'jetstream {{ store_dir: "{store_dir}" }}\n'
    )
    return JwtUser(user_jwt, user.seed)


def nkey_user_config(path: Path, store_dir: Path) -> Key:
    """A server configuration at `path` whose only user is an NKey user; its key."""
    user = new_key(nkeys.PREFIX_BYTE_USER)
    path.write_text(
        f"authorization {{ users = [ {{ nkey: {user.public} }} ] }}\n"
        f'jetstream {{ store_dir: "{store_dir}" }}\n'
    )
    return user
