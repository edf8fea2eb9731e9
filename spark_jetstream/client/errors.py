"""Errors of the lean client, named after what the server says.

- `ErrorCode`: the JetStream API `err_code`s the connector acts on, with the
  names nats.py's `ErrorCode` gives them (`STREAM_NOT_FOUND`,
  `CONSUMER_NOT_FOUND`, `MESSAGE_NOT_FOUND`) and, for the codes nats.py does
  not name, after nats-server's identifiers (`server/errors.json`:
  JSConsumerWQRequiresExplicitAckErr is `CONSUMER_WQ_REQUIRES_EXPLICIT_ACK`).
  A JetStream API error reply is `{"error": {"code": <http-like>, "err_code":
  <one of these>, ...}}`; `JetStreamApiError.err_code` compares equal to the
  member.
- `Status`: the status codes of NATS header-only messages (`NATS/1.0 503`)
  the client reads: no responders, pull request ends, flow control.
- `TRANSIENT_API_ERRORS`: API error replies that say "not now" rather than
  "no": a cluster without a leader (`JetStream system temporarily
  unavailable`, 503), a stream or consumer offline while it catches up. The
  client retries these (retry.py); any other error reply is final.
- The exception family: `NatsError` for anything the protocol or the server
  refuses; subclasses for timeouts, no responders, API errors, a lost
  connection and the server's `-ERR` lines. Which of them are worth a retry
  is decided in one place, `retry.is_transient`.

Members are only added for codes the connector checks; the full table lives
in the server.
"""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    """JetStream API error codes (`err_code`) the connector checks."""

    CONSUMER_NOT_FOUND = 10014  # JSConsumerNotFoundErr
    MESSAGE_NOT_FOUND = 10037  # JSNoMessageFoundErr
    STREAM_NOT_FOUND = 10059  # JSStreamNotFoundErr
    # A work-queue stream refuses the connector's ack-none read consumer:
    CONSUMER_PULL_REQUIRES_ACK = 10084  # JSConsumerPullRequiresAckErr
    CONSUMER_WQ_REQUIRES_EXPLICIT_ACK = 10098  # JSConsumerWQRequiresExplicitAckErr
    CONSUMER_WQ_MULTIPLE_UNFILTERED = 10099  # JSConsumerWQMultipleUnfilteredErr
    CONSUMER_WQ_CONSUMER_NOT_UNIQUE = 10100  # JSConsumerWQConsumerNotUniqueErr
    CONSUMER_WQ_CONSUMER_NOT_DELIVER_ALL = 10101  # JSConsumerWQConsumerNotDeliverAllErr
    # A pub ack while another copy of the message (same `Nats-Msg-Id`, e.g. one re-sent after
    # silence) is still being replicated by a nats-server cluster: proposed, not yet stored. Not
    # a failure: a later copy is acked as stored or as a duplicate of that one.
    DUPLICATE_MESSAGE_IN_PROCESS = 10158  # JSStreamDuplicateMessageConflict (409)


# Refusals of a read consumer on a work-queue stream: read by message get instead.
WORKQUEUE_CONSUMER_ERRORS = frozenset(
    {
        ErrorCode.CONSUMER_PULL_REQUIRES_ACK,
        ErrorCode.CONSUMER_WQ_REQUIRES_EXPLICIT_ACK,
        ErrorCode.CONSUMER_WQ_MULTIPLE_UNFILTERED,
        ErrorCode.CONSUMER_WQ_CONSUMER_NOT_UNIQUE,
        ErrorCode.CONSUMER_WQ_CONSUMER_NOT_DELIVER_ALL,
    }
)


class Status(IntEnum):
    """Status codes of NATS header-only messages (`NATS/1.0 <code> <description>`)."""

    CONTROL = 100  # idle heartbeat or flow control request
    NO_MESSAGES = 404  # a no-wait pull request found nothing
    REQUEST_TIMEOUT = 408  # a pull request expired (or: requests pending)
    CONFLICT = 409  # a pull request ended (batch completed, max bytes, ...)
    NO_RESPONDERS = 503  # nobody subscribes to the subject (no stream, no JetStream)


# "Not now" answers of the JetStream API (nats-server's errors.json): worth a retry.
TRANSIENT_API_ERRORS = frozenset(
    {
        10004,  # JSClusterIncompleteErr (503): incomplete results
        10007,  # JSClusterNotAssignedErr (500): not assigned to this server (yet)
        10008,  # JSClusterNotAvailErr (503): JetStream system temporarily unavailable
        10009,  # JSClusterNotLeaderErr (500): cluster can not handle request (no leader)
        10118,  # JSStreamOfflineErr (500): stream is offline (recovering)
        10119,  # JSConsumerOfflineErr (500): consumer is offline (recovering)
    }
)

FIRST_ERROR_STATUS = 400  # request replies with a status at or above this are errors
# The `code` of a JetStream error reply (a pub ack) while JetStream cannot take the message
# yet, e.g. a restarting server still loading its streams: worth a retry.
API_UNAVAILABLE = 503


class NatsError(Exception):
    """A NATS protocol, connection or server error."""


class NatsTimeoutError(NatsError, TimeoutError):
    """No answer within the time allowed."""


class NoRespondersError(NatsError):
    """A request went to a subject nobody serves (status 503)."""


class JetStreamUnavailableError(NoRespondersError):
    """The JetStream API kept answering "no responders" (503) until the retries ran out:
    JetStream is off, the server is starting, or a cluster is electing a leader."""


class ConnectionLostError(NatsError):
    """The connection broke (closed by the server, reset, a failed write); reconnecting may help."""


class ServerError(NatsError):
    """The server's `-ERR` line (authorization, permissions, stale connection, ...)."""


class ReadInterruptedError(NatsError):
    """A range read's consumer went away mid-read (no responders, consumer deleted): resumable."""


class JetStreamApiError(NatsError):
    """An error reply from the JetStream API (`{"error": {...}}`)."""

    def __init__(self, subject: str, code: int, err_code: int, description: str) -> None:
        super().__init__(f"{subject}: {description} (code {code}, err_code {err_code})")
        self.subject = subject
        self.code = code
        self.err_code = err_code
        self.description = description

