"""Operator (JWT) mode: ``operator``, ``resolver`` and ``resolver_preload``.

The operator JWTs (inline or in a file, as nsc writes them) give the trusted
keys; the MEMORY resolver's preloaded account JWTs give the accounts, with
their JetStream limits, exports and imports (an import its exporter does not
allow is dropped, as nats-server marks it invalid). `apply_operator_mode`
runs nats-server's validateTrustedOperators checks against the rest of the
file (no users or accounts configured directly, one system account; without
one, operator mode has none, and JetStream cannot start).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from jetstream_server.config.errors import ConfigError
from jetstream_server.config.model import (
    AccountSettings,
    AuthSettings,
    Export,
    Import,
    OperatorSettings,
    ServerConfig,
)
from jetstream_server.core.account_limits import AccountLimits
from jetstream_server.core.jwt import Claims, JwtError, decode
from jetstream_server.core.jwt_auth import JwtAccount
from jetstream_server.core.subjects import is_subset_filter, is_valid_subject


def operators_block(value: object, key: str) -> list[Claims]:
    """``operator``: operator JWTs, each inline or in a file (as nats-server reads them)."""
    items = value if isinstance(value, list) else [value]
    out: list[Claims] = []
    for item in items:
        if not isinstance(item, str):
            raise ConfigError(f"error parsing operators: unsupported type {type(item).__name__}")
        text = item
        if not item.startswith("eyJ"):
            try:
                text = Path(item).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"error parsing operator JWT: {exc}") from None
            text = _jwt_in(text)
        try:
            out.append(decode(text.strip(), "operator"))
        except JwtError as exc:
            raise ConfigError(f"error parsing operator JWT: {exc}") from None
    return out


def _jwt_in(text: str) -> str:
    """The JWT of a file that holds it alone or between nsc's BEGIN/END lines."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("eyJ"):
            return line
    return text


def resolver_block(value: object) -> str:
    if isinstance(value, str) and re.fullmatch(r"(?i)\s*(MEM|MEMORY)\s*", value):
        return "MEMORY"
    raise ConfigError(
        f"resolver: only the MEMORY resolver (with resolver_preload) is supported by "
        f"this server, got {value!r}"
    )


def resolver_preload_block(value: object) -> tuple[JwtAccount, ...]:
    if not isinstance(value, dict):
        raise ConfigError("preload should be a map of account_public_key:account_jwt")
    out: list[JwtAccount] = []
    for key, token in value.items():
        if not isinstance(token, str):
            raise ConfigError("preload map value should be a string JWT")
        try:
            claims = decode(token, "account")
        except JwtError:
            raise ConfigError("invalid account JWT") from None
        if claims.subject != key:
            raise ConfigError(f"resolver_preload: the JWT of {key} is for account {claims.subject}")
        out.append(JwtAccount(claims))
    return tuple(out)


def apply_operator_mode(
    changes: dict[str, Any],
    cfg: ServerConfig,
    operators: list[Claims],
    resolver: str | None,
    preload: tuple[JwtAccount, ...],
) -> None:
    """nats-server's validateTrustedOperators, then the accounts of the preload."""
    if resolver is None:
        raise ConfigError("operators require an account resolver to be configured")
    if changes.get("accounts"):
        raise ConfigError("operators do not allow Accounts to be configured directly")
    auth: AuthSettings = changes.get("auth", cfg.auth)
    if auth.users or auth.nkey_users or auth.user or auth.token:
        raise ConfigError("operators do not allow users to be configured directly")
    trusted: set[str] = set()
    op_system: str | None = None
    for op in operators:
        trusted.add(op.subject)
        trusted.update(k for k in op.nats.get("signing_keys") or () if isinstance(k, str))
        sys_key = op.nats.get("system_account")
        if isinstance(sys_key, str) and sys_key:
            op_system = sys_key
    system = changes.get("system_account", cfg.system_account)
    if system and op_system and system != op_system:
        raise ConfigError("system_account in config and operator JWT must be identical")
    system = system or op_system
    if system:
        changes["system_account"] = system
    else:
        # nats-server has no system account then (not even $SYS): it serves
        # core NATS, and refuses to start JetStream (ServerConfig.validate)
        changes["no_system_account"] = True
    changes["auth"] = replace(
        auth, operator=OperatorSettings(frozenset(trusted), preload, system)
    )
    accounts = [
        AccountSettings(
            acc.public_key,
            _jwt_jetstream(acc.claims),
            name_tag=acc.claims.name,
            exports=_jwt_exports(acc.claims),
            imports=_jwt_imports(acc.claims),
        )
        for acc in preload
    ]
    changes["accounts"] = _authorized_imports(accounts)


