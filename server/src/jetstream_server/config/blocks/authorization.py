"""``authorization { ... }`` and the users and permissions it (and an account) holds.

One token, one user/password, or a ``users`` list of users and NKey users
with permissions (``publish``/``subscribe`` allow and deny lists, queue
subscriptions, ``allow_responses``) and ``default_permissions`` for those
without. nats-server's checks and messages are kept (``User entry requires a
user``, ``Can not have a token and a users array``, ...). A bcrypt hash or
an NKey user without the package it needs is a `ConfigError` naming it.
"""

from __future__ import annotations

from dataclasses import replace

from jetstream_server.config.errors import ConfigError, at_line
from jetstream_server.config.model import AuthSettings
from jetstream_server.config.values import as_int, as_str, block_items, parse_duration
from jetstream_server.core.auth import (
    NkeyUser,
    User,
    decode_user_key,
    is_bcrypt,
    require_bcrypt,
    require_nkeys,
)
from jetstream_server.core.permissions import (
    Permissions,
    ResponsePermission,
    SubjectPermission,
    split_queue_entry,
)
from jetstream_server.core.subjects import is_valid_subject


def authorization_block(value: object, key: str) -> tuple[AuthSettings, float | None]:
    """The credentials and the optional auth `timeout` (seconds), with
    nats-server's checks and messages."""
    items = block_items(value, key)
    user = password = token = None
    timeout: float | None = None
    users: tuple[User, ...] | None = None
    nkey_users: tuple[NkeyUser, ...] = ()
    defaults: Permissions | None = None
    block_line: int | None = None
    for k, v, line in items:
        with at_line(line):
            if k in ("user", "username"):
                user = as_str(v, f"{key}.{k}")
            elif k in ("password", "pass"):
                password = as_str(v, f"{key}.{k}")
            elif k == "token":
                token = as_str(v, f"{key}.{k}")
            elif k == "timeout":
                timeout = parse_duration(v, f"{key}.{k}")
            elif k == "users":
                users, nkey_users = users_block(v, f"{key}.{k}")
                block_line = line
            elif k in ("default_permission", "default_permissions", "permissions"):
                defaults = permissions_block(v, f"{key}.{k}")
            else:
                raise ConfigError(f"unknown key {key}.{k}")
    if (user is not None or password is not None) and token is not None:
        raise ConfigError("Cannot have a user/pass and token")
    if users is not None:
        if user is not None:
            raise ConfigError("Can not have a single user/pass and a users array")
        if token is not None:
            raise ConfigError("Can not have a token and a users array")
    if (user is None) != (password is None):
        raise ConfigError(f"{key}: user and password go together")
    if defaults is not None:
        users = tuple(
            u if u.permissions is not None else replace(u, permissions=defaults)
            for u in users or ()
        )
        nkey_users = tuple(
            u if u.permissions is not None else replace(u, permissions=defaults)
            for u in nkey_users
        )
    with at_line(block_line):
        check_packages(user, password, token, users or (), nkey_users)
    return (
        AuthSettings(
            user=user, password=password, token=token, users=users or (), nkey_users=nkey_users
        ),
        timeout,
    )


def check_packages(
    user: str | None,
    password: str | None,
    token: str | None,
    users: tuple[User, ...],
    nkey_users: tuple[NkeyUser, ...],
) -> None:
    """A bcrypt hash or an NKey user needs its package: say so at load time."""
    secrets = [s for s in (password, token, *(u.password for u in users)) if s]
    if any(is_bcrypt(s) for s in secrets):
        try:
            require_bcrypt()
        except ImportError as exc:
            raise ConfigError(str(exc)) from None
    if nkey_users:
        try:
            require_nkeys()
        except ImportError as exc:
            raise ConfigError(str(exc)) from None
        for u in nkey_users:
            if decode_user_key(u.public_key) is None:
                raise ConfigError("Not a valid public nkey for a user")


