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