def _jwt_exports(claims: Claims) -> tuple[Export, ...]:
    """An account JWT's exports that need no activation token."""
    out: list[Export] = []
    for e in claims.nats.get("exports") or ():
        if not isinstance(e, dict) or e.get("token_req"):
            continue
        kind, subject = e.get("type"), e.get("subject")
        if kind not in ("stream", "service") or not isinstance(subject, str):
            continue
        if not is_valid_subject(subject):
            continue
        response = str(e.get("response_type") or "singleton").lower()
        out.append(Export(kind, subject, None, response if response in ("stream", "chunked") else "singleton"))
    return tuple(out)


def _jwt_imports(claims: Claims) -> tuple[Import, ...]:
    """An account JWT's imports (``local_subject``; the deprecated ``to`` is a
    prefix for streams and the local subject for services)."""
    out: list[Import] = []
    for i in claims.nats.get("imports") or ():
        if not isinstance(i, dict):
            continue
        kind, subject, account = i.get("type"), i.get("subject"), i.get("account")
        if kind not in ("stream", "service") or not isinstance(subject, str) or not isinstance(account, str):
            continue
        local = i.get("local_subject") or ""
        to = i.get("to") or ""
        if not local and to:
            local = f"{to}.{subject}" if kind == "stream" else to
        local = local if isinstance(local, str) and local else subject
        if is_valid_subject(subject) and is_valid_subject(local):
            out.append(Import(kind, account, subject, local))
    return tuple(out)


def _authorized_imports(accounts: list[AccountSettings]) -> tuple[AccountSettings, ...]:
    """The accounts with only the imports their exporters allow: nats-server
    keeps an account whose JWT imports what it may not, and marks that import
    invalid (it carries nothing)."""
    out: list[AccountSettings] = []
    by_name = {a.name: a for a in accounts}
    for account in accounts:
        valid = tuple(
            imp
            for imp in account.imports
            if imp.account in by_name
            and any(
                exp.kind == imp.kind and is_subset_filter(imp.subject, exp.subject)
                for exp in by_name[imp.account].exports
            )
        )
        out.append(replace(account, imports=valid))
    return tuple(out)


def _unlimited(value: int) -> int:
    return value if value > 0 else -1


def _jwt_jetstream(claims: Claims) -> AccountLimits | None:
    """An account JWT's JetStream limits; None when it has no JetStream (both
    storage limits 0, as nats-server decides)."""
    limits = claims.nats.get("limits")
    if not isinstance(limits, dict):
        return None

    def num(name: str) -> int:
        value = limits.get(name, 0)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    if num("mem_storage") == 0 and num("disk_storage") == 0:
        return None
    return AccountLimits(
        max_memory=num("mem_storage"),
        max_storage=num("disk_storage"),
        # as nats-server takes them (INFO shows them so): streams and consumers
        # as given (0 limits nothing), the others -1 unless positive
        max_streams=num("streams"),
        max_consumers=num("consumer"),
        max_ack_pending=_unlimited(num("max_ack_pending")),
        memory_max_stream_bytes=_unlimited(num("mem_max_stream_bytes")),
        storage_max_stream_bytes=_unlimited(num("disk_max_stream_bytes")),
        max_bytes_required=bool(limits.get("max_bytes_required", False)),
    )