def users_block(value: object, key: str) -> tuple[tuple[User, ...], tuple[NkeyUser, ...]]:
    if not isinstance(value, list):
        raise ConfigError(f"Expected users field to be an array, got {value!r}")
    users: list[User] = []
    nkey_users: list[NkeyUser] = []
    seen: set[str] = set()
    for entry in value:
        if not isinstance(entry, dict):
            raise ConfigError(f"Expected user entry to be a map/struct, got {entry!r}")
        name = password = nkey = None
        perms: Permissions | None = None
        for k, v, line in block_items(entry, key):
            with at_line(line):
                if k == "nkey":
                    nkey = as_str(v, f"{key}.{k}")
                elif k in ("user", "username"):
                    name = as_str(v, f"{key}.{k}")
                elif k in ("pass", "password"):
                    password = as_str(v, f"{key}.{k}")
                elif k in ("permission", "permissions", "authorization"):
                    perms = permissions_block(v, f"{key}.{k}")
                else:
                    raise ConfigError(f"unknown key {key}.{k}")
        if not nkey and not name:
            raise ConfigError("User entry requires a user")
        if nkey:
            if name or password:
                raise ConfigError("Nkey users do not take usernames or passwords")
            if nkey in seen:
                raise ConfigError(f'Duplicate nkey "{nkey}" detected')
            seen.add(nkey)
            nkey_users.append(NkeyUser(nkey, perms))
        else:
            assert name is not None
            if name in seen:
                raise ConfigError(f'Duplicate user "{name}" detected')
            seen.add(name)
            users.append(User(name, password or "", perms))
    return tuple(users), tuple(nkey_users)


def permissions_block(value: object, key: str) -> Permissions:
    """``{ publish, subscribe, allow_responses }`` as nats-server parses it."""
    if not isinstance(value, dict):
        raise ConfigError(f"Expected permissions to be a map/struct, got {value!r}")
    publish = subscribe = None
    responses: ResponsePermission | None = None
    for k, v, line in block_items(value, key):
        with at_line(line):
            if k in ("pub", "publish", "import"):
                publish = _subject_permission(v, allow_queue=False)
            elif k in ("sub", "subscribe", "export"):
                subscribe = _subject_permission(v, allow_queue=True)
            elif k in ("publish_allow_responses", "allow_responses"):
                responses = _responses(v)
            else:
                raise ConfigError(f'Unknown field "{k}" parsing permissions')
    return Permissions(publish, subscribe, responses)


def _subject_permission(value: object, allow_queue: bool) -> SubjectPermission | None:
    if isinstance(value, dict):
        if not value:
            return None
        allow: tuple[str, ...] | None = None
        deny: tuple[str, ...] = ()
        for k, v, line in block_items(value, "permissions"):
            with at_line(line):
                if k == "allow":
                    allow = _perm_subjects(v, allow_queue) or None
                elif k == "deny":
                    deny = _perm_subjects(v, allow_queue)
                else:
                    raise ConfigError(
                        f'Unknown field name "{k}" parsing subject permissions, '
                        "only 'allow' or 'deny' are permitted"
                    )
        return SubjectPermission(allow, deny)
    # the old style: a subject or a list of subjects, all allowed
    return SubjectPermission(_perm_subjects(value, allow_queue) or None)


def _perm_subjects(value: object, allow_queue: bool) -> tuple[str, ...]:
    if isinstance(value, str):
        items: list[object] = [value]
    elif isinstance(value, list):
        items = list(value)
    else:
        raise ConfigError(
            "Expected subject permissions to be a subject, or array of subjects, "
            f"got {type(value).__name__}"
        )
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ConfigError("Subject in permissions array cannot be cast to string")
        if not is_valid_subject(item):
            parts = item.split()
            if not allow_queue or len(parts) != 2:
                raise ConfigError(f'subject "{item}" is not a valid subject')
            subject, queue = split_queue_entry(item)
            if not is_valid_subject(subject):
                raise ConfigError(f'subject "{subject}" is not a valid subject')
            if queue is None or not is_valid_subject(queue):
                raise ConfigError(f'queue "{queue}" is not a valid queue')
        out.append(item)
    return tuple(out)


def _responses(value: object) -> ResponsePermission | None:
    if isinstance(value, bool):
        return ResponsePermission() if value else None
    if not isinstance(value, dict):
        raise ConfigError("error parsing response permissions, expected a boolean or a map")
    defaults = ResponsePermission()
    max_msgs, expires_s = defaults.max_msgs, defaults.expires_s
    for k, v, line in block_items(value, "allow_responses"):
        with at_line(line):
            if k in ("max", "max_msgs", "max_messages", "max_responses"):
                # 0 keeps the default; a negative value means no limit
                max_msgs = as_int(v, k) or max_msgs
            elif k in ("expires", "expiration", "ttl"):
                if not isinstance(v, str):
                    raise ConfigError("error parsing expires, not a duration string")
                expires_s = parse_duration(v, k) or expires_s
            else:
                raise ConfigError(f'Unknown field "{k}" parsing permissions')
    return ResponsePermission(max_msgs, expires_s)
