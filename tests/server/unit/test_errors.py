"""The error table (jetstream/errors.py): nats-server's facts, as typed identifiers.

`data/nats_server_errors.json` holds, for every error this server knows, the
facts of nats-server's `server/errors.json` (v2.15.1): the Go constant, the
status code, the JetStream error code and the description. The enum must
carry exactly those, under the names derived from the constants by the
module's rule.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from jetstream_server.jetstream.errors import ApiError, Err

FACTS = json.loads((Path(__file__).parent / "data" / "nats_server_errors.json").read_text())


def member_name(constant: str) -> str:
    """JSStreamWrongLastMsgIDErrF -> STREAM_WRONG_LAST_MSG_ID (the rule in errors.py)."""
    stem = constant.removeprefix("JS")
    for suffix in ("ErrF", "Err", "F"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", stem).upper()


def test_every_identifier_carries_nats_server_facts() -> None:
    expected = {
        member_name(f["constant"]): (f["code"], f["error_code"], f["description"]) for f in FACTS
    }
    actual = {e.name: (e.code, e.err_code, e.description) for e in Err}
    assert len(FACTS) == 226
    assert actual == expected


def test_members_are_sorted_by_err_code_and_unique() -> None:
    codes = [e.err_code for e in Err]
    assert codes == sorted(codes) and len(codes) == len(set(codes))
    assert len(Err.__members__) == len(list(Err))  # no member is an alias of another


def test_name_rule_examples() -> None:
    assert member_name("JSStreamNotFoundErr") == "STREAM_NOT_FOUND"
    assert member_name("JSStreamWrongLastMsgIDErrF") == "STREAM_WRONG_LAST_MSG_ID"
    assert Err.STREAM_NOT_FOUND.value.err_code == 10059


def test_error_table_is_complete_and_formats() -> None:
    assert len(Err) > 200
    codes = [spec.err_code for spec in Err]
    assert len(codes) == len(set(codes))
    exc = ApiError(Err.STREAM_WRONG_LAST_SEQUENCE, seq=7)
    assert exc.to_json() == {"code": 400, "err_code": 10071, "description": "wrong last sequence: 7"}
    assert ApiError(Err.STREAM_RESTORE, other="x").description == "restore failed: {err}"
    assert json.dumps(ApiError(Err.BAD_REQUEST).to_json())
    assert exc.error is Err.STREAM_WRONG_LAST_SEQUENCE and str(exc) == "wrong last sequence: 7"
