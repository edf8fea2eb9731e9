"""``accounts { NAME: { users, jetstream, default_permissions, nkey, exports, imports } }``.

Each account becomes an `AccountSettings`; its users come back with their
account set, to be merged with the ``authorization`` users
(`with_account_users`: names unique across both). Exports and imports are
checked as nats-server checks them: every import names a defined account
that exports the subject to the importer.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from jetstream_server.config.blocks.authorization import (
    check_packages,
    permissions_block,
    users_block,
)
from jetstream_server.config.errors import ConfigError, at_line
from jetstream_server.config.model import AccountSettings, AuthSettings, Export, Import
from jetstream_server.config.values import as_bool, as_str, block_items, parse_duration, parse_size
from jetstream_server.core.account_limits import AccountLimits
from jetstream_server.core.auth import GLOBAL_ACCOUNT, NkeyUser, User
from jetstream_server.core.permissions import Permissions
from jetstream_server.core.subjects import is_subset_filter, is_valid_subject


def accounts_block(
    value: object, key: str
) -> tuple[tuple[AccountSettings, ...], tuple[tuple[User, ...], tuple[NkeyUser, ...]]]:
    """``accounts { NAME: { users, jetstream, default_permissions, nkey } }`` (or
    a list of names), with nats-server's checks and messages; the users come
    back with their account set."""
    if isinstance(value, list):
        names: list[str] = []
        for item in value:
            name = as_str(item, key)
            if name == GLOBAL_ACCOUNT:
                raise ConfigError(f'"{name}" is a Reserved Account')
            if name in names:
                raise ConfigError(f"Duplicate Account Entry: {name}")
            names.append(name)
        return tuple(AccountSettings(n) for n in names), ((), ())
    accounts: list[AccountSettings] = []
    users: list[User] = []
    nkey_users: list[NkeyUser] = []
    lines = {str(k): n for k, n in getattr(value, "lines", {}).items()}
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected a block {{ ... }} or a list of names, got {value!r}")
    for name, body in value.items():
        name = str(name)
        with at_line(lines.get(name)):
            if not isinstance(body, dict):
                raise ConfigError("Expected map entries for accounts")
            if name == GLOBAL_ACCOUNT:
                raise ConfigError(f'"{name}" is a Reserved Account')
            account, acc_users, acc_nkeys = _account_entry(name, body, f"{key}.{name}")
        accounts.append(account)
        users.extend(acc_users)
        nkey_users.extend(acc_nkeys)
    _check_imports(accounts)
    return tuple(accounts), (tuple(users), tuple(nkey_users))


def _check_imports(accounts: list[AccountSettings]) -> None:
    """Every import names a defined account that exports it to the importer
    (nats-server's messages)."""
    by_name = {a.name: a for a in accounts}
    for account in accounts:
        for exp in account.exports:
            for other in exp.accounts or ():
                if other not in by_name:
                    raise ConfigError(f'"{other}" account not defined for {exp.kind} export')
        for imp in account.imports:
            exporter = by_name.get(imp.account)
            if exporter is None:
                raise ConfigError(f'"{imp.account}" account not defined for {imp.kind} import')
            if not any(
                exp.kind == imp.kind
                and is_subset_filter(imp.subject, exp.subject)
                and (exp.accounts is None or account.name in exp.accounts)
                for exp in exporter.exports
            ):
                raise ConfigError(
                    f'Error adding {imp.kind} import "{imp.subject}": {imp.kind} import not authorized'
                )


def _exports(value: object, key: str) -> tuple[Export, ...]:
    if not isinstance(value, list):
        raise ConfigError(f"Exports should be an array, got {type(value).__name__}")
    out: list[Export] = []
    for entry in value:
        if not isinstance(entry, dict):
            raise ConfigError(f"Export Items should be a map with type entry, got {type(entry).__name__}")
        kind = subject = None
        accounts: tuple[str, ...] | None = None
        response = "singleton"
        for k, v, line in block_items(entry, key):
            with at_line(line):
                if k in ("stream", "service"):
                    if kind is not None:
                        raise ConfigError(f'Detected {k} "{v}" but already saw a {kind}')
                    if not isinstance(v, str):
                        raise ConfigError(f"Expected {k} name to be string, got {type(v).__name__}")
                    if not is_valid_subject(v):
                        raise ConfigError(f'subject "{v}" is not a valid subject')
                    kind, subject = k, v
                elif k == "accounts":
                    if not isinstance(v, list) or not all(isinstance(a, str) for a in v):
                        raise ConfigError("Expected accounts to be an array of strings")
                    accounts = tuple(v)
                elif k in ("response", "response_type"):
                    low = str(v).lower()
                    kinds = {"single": "singleton", "singleton": "singleton", "stream": "stream",
                             "chunk": "chunked", "chunked": "chunked"}
                    if low not in kinds:
                        raise ConfigError(f'Unknown response type: "{v}"')
                    response = kinds[low]
                elif k in ("threshold", "response_threshold", "response_max_time", "response_time"):
                    parse_duration(v, k)
                else:
                    raise ConfigError(f"unknown key {key}.{k}")
        if kind is None or subject is None:
            raise ConfigError("Export Items should be a map with type entry")
        if kind == "stream" and response != "singleton":
            raise ConfigError("Detected response directive on non-service")
        out.append(Export(kind, subject, accounts, response))
    return tuple(out)


def _imports(value: object, key: str) -> tuple[Import, ...]:
    if not isinstance(value, list):
        raise ConfigError(f"Imports should be an array, got {type(value).__name__}")
    out: list[Import] = []
    for entry in value:
        if not isinstance(entry, dict):
            raise ConfigError(f"Import Items should be a map with type entry, got {type(entry).__name__}")
        kind = account = subject = prefix = to = None
        for k, v, line in block_items(entry, key):
            with at_line(line):
                if k in ("stream", "service"):
                    if kind is not None:
                        raise ConfigError(f"Detected {k} but already saw a {kind}")
                    if not isinstance(v, dict):
                        raise ConfigError(
                            f"{k.capitalize()} entry should be an account map, got {type(v).__name__}"
                        )
                    src = {str(a).lower(): b for a, b in v.items()}
                    account, subject = src.get("account"), src.get("subject")
                    if not isinstance(account, str) or not isinstance(subject, str):
                        raise ConfigError("Expect an account name and a subject")
                    if not is_valid_subject(subject):
                        raise ConfigError(f'subject "{subject}" is not a valid subject')
                    kind = k
                elif k == "prefix":
                    prefix = as_str(v, k)
                elif k in ("to", "local_subject"):
                    to = as_str(v, k)
                elif k in ("share", "allow_trace"):
                    as_bool(v, k)
                else:
                    raise ConfigError(f"unknown key {key}.{k}")
        if kind is None or account is None or subject is None:
            raise ConfigError("Import Items should be a map with type entry")
        if prefix is not None and to is not None:
            raise ConfigError("Stream import can not have a 'prefix' and a 'to' property")
        if prefix is not None and kind == "service":
            raise ConfigError(f"unknown key {key}.prefix")
        local = to or (f"{prefix}.{subject}" if prefix else subject)
        if not is_valid_subject(local):
            raise ConfigError(f'subject "{local}" is not a valid subject')
        out.append(Import(kind, account, subject, local))
    return tuple(out)


def _account_entry(
    name: str, body: dict[str, Any], key: str
) -> tuple[AccountSettings, tuple[User, ...], tuple[NkeyUser, ...]]:
    limits: AccountLimits | None = None
    nkey: str | None = None
    exports: tuple[Export, ...] = ()
    imports: tuple[Import, ...] = ()
    users: tuple[User, ...] = ()
    nkey_users: tuple[NkeyUser, ...] = ()
    defaults: Permissions | None = None
    for k, v, line in block_items(body, key):
        with at_line(line):
            if k == "users":
                users, nkey_users = users_block(v, f"{key}.{k}")
            elif k == "jetstream":
                limits = _account_jetstream(v, f"{key}.{k}")
            elif k == "default_permissions":
                defaults = permissions_block(v, f"{key}.{k}")
            elif k == "exports":
                exports = _exports(v, f"{key}.{k}")
            elif k == "imports":
                imports = _imports(v, f"{key}.{k}")
            elif k == "nkey":
                nkey = as_str(v, f"{key}.{k}")
                if len(nkey) != 56 or not nkey.startswith("A"):
                    raise ConfigError(f'Not a valid public nkey for an account: "{nkey}"')
            else:
                raise ConfigError(f"unknown key {key}.{k}")
    users = tuple(
        replace(u, account=name, permissions=u.permissions if u.permissions is not None else defaults)
        for u in users
    )
    nkey_users = tuple(
        replace(u, account=name, permissions=u.permissions if u.permissions is not None else defaults)
        for u in nkey_users
    )
    check_packages(None, None, None, users, nkey_users)
    return AccountSettings(name, limits, nkey, exports=exports, imports=imports), users, nkey_users


_ACCOUNT_JS_SIZES: Final = {
    "max_memory": "max_memory", "max_mem": "max_memory", "mem": "max_memory", "memory": "max_memory",
    "max_store": "max_storage", "max_file": "max_storage", "max_disk": "max_storage",
    "store": "max_storage", "disk": "max_storage",
    "max_streams": "max_streams", "streams": "max_streams",
    "max_consumers": "max_consumers", "consumers": "max_consumers",
    "mem_max_stream_bytes": "memory_max_stream_bytes",
    "memory_max_stream_bytes": "memory_max_stream_bytes",
    "disk_max_stream_bytes": "storage_max_stream_bytes",
    "store_max_stream_bytes": "storage_max_stream_bytes",
    "max_ack_pending": "max_ack_pending",
}


def _account_jetstream(value: object, key: str) -> AccountLimits | None:
    """An account's ``jetstream``: true/false, "enabled"/"disabled" or a limits block."""
    if isinstance(value, bool):
        return AccountLimits() if value else None
    if isinstance(value, str):
        low = value.lower()
        if low in ("enabled", "enable"):
            return AccountLimits()
        if low in ("disabled", "disable"):
            return None
        raise ConfigError(f"Expected 'enabled' or 'disabled' for string value, got '{value}'")
    if not isinstance(value, dict):
        raise ConfigError(
            f"Expected map, bool or string to define JetStream, got {type(value).__name__}"
        )
    out: dict[str, Any] = {}
    for k, v, line in block_items(value, key):
        with at_line(line):
            if k in _ACCOUNT_JS_SIZES:
                try:
                    out[_ACCOUNT_JS_SIZES[k]] = parse_size(v, k)
                except ConfigError:
                    raise ConfigError(f'Expected a parseable size for "{k}", got {v}') from None
            elif k in ("max_bytes_required", "max_stream_bytes", "max_bytes"):
                if not isinstance(v, bool):
                    raise ConfigError(f'Expected a parseable bool for "{k}", got {v}')
                out["max_bytes_required"] = v
            elif k == "cluster_traffic":
                if v not in ("system", "owner", ""):
                    raise ConfigError(f'Expected \'system\' or \'owner\' string value for "{k}", got {v}')
            else:
                raise ConfigError(f"unknown key {key}.{k}")
    return AccountLimits(**out)


def with_account_users(
    auth: AuthSettings, users: tuple[User, ...], nkey_users: tuple[NkeyUser, ...]
) -> AuthSettings:
    """The authorization block's users plus the accounts' (names unique across both)."""
    if users or nkey_users:
        if auth.user is not None:
            raise ConfigError("Can not have a single user/pass and accounts")
        if auth.token is not None:
            raise ConfigError("Can not have a token and accounts")
    seen = {u.name for u in auth.users} | {u.public_key for u in auth.nkey_users}
    for u in users:
        if u.name in seen:
            raise ConfigError(f'Duplicate user "{u.name}" detected')
        seen.add(u.name)
    for k in nkey_users:
        if k.public_key in seen:
            raise ConfigError(f'Duplicate nkey "{k.public_key}" detected')
        seen.add(k.public_key)
    return replace(auth, users=auth.users + users, nkey_users=auth.nkey_users + nkey_users)
