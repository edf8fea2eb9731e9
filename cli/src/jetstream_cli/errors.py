"""The errors the CLI reports as one line (`jetstream: error: ...`) and a non-zero exit.

`CliError` carries a message for the user; `ApiError` is a JetStream API error answer
(`{"error": {"code", "err_code", "description"}}`), printed as natscli prints it:
`stream not found (10059)`. Nothing else is caught at the top: an exception of another
type is a bug and shows its traceback.
"""

from __future__ import annotations


class CliError(Exception):
    """A failure the user can act on; `str()` is the one-line message."""


class ApiError(CliError):
    """A JetStream API error answer."""

    def __init__(self, code: int, err_code: int, description: str) -> None:
        super().__init__(f"{description} ({err_code})")
        self.code = code
        self.err_code = err_code
        self.description = description


STREAM_NOT_FOUND = 10059
CONSUMER_NOT_FOUND = 10014
NO_MESSAGE_FOUND = 10037
