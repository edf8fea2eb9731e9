"""WebSocket clients, as nats-server's ``websocket { ... }`` listener serves them.

The WebSocket protocol (the HTTP upgrade, frames, masking, ping/pong, close,
``permessage-deflate``) is wsproto's, sans-IO like our core; this module only
carries bytes: `WebSocketConnection` is the asyncio protocol of the socket, and
once the upgrade is accepted it hands a `ClientConnection` a `FramedTransport`
that wraps everything the client connection writes in binary frames. The NATS
protocol inside is unchanged: client ops may span or share frames, so each
frame's payload is fed to the session as it arrives.

Invariants:
- before the upgrade completes nothing reaches a session, and a client that
  does not complete it within `handshake_timeout` is closed;
- an upgrade that is not a valid WebSocket request gets ``400 Bad Request``;
- a compressed message never inflates past `max_inflated` bytes (a small
  compressed frame cannot make the server allocate without bound): such a
  client is closed with 1009 (message too big);
- TLS (``wss://``) is done by the listener, never as a NATS upgrade inside.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable
from typing import Any, cast

from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)
from wsproto.extensions import Extension, PerMessageDeflate
from wsproto.frame_protocol import CloseReason, FrameDecoder, FrameProtocol
from wsproto.utilities import RemoteProtocolError

from jetstream_server.app.connection import ClientConnection

log = logging.getLogger(__name__)


class BoundedDeflate(PerMessageDeflate):
    """``permessage-deflate`` that refuses a message inflating past `max_inflated`."""

    def __init__(self, max_inflated: int) -> None:
        super().__init__()
        self.max_inflated = max_inflated
        self._inflated = 0

    def frame_inbound_payload_data(
        self, proto: FrameDecoder | FrameProtocol, data: bytes
    ) -> bytes | CloseReason:
        if not self._inbound_compressed or not self._inbound_is_compressible:
            return data
        assert self._decompressor is not None
        room = self.max_inflated - self._inflated
        try:
            out = self._decompressor.decompress(bytes(data), room + 1)
        except zlib.error:
            return CloseReason.INVALID_FRAME_PAYLOAD_DATA
        self._inflated += len(out)
        if self._inflated > self.max_inflated or self._decompressor.unconsumed_tail:
            return CloseReason.MESSAGE_TOO_BIG
        return out

    def frame_inbound_complete(
        self, proto: FrameDecoder | FrameProtocol, fin: bool
    ) -> bytes | CloseReason | None:
        if fin:
            self._inflated = 0
        return super().frame_inbound_complete(proto, fin)


class FramedTransport(asyncio.Transport):
    """What a `ClientConnection` writes to, framed for the WebSocket."""

    def __init__(self, owner: WebSocketConnection) -> None:
        super().__init__()
        self._owner = owner
        self._raw = owner.raw

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._owner.send(BytesMessage(data=bytes(data)))

    def get_write_buffer_size(self) -> int:
        return self._raw.get_write_buffer_size()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._raw.get_extra_info(name, default)

    def is_closing(self) -> bool:
        return self._raw.is_closing()

    def pause_reading(self) -> None:
        self._raw.pause_reading()

    def resume_reading(self) -> None:
        self._raw.resume_reading()

    def close(self) -> None:
        self._owner.close(1000)

    def abort(self) -> None:
        self._raw.abort()


class WebSocketConnection(asyncio.Protocol):
    """One WebSocket client: the upgrade, then frames in and out of a
    `ClientConnection` made by `new_client` once the upgrade is accepted."""

    def __init__(
        self,
        new_client: Callable[[], ClientConnection],
        *,
        loop: asyncio.AbstractEventLoop,
        compression: bool,
        handshake_timeout_s: float,
        max_inflated: int,
    ) -> None:
        self._new_client = new_client
        self._loop = loop
        self._compression = compression
        self._handshake_timeout_s = handshake_timeout_s
        self._max_inflated = max_inflated
        self._ws = WSConnection(ConnectionType.SERVER)
        self.raw: asyncio.Transport = cast(asyncio.Transport, None)
        self.client: ClientConnection | None = None
        self._timer: asyncio.TimerHandle | None = None

    # -- asyncio.Protocol --------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.raw = cast(asyncio.Transport, transport)
        self._timer = self._loop.call_later(self._handshake_timeout_s, self._handshake_expired)

    def data_received(self, data: bytes) -> None:
        try:
            self._ws.receive_data(data)
            for event in self._ws.events():
                self._on_event(event)
        except RemoteProtocolError as exc:
            log.debug("websocket protocol error: %s", exc)
            if self._ws.state is ConnectionState.CONNECTING:
                self._reject(exc.event_hint)
            else:
                self.raw.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        if self.client is not None:
            self.client.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.client is not None:
            self.client.pause_writing()

    def resume_writing(self) -> None:
        if self.client is not None:
            self.client.resume_writing()

    # -- events ------------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        if isinstance(event, Request):
            self._accept()
        elif isinstance(event, BytesMessage | TextMessage):
            if self.client is not None:
                data = event.data
                self.client.data_received(data.encode() if isinstance(data, str) else bytes(data))
        elif isinstance(event, Ping):
            self.send(event.response())
        elif isinstance(event, CloseConnection):
            if self._ws.state is ConnectionState.REMOTE_CLOSING:
                self.send(event.response())
                self.raw.close()
            else:
                # wsproto found the client's frames invalid (or too big): say why
                log.debug("websocket closed: %s (%d)", event.reason, event.code)
                self.close(event.code)

    def _accept(self) -> None:
        self._cancel_timer()
        extensions: list[Extension] = (
            [BoundedDeflate(self._max_inflated)] if self._compression else []
        )
        self.raw.write(self._ws.send(AcceptConnection(extensions=extensions)))
        self.client = self._new_client()
        self.client.connection_made(FramedTransport(self))

    def _reject(self, hint: Event | None) -> None:
        self._cancel_timer()
        if isinstance(hint, RejectConnection):
            self.raw.write(self._ws.send(hint))
        else:
            self.raw.write(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
        self.raw.close()

    def _handshake_expired(self) -> None:
        self._timer = None
        if self.client is None:
            log.debug("websocket handshake timeout")
            self.raw.abort()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # -- output ------------------------------------------------------------------
    def send(self, event: Event) -> None:
        if self._ws.state is not ConnectionState.OPEN and not isinstance(event, CloseConnection):
            return
        if self.raw.is_closing():
            return
        self.raw.write(self._ws.send(event))

    def close(self, code: int) -> None:
        """Close from the server's side: a close frame, then the socket."""
        if self._ws.state is ConnectionState.OPEN and not self.raw.is_closing():
            self.raw.write(self._ws.send(CloseConnection(code=code)))
        self.raw.close()
