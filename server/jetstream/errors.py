"""JetStream API errors as data: one table of `{code, err_code, description}`.

Descriptions and codes follow nats-server's `server/errors.json` (the oracle);
a handler raises `ApiError(ERR_NAME, **fields)` and the dispatcher turns it
into `{"type": ..., "error": {"code", "err_code", "description"}}`.
Descriptions may carry `{placeholders}` filled from the keyword arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    code: int
    err_code: int
    description: str


# The table. Names are nats-server's constant names without the "JS" prefix
# and "Err" suffix, e.g. JSStreamNotFoundErr -> STREAM_NOT_FOUND.
ERRORS: dict[str, ErrorSpec] = {
    "BAD_REQUEST": ErrorSpec(400, 10003, "bad request"),
    "NOT_ENABLED": ErrorSpec(503, 10076, "JetStream not enabled"),
    "STREAM_NOT_FOUND": ErrorSpec(404, 10059, "stream not found"),
    "CONSUMER_NOT_FOUND": ErrorSpec(404, 10014, "consumer not found"),
    "NO_MESSAGE_FOUND": ErrorSpec(404, 10037, "no message found"),
}


class ApiError(Exception):
    """An API failure that becomes an error response (never a server crash)."""

    def __init__(self, name: str, **fields: Any) -> None:
        spec = ERRORS[name]
        description = spec.description.format(**fields) if fields else spec.description
        super().__init__(description)
        self.name = name
        self.code = spec.code
        self.err_code = spec.err_code
        self.description = description

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "err_code": self.err_code, "description": self.description}
