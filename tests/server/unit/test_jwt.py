"""core/jwt.py: NATS JWTs decode only when well formed, of the kind asked and signed by their issuer.

Tokens are made at test time with the nkeys package (tests/support/nats_auth.py
signs them as the Go jwt library does). Any input either decodes or raises
`JwtError`, never anything else.
"""

from __future__ import annotations

import base64
import json

import nkeys
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats_auth import encode_jwt, encode_jwt_v1, new_key

from jetstream_server.config import ConfigError, config_from_mapping, parse_config_text
from jetstream_server.core.jwt import JwtError, decode

OPERATOR = new_key(nkeys.PREFIX_BYTE_OPERATOR)
ACCOUNT = new_key(nkeys.PREFIX_BYTE_ACCOUNT)
USER = new_key(nkeys.PREFIX_BYTE_USER)


def _user_token(**extra: object) -> str:
    return encode_jwt({"sub": USER.public, "nats": {"type": "user", "version": 2}, **extra}, ACCOUNT)


def test_a_user_token_decodes_with_its_claims() -> None:
    claims = decode(_user_token(name="bob", exp=2_000_000_000), "user")
    assert (claims.subject, claims.issuer, claims.name, claims.expires) == (
        USER.public, ACCOUNT.public, "bob", 2_000_000_000)
    claims.check_times(1_900_000_000)
    with pytest.raises(JwtError, match="claim is expired"):
        claims.check_times(2_000_000_001)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def test_wrong_kind_wrong_signer_and_tampering_are_refused() -> None:
    token = _user_token()
    with pytest.raises(JwtError, match="not a account claim"):
        decode(token, "account")
    header, payload, sig = token.split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=="))
    body["name"] = "mallory"
    with pytest.raises(JwtError, match="signature"):
        decode(f"{header}.{_b64(json.dumps(body).encode())}.{sig}", "user")
    # signed by a user key, where an account key must sign
    forged = encode_jwt({"sub": USER.public, "nats": {"type": "user", "version": 2}}, USER)
    with pytest.raises(JwtError, match="signature"):
        decode(forged, "user")


@given(st.one_of(st.text(max_size=300), st.binary(max_size=100), st.none(), st.integers()))
def test_any_input_decodes_or_raises_jwt_error(token: object) -> None:
    for candidate in (token, f"eyJ0eXAiOiJKV1QifQ.{token}.AAAA"):
        try:
            decode(candidate, "user")
        except JwtError:
            pass


def test_only_the_memory_resolver_is_accepted_by_the_bundled_server() -> None:
    op = encode_jwt({"sub": OPERATOR.public, "nats": {"type": "operator", "version": 2}}, OPERATOR)
    text = f'operator: {op}\nresolver: URL("http://127.0.0.1:9090/jwt/v1/accounts/")\n'
    with pytest.raises(ConfigError, match="only the MEMORY resolver"):
        config_from_mapping(parse_config_text(text))


def test_v1_tokens_are_read_as_the_go_library_migrates_them() -> None:
    account = decode(encode_jwt_v1({
        "sub": ACCOUNT.public, "type": "account", "tags": ["a"],
        "nats": {"limits": {"subs": 5, "conn": 3, "mem_storage": -1, "disk_storage": -1},
                 "signing_keys": [new_key(nkeys.PREFIX_BYTE_ACCOUNT).public]},
    }, OPERATOR), "account")
    assert account.version == 1 and account.kind == "account"
    assert account.nats["limits"] == {"subs": 5, "conn": 3}  # no JetStream in v1
    assert account.nats["tags"] == ["a"]
    user = decode(encode_jwt_v1({
        "sub": USER.public, "type": "user", "issuer_account": ACCOUNT.public,
        "nats": {"pub": {"allow": ["a"]}, "subs": 2},
    }, ACCOUNT), "user")
    assert user.nats["issuer_account"] == ACCOUNT.public and user.nats["pub"] == {"allow": ["a"]}
    assert (user.nats["subs"], user.nats["data"], user.nats["payload"]) == (2, -1, -1)
    with pytest.raises(JwtError, match="not a account claim"):
        decode(encode_jwt_v1({"sub": ACCOUNT.public, "type": "user", "nats": {}}, OPERATOR), "account")


def test_a_v1_token_is_signed_over_its_claims_alone() -> None:
    header, payload, _ = encode_jwt_v1({"sub": USER.public, "type": "user", "nats": {}}, ACCOUNT).split(".")
    over_both = base64.urlsafe_b64encode(ACCOUNT.sign(f"{header}.{payload}".encode())).decode().rstrip("=")
    with pytest.raises(JwtError, match="signature"):
        decode(f"{header}.{payload}.{over_both}", "user")
