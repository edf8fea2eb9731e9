"""Connection options (options/connection.py): the rules that join several options."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from spark_jetstream.options import ConnectionOptions, OptionError


def test_defaults_and_pickling() -> None:
    o = ConnectionOptions.from_options({})
    assert o == ConnectionOptions()
    assert o.servers == ("nats://127.0.0.1:4222",) and o.connect_timeout_s == 10.0 and not o.tls
    assert pickle.loads(pickle.dumps(o)) == o


def test_values(tmp_path: Path) -> None:
    ca, cert, key = (tmp_path / n for n in ("ca.pem", "c.pem", "c.key"))
    for f in (ca, cert, key):
        f.write_text("x")
    o = ConnectionOptions.from_options(
        {
            "SERVERS": " nats://a:1 ,tls://b:2,",
            "user": "u",
            "password": " p ",  # free text: taken as given
            "tlsCaFile": str(ca),
            "tlsCertFile": str(cert),
            "tlsKeyFile": str(key),
            "connectTimeout": "1m30s",
        }
    )
    assert o.servers == ("nats://a:1", "tls://b:2")
    assert (o.user, o.password) == ("u", " p ")
    assert o.tls and o.tls_ca_file == str(ca) and o.tls_key_file == str(key)
    assert o.connect_timeout_s == 90.0


@pytest.mark.parametrize(
    ("options", "tls"),
    [({}, False), ({"tls": "true"}, True), ({"servers": "tls://h:1"}, True), ({"servers": "nats://h:1,tls://h:2"}, True)],
)
def test_tls_is_implied(options: dict[str, str], tls: bool) -> None:
    assert ConnectionOptions.from_options(options).tls is tls


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"password": "p"}, "options user and password must be given together"),
        ({"tlsKeyFile": __file__}, "options tlsCertFile and tlsKeyFile must be given together"),
        ({"servers": ","}, "option servers: no server URL given"),
        ({"credsFile": "/nonexistent.creds"}, "option credsFile: file not found: /nonexistent.creds"),
        ({"connectTimeout": "50ms"}, "option connectTimeout: must be >= 0.1s"),
        ({"stream": "S"}, "unknown option 'stream' for connecting to jetstream"),
    ],
)
def test_errors_name_the_options(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        ConnectionOptions.from_options(options)


def test_timeouts_retries_and_subjects(tmp_path: Path) -> None:
    o = ConnectionOptions.from_options(
        {
            "requestTimeout": "2500ms",
            "retryTimeout": "2m",
            "retryBackoff": "50ms",
            "retryBackoffMax": "5s",
            "inboxPrefix": "my.inbox.",
            "domain": "hub",
        }
    )
    assert (o.request_timeout_s, o.retry_timeout_s, o.retry_backoff_s, o.retry_backoff_max_s) == (2.5, 120.0, 0.05, 5.0)
    assert o.inbox_prefix == "my.inbox" and o.domain == "hub" and o.api_prefix == "$JS.hub.API"
    d = ConnectionOptions()
    assert (d.request_timeout_s, d.retry_timeout_s, d.retry_backoff_s, d.retry_backoff_max_s) == (10.0, 60.0, 0.1, 2.0)
    assert d.inbox_prefix == "_INBOX" and d.api_prefix == "$JS.API" and d.domain is None
    assert ConnectionOptions.from_options({}) == d
    assert ConnectionOptions.from_options({"apiPrefix": "JS.acme.API"}).api_prefix == "JS.acme.API"
    assert ConnectionOptions.from_options({"retryTimeout": "0"}).retry_timeout_s == 0.0


def test_key_authentication_options(tmp_path: Path) -> None:
    seed = tmp_path / "user.nk"
    seed.write_text("SU...")
    o = ConnectionOptions.from_options({"nkeySeedFile": str(seed), "userJwt": "eyJ0.eyJ1.sig"})
    assert o.nkey_seed_file == str(seed) and o.user_jwt == "eyJ0.eyJ1.sig"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"domain": "hub", "apiPrefix": "$JS.hub.API"}, "options domain and apiPrefix exclude each other"),
        ({"domain": "a.b"}, "option domain: invalid JetStream domain 'a.b'"),
        ({"inboxPrefix": "my.*"}, "option inboxPrefix: 'my.\\*' is not a subject to publish to"),
        ({"apiPrefix": "a..b"}, "option apiPrefix: 'a..b' has an empty token"),
        ({"retryBackoff": "5s", "retryBackoffMax": "1s"}, r"option retryBackoff \(5s\) is larger than retryBackoffMax \(1s\)"),
        ({"requestTimeout": "1ms"}, "option requestTimeout: must be >= 0.01s"),
        ({"userJwt": "eyJ"}, "option userJwt needs nkeySeedFile"),
        ({"retryTimeout": "soon"}, "option retryTimeout: expected a duration"),
    ],
)
def test_more_errors_name_the_options(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        ConnectionOptions.from_options(options)


def test_creds_and_seed_files_exclude_each_other(tmp_path: Path) -> None:
    creds, seed = tmp_path / "u.creds", tmp_path / "u.nk"
    creds.write_text("x")
    seed.write_text("x")
    with pytest.raises(OptionError, match="options credsFile and nkeySeedFile exclude each other"):
        ConnectionOptions.from_options({"credsFile": str(creds), "nkeySeedFile": str(seed)})


def test_reprs_never_show_secrets() -> None:
    o = ConnectionOptions.from_options(
        {
            "servers": "nats://alice:url-pw-1@a:1,nats://tok-in-url-2@b:2,nats://c:3",
            "user": "bob",
            "password": "opt-pw-3",
            "token": "opt-tok-4",
        }
    )
    for text in (repr(o), str(o), o.display_servers):
        for secret in ("url-pw-1", "tok-in-url-2", "opt-pw-3", "opt-tok-4"):
            assert secret not in text, text
    assert "nats://alice:***@a:1" in repr(o) and "password='***'" in repr(o) and "user='bob'" in repr(o)
    assert o.display_servers == "nats://alice:***@a:1, nats://***@b:2, nats://c:3"
    assert set(o.secrets) >= {"url-pw-1", "tok-in-url-2", "opt-pw-3", "opt-tok-4"}
    # equality and hashing still see the real values (the pool keys connections by them)
    assert o != ConnectionOptions.from_options({"servers": "nats://alice:other@a:1", "user": "bob", "password": "x"})
    assert hash(o.pool_key) == hash(pickle.loads(pickle.dumps(o)).pool_key)


def test_pool_key_ignores_timeouts_but_not_identity() -> None:
    base = ConnectionOptions.from_options({"servers": "nats://a:1"})
    assert base.pool_key == ConnectionOptions.from_options({"servers": "nats://a:1", "retryTimeout": "5s"}).pool_key
    for other in ({"servers": "nats://b:1"}, {"servers": "nats://a:1", "token": "t"}, {"servers": "nats://a:1", "domain": "d"},
                  {"servers": "nats://a:1", "inboxPrefix": "x"}, {"servers": "nats://a:1", "tls": "true"}):
        assert ConnectionOptions.from_options(other).pool_key != base.pool_key, other
