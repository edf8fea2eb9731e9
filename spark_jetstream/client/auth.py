"""What a connection proves about itself: the CONNECT fields and the TLS context.

`connect_fields(options, nonce, url_user, url_password)` builds the
authentication part of CONNECT, the way the NATS clients do:
- user + password (options or the URL's `user:pass@`), or a token
  (`token`, or a URL's `token@`);
- `credsFile`: a `.creds` file holds a user JWT and its NKey seed; the seed
  signs the server's nonce: `{"jwt": ..., "sig": ...}`;
- `nkeySeedFile` alone: an NKey user, `{"nkey": <public key>, "sig": ...}`;
  with `userJwt`: `{"jwt": <userJwt>, "sig": ...}`.
Signing needs the `nkeys` package (the `nkeys` extra); its absence is an
error naming the option and the extra.

Files are found where this process runs (`options.files.find_file`: the
path as given, else Spark's distributed copy); a missing one is an error
naming the option. No secret (seed, password, token, JWT) ever appears in an
error text: messages name the option and the file.
"""

from __future__ import annotations

import base64
import re
import ssl
from typing import Any

from spark_jetstream.client.errors import NatsError
from spark_jetstream.options.connection import ConnectionOptions
from spark_jetstream.options.files import find_file, not_found_text

_JWT_RE = re.compile(r"\bey[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+")
_USER_SEED_RE = re.compile(r"\bSU[A-Z2-7]{56}\b")


def local_file(option: str, path: str) -> str:
    """Where the file of `option` is in this process; an error naming the option if nowhere."""
    found = find_file(path)
    if found is None:
        raise NatsError(not_found_text(option, path))
    return found


def _read(option: str, path: str) -> str:
    with open(local_file(option, path), encoding="utf-8") as f:
        return f.read()


def _sign(option: str, seed: str, nonce: str) -> tuple[bytes, str]:
    """(public key, signature of `nonce`) for the user `seed`."""
    try:
        import nkeys
    except ImportError:
        raise NatsError(
            f"option {option} needs the 'nkeys' package (pip install 'spark-jetstream[nkeys]')"
        ) from None
    kp = nkeys.from_seed(seed.encode())
    try:
        signature = kp.sign(nonce.encode())
        public = kp.public_key
    finally:
        kp.wipe()
    return public, base64.urlsafe_b64encode(signature).decode().rstrip("=")


def _user_seed(option: str, path: str, text: str) -> str:
    m = _USER_SEED_RE.search(text)
    if m is None:
        raise NatsError(f"option {option}: no NKey user seed (SU...) found in {path}")
    return m.group(0)


def connect_fields(
    options: ConnectionOptions, nonce: str, url_user: str | None, url_password: str | None
) -> dict[str, Any]:
    """The authentication fields of CONNECT for `options` (and the URL's user part)."""
    fields: dict[str, Any] = {}
    user = url_user if url_user is not None else options.user
    password = url_password if url_password is not None else options.password
    if user is not None and password is None:
        fields["auth_token"] = user  # nats://token@host
    elif user is not None:
        fields["user"] = user
        fields["pass"] = password
    if options.token is not None:
        fields["auth_token"] = options.token
    if options.creds_file is not None:
        text = _read("credsFile", options.creds_file)
        jwt = _JWT_RE.search(text)
        if jwt is None:
            raise NatsError(f"option credsFile: no user JWT found in {options.creds_file}")
        seed = _user_seed("credsFile", options.creds_file, text)
        _, fields["sig"] = _sign("credsFile", seed, nonce)
        fields["jwt"] = jwt.group(0)
    elif options.nkey_seed_file is not None:
        seed = _user_seed("nkeySeedFile", options.nkey_seed_file, _read("nkeySeedFile", options.nkey_seed_file))
        public, fields["sig"] = _sign("nkeySeedFile", seed, nonce)
        if options.user_jwt is not None:
            fields["jwt"] = options.user_jwt
        else:
            fields["nkey"] = public.decode() if isinstance(public, bytes) else str(public)
    return fields


def ssl_context(options: ConnectionOptions) -> ssl.SSLContext:
    """The TLS context for `options`: their CA file (else the system's), their client certificate."""
    ca = local_file("tlsCaFile", options.tls_ca_file) if options.tls_ca_file else None
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca)
    if options.tls_cert_file and options.tls_key_file:
        ctx.load_cert_chain(
            local_file("tlsCertFile", options.tls_cert_file), local_file("tlsKeyFile", options.tls_key_file)
        )
    return ctx
