"""TLS for client connections: the server-side `ssl.SSLContext` from settings.

nats-server style: INFO goes out in clear text with ``tls_required``, then the
client starts the handshake. With `verify`, a client certificate signed by
`ca_file` is required.
"""

from __future__ import annotations

import ssl

from jetstream_server.config import ConfigError, TlsSettings


def make_server_context(settings: TlsSettings) -> ssl.SSLContext:
    if not settings.cert_file or not settings.key_file:
        raise ConfigError("tls: a certificate (--tlscert) and a key (--tlskey) are required")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(settings.cert_file, settings.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"tls: cannot load certificate {settings.cert_file!r} / key {settings.key_file!r}: {exc}"
        ) from None
    if settings.ca_file:
        try:
            ctx.load_verify_locations(settings.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"tls: cannot load CA file {settings.ca_file!r}: {exc}") from None
    if settings.verify:
        if not settings.ca_file:
            raise ConfigError("tls: --tlsverify needs a CA file (--tlscacert)")
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx
