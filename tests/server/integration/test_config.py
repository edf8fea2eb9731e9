"""The nats-server config file subset (jetstream_server/config/): syntax, values, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from jetstream_server.config import (
    AuthSettings,
    ConfigError,
    ServerConfig,
    config_from_mapping,
    load_config_file,
    parse_config_text,
    parse_duration,
    parse_size,
)

FULL = """
# a full example
port: 4333
host = "127.0.0.1"
http_port 8333   // comment after a value
max_payload: 2MB
max_pending: 32MB
max_control_line: 8192
ping_interval: "30s"
ping_max: 3
write_deadline: "2s"
server_name: hub-1
authorization {
  user: alice
  password: "s3cret pw"
}
tls {
  cert_file: "/certs/server.pem"
  key_file: '/certs/server.key'
  ca_file = /certs/ca.pem
  verify: true
}
jetstream {
  store_dir: /var/lib/js
  max_memory_store: 1GB
  max_file_store: 10G
  sync_interval: "2m"
  sync_always: false
  domain: hub
}
"""


def cfg(text: str) -> ServerConfig:
    return config_from_mapping(parse_config_text(text, "test.conf"), source="test.conf")


def test_full_example() -> None:
    c = cfg(FULL)
    assert (c.host, c.port, c.http_port, c.server_name) == ("127.0.0.1", 4333, 8333, "hub-1")
    assert c.max_payload == 2 * 1024 * 1024
    assert c.max_pending == 32 * 1024 * 1024
    assert c.max_control_line == 8192
    assert (c.ping_interval_s, c.max_pings_out, c.write_deadline_s) == (30.0, 3, 2.0)
    assert c.auth == AuthSettings(user="alice", password="s3cret pw")
    assert c.tls.enabled and c.tls.verify
    assert (c.tls.cert_file, c.tls.key_file, c.tls.ca_file) == (
        "/certs/server.pem", "/certs/server.key", "/certs/ca.pem",
    )
    js = c.jetstream
    assert js.store_dir == "/var/lib/js"
    assert (js.max_memory_store, js.max_file_store) == (1024**3, 10 * 1024**3)
    assert (js.sync_interval_s, js.sync_always, js.domain) == (120.0, False, "hub")


def test_defaults() -> None:
    c = ServerConfig()
    assert (c.port, c.max_payload, c.max_control_line) == (4222, 1024 * 1024, 4096)
    assert (c.ping_interval_s, c.max_pings_out) == (120.0, 2)
    assert c.jetstream.sync_interval_s == 120.0 and c.jetstream.sync_always is False
    assert c.jetstream.max_file_store == -1 and c.jetstream.store_dir is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("port: 1234", 1234),
        ("port=1234", 1234),
        ("port 1234", 1234),
        ("port:1234", 1234),
        ("listen: 127.0.0.1:1234", 1234),
        ("port: 1; port: 1234", 1234),
    ],
)
def test_separators(text: str, expected: int) -> None:
    assert cfg(text).port == expected


def test_token_and_sync_always_forms() -> None:
    c = cfg("authorization { token: abc }\njetstream { sync_interval: always }")
    assert c.auth.token == "abc" and c.auth.required
    assert c.jetstream.sync_always is True
    assert cfg("jetstream: enabled").jetstream == ServerConfig().jetstream


@pytest.mark.parametrize(
    ("value", "size"),
    [(1024, 1024), ("1KB", 1024), ("64K", 65536), ("1MB", 1024**2), ("2gb", 2 * 1024**3),
     ("1GiB", 1024**3), ("-1", -1), ("512", 512)],
)
def test_sizes(value: object, size: int) -> None:
    assert parse_size(value) == size


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("10s", 10.0), ("2m", 120.0), ("1h30m", 5400.0), ("500ms", 0.5), (30, 30.0), ("45", 45.0)],
)
def test_durations(value: object, seconds: float) -> None:
    assert parse_duration(value) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("port: 1\nbogus: 2\n", "test.conf:2: unknown configuration key 'bogus'"),
        ("port: 1\nmax_payload: lots\n", "test.conf:2: max_payload: expected a size"),
        ("ping_interval: soon\n", "test.conf:1: ping_interval: expected a duration"),
        ("port: abc\n", "test.conf:1: port: expected an integer"),
        ("jetstream {\n  store_dir: x\n  bogus: 1\n}\n", "test.conf:3: unknown key jetstream.bogus"),
        ("tls {\n cert_file: a\n key_file: b\n verify: maybe\n}", "test.conf:4: tls.verify"),
        ("tls { verify: true }", "cert_file and key_file are required"),
        ("authorization { user: a }", "user and password go together"),
        ("authorization {\n user: a\n", "test.conf:3: missing '}'"),
        ('host: "unterminated\n', "test.conf:1: unterminated string"),
        ("port\n", "test.conf:1: key 'port' has no value"),
    ],
)
def test_errors_name_key_and_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        cfg(text)
    assert message in str(info.value)


def test_cross_field_validation() -> None:
    with pytest.raises(ConfigError, match=r"max_payload \(1048576\) cannot be higher than max_pending"):
        cfg("max_pending: 256KB").validate()
    assert cfg("max_pending: 256KB\nmax_payload: 64KB").validate().max_payload == 65536


def test_load_file(tmp_path: Path) -> None:
    path = tmp_path / "server.conf"
    path.write_text(FULL)
    assert load_config_file(path).port == 4333
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config_file(tmp_path / "missing.conf")


# -- authorization, permissions and limits ---------------------------------------------------

USERS = """
authorization {
  default_permissions = { subscribe: "_INBOX.>" }
  users = [
    { user: alice, password: a, permissions: {
        publish: { allow: ["orders.>"], deny: "orders.secret" }
        subscribe: ["_INBOX.>", "orders.> workers"]
        allow_responses: { max: 3, expires: "30s" } } }
    { username: bob, pass: b, permissions: { publish: "x" } }
    { user: carol, password: c }
  ]
  timeout: 5
}
no_auth_user: carol
max_connections: 10
max_subs: 5
http: "127.0.0.1:8333"
jetstream { limits { max_ack_pending: 10, max_request_batch: 20, duplicate_window: "1m" } }
"""


def test_users_and_permissions() -> None:
    from jetstream_server.core.permissions import Permissions, ResponsePermission, SubjectPermission

    c = cfg(USERS).validate()
    alice, bob, carol = c.auth.users
    assert alice.name == "alice" and alice.password == "a"
    assert alice.permissions == Permissions(
        SubjectPermission(("orders.>",), ("orders.secret",)),
        SubjectPermission(("_INBOX.>", "orders.> workers")),
        ResponsePermission(3, 30.0),
    )
    assert bob.permissions == Permissions(SubjectPermission(("x",)))
    assert carol.permissions == Permissions(subscribe=SubjectPermission(("_INBOX.>",)))
    assert c.auth.no_auth_user == "carol" and c.auth.required
    assert (c.auth_timeout_s, c.max_connections, c.max_subscriptions) == (5.0, 10, 5)
    assert (c.http_host, c.http_port) == ("127.0.0.1", 8333)
    limits = c.jetstream.limits
    assert (limits.max_ack_pending, limits.max_request_batch, limits.duplicate_window_ns) == (
        10, 20, 60 * 10**9,
    )


def test_max_connections_zero_refuses_everyone_like_nats_server() -> None:
    assert cfg("max_connections: 0").max_connections == -1
    assert ServerConfig().max_connections == 65536


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("authorization { user: a, password: b, token: t }", "Cannot have a user/pass and token"),
        ("authorization { token: t, users = [{user: a}] }", "Can not have a token and a users array"),
        ("authorization {\n users = [\n {password: x}\n ]\n}", "test.conf:2: User entry requires a user"),
        ("authorization { users = [{user: a}, {user: a}] }", 'Duplicate user "a" detected'),
        ("authorization { users = [{nkey: Ubad}] }", "Not a valid public nkey for a user"),
        ("authorization { users = [{nkey: Ubad, user: x}] }", "Nkey users do not take usernames"),
        ("authorization { users = [{user: a, permissions: {pub: 'a b'}}] }", 'subject "a b" is not a valid subject'),
        ("authorization { users = [{user: a, permissions: {sub: 'a b c'}}] }", 'subject "a b c" is not a valid subject'),
        ("authorization { users = [{user: a, permissions: {sub: 'a.> b.>.c'}}] }", 'queue "b.>.c" is not a valid queue'),
        ("authorization { users = [{user: a, permissions: {pub: {allow: a, other: b}}}] }", "only 'allow' or 'deny' are permitted"),
        ("authorization { users = [{user: a, permissions: {bogus: 1}}] }", 'Unknown field "bogus" parsing permissions'),
        ("authorization { users = [{user: a, permissions: {allow_responses: {expires: 5}}}] }", "not a duration string"),
        ("authorization { users = [{user: a, bogus: 1}] }", "unknown key authorization.users.bogus"),
        ("max_payload: 3GB", "max_payload value is too big"),
        ("jetstream { limits { bogus: 1 } }", "unknown key jetstream.limits.bogus"),
    ],
)
def test_authorization_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        cfg(text)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no_auth_user: x", 'no_auth_user: "x" present, but users/nkeys are not defined'),
        ("authorization { users = [{user: a}] }\nno_auth_user: x", 'no_auth_user: "x" not present'),
    ],
)
def test_no_auth_user_must_exist(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        cfg(text).validate()


def test_bcrypt_hash_without_the_package_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "bcrypt", None)  # `import bcrypt` now fails
    text = 'authorization {\n  users = [ { user: a, password: "$2a$11$abcdefghijklmnopqrstuv" } ]\n}'
    with pytest.raises(ConfigError, match=r"test.conf:2: .*'bcrypt' package.*jetstream-server\[bcrypt\]"):
        cfg(text)
    assert cfg("authorization { users = [ { user: a, password: plain } ] }").auth.users


def test_nkey_users_without_the_package_are_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "nkeys", None)
    text = "authorization { users = [ { nkey: UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4 } ] }"
    with pytest.raises(ConfigError, match=r"jetstream-server\[nkeys\]"):
        cfg(text)
