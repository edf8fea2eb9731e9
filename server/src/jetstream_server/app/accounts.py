"""The accounts of a running server: one broker and its services per account.

nats-server keeps a separate subject space (sublist) and a separate
JetStream per account; so does this server, by construction: every account
gets its own `Broker` and its own services, and a client session works on
the broker of its identity's account (core/session.py). Streams of account
A are stored under ``<store_dir>/jetstream/A/streams`` and are invisible to
account B, whose `$JS.API` goes to another engine.

Which accounts exist: the global account ``$G`` (always), every account of
the ``accounts`` block (or of the operator's ``resolver_preload``), and the
system account (``system_account``, else ``$SYS`` unless
``no_system_account``). JetStream runs in the accounts
`ServerConfig.account_jetstream()` names, with their limits; the others get
`NoJetStream`, which answers API requests with 10039 "JetStream not enabled
for account", except an operator's accounts (JWTs) without JetStream, whose API
requests nobody answers (as on nats-server: they get no responders). Every
engine gets the same `EngineSettings` (`engine_settings`: the ``jetstream``
block with the store limits the server computed, `max_pending` and the
server's name); when several accounts have JetStream, their `StoreLimits`
know each other (`peers`), so the server's store limits hold for all of them
together.

Imports (core/imports.py) are services of the importing account: a
`StreamLink` or `ServiceLink` between the two accounts' brokers, started
after the accounts' own services and closed before them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from jetstream_server.config import GLOBAL_ACCOUNT, ServerConfig
from jetstream_server.core.account_limits import AccountLimits
from jetstream_server.core.clock import Clock
from jetstream_server.core.imports import ServiceLink, StreamLink
from jetstream_server.core.router import Service
from jetstream_server.core.routing import Broker
from jetstream_server.core.subjects import is_subset_filter
from jetstream_server.jetstream.api.disabled import NoJetStream
from jetstream_server.jetstream.engine import JetStream
from jetstream_server.jetstream.settings import EngineSettings, ServerLimits


@dataclass(slots=True)
class Account:
    """One account at run time: its broker, its services, its JetStream (or None)."""

    name: str
    broker: Broker
    services: list[Service] = field(default_factory=list)
    jetstream: JetStream | None = None
    is_system: bool = False
    updated: float = 0.0
    name_tag: str = ""  # an account JWT's name (operator mode)


def account_names(config: ServerConfig) -> list[str]:
    """Every account the server keeps, ``$G`` first."""
    names = [GLOBAL_ACCOUNT]
    system = config.system_account_name
    if system and system not in names:
        names.append(system)
    for account in config.accounts:
        if account.name not in names:
            names.append(account.name)
    return names


def engine_settings(config: ServerConfig, server_name: str = "") -> EngineSettings:
    """What every account's JetStream engine reads of `config` (its ``jetstream``
    block with the store limits already computed, app/services.py). A relative
    store directory is made absolute here, at start, so that the process (or an
    embedding notebook) changing its working directory later moves nothing."""
    js = config.jetstream
    return EngineSettings(
        store_dir=os.path.abspath(js.store_dir) if js.store_dir else js.store_dir,
        domain=js.domain or "",
        sync_always=js.sync_always,
        sync_interval_s=js.sync_interval_s,
        max_memory_store=js.max_memory_store,
        max_file_store=js.max_file_store,
        limits=ServerLimits(
            max_ack_pending=js.limits.max_ack_pending,
            max_request_batch=js.limits.max_request_batch,
            duplicate_window_ns=js.limits.duplicate_window_ns,
        ),
        max_pending=config.max_pending,  # direct-get batches stop there, as on nats-server
        server_name=server_name,
    )


def account_services(
    config: ServerConfig,
    clock: Clock,
    name: str,
    limits: AccountLimits | None,
    settings: EngineSettings,
) -> tuple[list[Service], JetStream | None]:
    """The services of account `name`: JetStream with `limits`, or the 10039
    responder; none at all when the server runs without JetStream (its API
    requests then get no responders, as on nats-server)."""
    if not config.jetstream.enabled:
        return [], None
    system = name == config.system_account_name
    if limits is None:
        if config.auth.operator is not None and not system:
            return [], None  # nats-server imports no JetStream API into such an account
        return [NoJetStream(system=system)], None
    engine = JetStream(settings, clock, account=name, account_limits=limits)
    return [engine], engine


def _exports_of(config: ServerConfig, name: str) -> tuple[Any, ...]:
    return next((a.exports for a in config.accounts if a.name == name), ())


def build_accounts(
    config: ServerConfig,
    clock: Clock,
    global_broker: Broker,
    global_services: list[Service] | None,
    server_name: str = "",
) -> dict[str, Account]:
    """The accounts of `config`; `global_services` (when given) replace the
    global account's built services (tests plug in their own)."""
    with_js = config.account_jetstream()
    system = config.system_account_name
    js_settings = engine_settings(config, server_name)
    accounts: dict[str, Account] = {}
    for name in account_names(config):
        broker = global_broker if name == GLOBAL_ACCOUNT else Broker()
        if name == GLOBAL_ACCOUNT and global_services is not None:
            services: list[Service] = global_services
            engine = next((s for s in services if isinstance(s, JetStream)), None)
        else:
            services, engine = account_services(config, clock, name, with_js.get(name), js_settings)
        tag = next((a.name_tag for a in config.accounts if a.name == name), "")
        accounts[name] = Account(
            name, broker, services, engine, is_system=name == system, name_tag=tag
        )
    for settings in config.accounts:
        importer = accounts[settings.name]
        for imp in settings.imports:
            exporter = accounts[imp.account]
            link: Service
            if imp.kind == "stream":
                link = StreamLink(exporter.broker, importer.broker, imp.subject, imp.local)
            else:
                export = next(
                    (
                        e
                        for e in _exports_of(config, imp.account)
                        if e.kind == "service" and is_subset_filter(imp.subject, e.subject)
                    ),
                    None,
                )
                singleton = export is None or export.response_type == "singleton"
                link = ServiceLink(
                    exporter.broker, importer.broker, imp.subject, imp.local, clock.now_ns,
                    singleton=singleton,
                )
            importer.services.append(link)
    limits = [acc.jetstream.store_limits for acc in accounts.values() if acc.jetstream is not None]
    if len(limits) > 1:
        for each in limits:
            each.peers = limits
    return accounts
