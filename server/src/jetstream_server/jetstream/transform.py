"""Subject transforms: nats-server's mapping functions, one implementation.

A `SubjectTransform(src, dest)` maps a literal subject matching `src` to a
new subject built from `dest`, whose tokens are literals, `>` (the rest of
the subject) or mapping functions over the wildcard tokens of `src`:
`$n` / `{{wildcard(n)}}`, `{{partition(count, n, ...)}}` (FNV-1a 32 of the
tokens, so partitions agree with nats-server), `{{split(n, sep)}}`,
`{{splitFromLeft(n, pos)}}`, `{{splitFromRight(n, pos)}}`,
`{{sliceFromLeft(n, size)}}`, `{{sliceFromRight(n, size)}}`,
`{{left(n, len)}}`, `{{right(n, len)}}`, `{{random(count)}}`.

Used for a stream's `subject_transform`, `republish` and the
`subject_transforms` of mirrors and sources. Parsing, the quirks of its
argument handling and the error texts follow nats-server's
server/subject_transform.go and `ValidateMapping` (server/sublist.go):
failures raise `TransformError` whose text is nats-server's, so callers wrap
it in the API error of their context (stream, source or mirror transform).

Pure functions and frozen data: no I/O, no state beyond the parsed form.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from jetstream_server.core.subjects import filter_matches, is_valid_publish_subject

FWC = ">"
PWC = "*"

# The function kinds of a destination token.
NONE, WILDCARD, PARTITION, SPLIT_LEFT, SPLIT_RIGHT, SLICE_LEFT, SLICE_RIGHT, SPLIT, LEFT, RIGHT, RANDOM = range(11)

_INVALID = "invalid mapping destination"
ERR_INVALID_SUBJECT = f"{_INVALID}: invalid transform"
ERR_NOT_ALL_WILDCARDS = f"{_INVALID}: not using all of the token wildcard(s)"
ERR_UNKNOWN_FUNCTION = f"{_INVALID}: unknown function"
ERR_INDEX_OUT_OF_RANGE = f"{_INVALID}: wildcard index out of range"
ERR_NOT_ENOUGH_ARGS = f"{_INVALID}: not enough arguments passed to the function"
ERR_INVALID_ARG = f"{_INVALID}: function argument is invalid or in the wrong format"
ERR_TOO_MANY_ARGS = f"{_INVALID}: too many arguments passed to the function"
ERR_BAD_SUBJECT = "invalid subject"


def _fn(name: str) -> re.Pattern[str]:
    # nats-server's patterns: first letter and camel humps in either case
    pattern = "".join(f"[{c.lower()}{c.upper()}]" if c.isupper() or i == 0 else c for i, c in enumerate(name))
    return re.compile(r"{{\s*" + pattern + r"\s*\((.*)\)\s*}}")


_WILDCARD = _fn("wildcard")
_PARTITION = _fn("partition")
_SPLIT_FROM_LEFT = _fn("splitFromLeft")
_SPLIT_FROM_RIGHT = _fn("splitFromRight")
_SLICE_FROM_LEFT = _fn("sliceFromLeft")
_SLICE_FROM_RIGHT = _fn("sliceFromRight")
_SPLIT = _fn("split")
_LEFT = _fn("left")
_RIGHT = _fn("right")
_RANDOM = _fn("random")
_COMMA = re.compile(r",\s*")
_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT32_MAX = (1 << 31) - 1
_WHITESPACE = frozenset("\t\n\f\r ")


class TransformError(ValueError):
    """A transform nats-server would refuse; the text is nats-server's."""


def _dest_error(token: str, err: str) -> TransformError:
    return TransformError(f"{err} in {token}" if token else err)


def _atoi(text: str) -> int | None:
    """Go's strconv.Atoi after strings.Trim(x, " "): an optional sign and digits."""
    text = text.strip(" ")
    return int(text) if _GO_INT.fullmatch(text) else None


def _args(pattern: re.Pattern[str], token: str) -> list[str] | None:
    found = pattern.search(token)
    return None if found is None else _COMMA.split(found.group(1))


@dataclass(frozen=True, slots=True)
class _Placeholder:
    kind: int
    indexes: tuple[int, ...] = ()  # wildcard numbers (1-based) as written
    number: int = -1
    text: str = ""


def _index_int_args(token: str, args: list[str], kind: int) -> _Placeholder:
    if len(args) < 2:
        raise _dest_error(token, ERR_NOT_ENOUGH_ARGS)
    if len(args) > 2:
        raise _dest_error(token, ERR_TOO_MANY_ARGS)
    index = _atoi(args[0])
    number = _atoi(args[1])
    if index is None or number is None or not -(1 << 31) <= number <= _INT32_MAX:
        raise _dest_error(token, ERR_INVALID_ARG)
    return _Placeholder(kind, (index,), number)


def _placeholder(token: str) -> _Placeholder:
    """What one destination token asks for (nats-server's indexPlaceHolders)."""
    n = len(token)
    if n <= 1:
        return _Placeholder(NONE)
    if token[0] == "$":
        index = _atoi(token[1:]) if token[1:] == token[1:].strip(" ") else None
        # other things rely on tokens starting with $: not a placeholder then
        return _Placeholder(NONE) if index is None else _Placeholder(WILDCARD, (index,))
    if not (n > 4 and token.startswith("{{") and token.endswith("}}")):
        return _Placeholder(NONE)
    args = _args(_WILDCARD, token)
    if args is not None:
        if len(args) == 1 and args[0] == "":
            raise _dest_error(token, ERR_NOT_ENOUGH_ARGS)
        if len(args) > 1:
            raise _dest_error(token, ERR_TOO_MANY_ARGS)
        index = _atoi(args[0])
        if index is None:
            raise _dest_error(token, ERR_INVALID_ARG)
        return _Placeholder(WILDCARD, (index,))
    args = _args(_PARTITION, token)
    if args is not None:
        count = _atoi(args[0])
        if count is None or count > _INT32_MAX:
            raise _dest_error(token, ERR_INVALID_ARG)
        indexes = []
        for arg in args[1:]:
            index = _atoi(arg)
            if index is None:
                raise _dest_error(token, ERR_INVALID_ARG)
            indexes.append(index)
        return _Placeholder(PARTITION, tuple(indexes), _int32(count))
    for pattern, kind in (
        (_SPLIT_FROM_LEFT, SPLIT_LEFT),
        (_SPLIT_FROM_RIGHT, SPLIT_RIGHT),
        (_SLICE_FROM_LEFT, SLICE_LEFT),
        (_SLICE_FROM_RIGHT, SLICE_RIGHT),
        (_RIGHT, RIGHT),
        (_LEFT, LEFT),
    ):
        args = _args(pattern, token)
        if args is not None:
            return _index_int_args(token, args, kind)
    args = _args(_SPLIT, token)
    if args is not None:
        if len(args) < 2:
            raise _dest_error(token, ERR_NOT_ENOUGH_ARGS)
        if len(args) > 2:
            raise _dest_error(token, ERR_TOO_MANY_ARGS)
        index = _atoi(args[0])
        if index is None or " " in args[1] or "." in args[1]:
            raise _dest_error(token, ERR_INVALID_ARG)
        return _Placeholder(SPLIT, (index,), -1, args[1])
    args = _args(_RANDOM, token)
    if args is not None:
        if len(args) != 1:
            raise _dest_error(token, ERR_NOT_ENOUGH_ARGS)
        count = _atoi(args[0])
        if count is None or count > _INT32_MAX:
            raise _dest_error(token, ERR_INVALID_ARG)
        return _Placeholder(RANDOM, (), _int32(count))
    raise _dest_error(token, ERR_UNKNOWN_FUNCTION)


def _int32(value: int) -> int:
    """Go's int32(x) conversion (wraps)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value > _INT32_MAX else value


def _subject_info(subject: str) -> tuple[bool, list[str], int, bool]:
    """(valid, tokens, number of `*`, has `>`) as nats-server's subjectInfo."""
    if not subject:
        return False, [], 0, False
    tokens = subject.split(".")
    pwcs = 0
    fwc = False
    for token in tokens:
        if not token or fwc:
            return False, [], 0, False
        if token == FWC:
            fwc = True
        elif token == PWC:
            pwcs += 1
    return True, tokens, pwcs, fwc


def fnv1a32(data: bytes) -> int:
    """FNV-1a, 32 bits (Go's hash/fnv New32a), the hash of `{{partition}}`."""
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


@dataclass(frozen=True, slots=True)
class _DestToken:
    literal: str
    kind: int
    positions: tuple[int, ...]  # source token positions (0-based)
    number: int
    text: str


class SubjectTransform:
    """A parsed `src` -> `dest` mapping (see module docstring)."""

    __slots__ = ("src", "dest", "_src_tokens", "_dest", "_tail")

    def __init__(self, src: str, dest: str) -> None:
        """Parse; raises `TransformError` as nats-server's NewSubjectTransform."""
        src = src or FWC
        self.src = src
        self.dest = dest
        ok_src, stokens, npwcs, src_fwc = _subject_info(src)
        ok_dest, dtokens, dest_pwcs, dest_fwc = _subject_info(dest)
        if not ok_src or not ok_dest or dest_pwcs > 0 or src_fwc != dest_fwc:
            raise TransformError(ERR_BAD_SUBJECT)
        self._src_tokens = stokens
        parsed: list[_DestToken] = []
        if npwcs > 0 or src_fwc:
            # wildcard number (1-based) -> its token position in src
            positions = {n: i for n, i in enumerate((i for i, t in enumerate(stokens) if t == PWC), 1)}
            for token in dtokens:
                ph = _placeholder(token)
                if ph.kind in (NONE, RANDOM):
                    parsed.append(_DestToken(token, ph.kind, (), ph.number, ""))
                    continue
                for index in ph.indexes:
                    if index > npwcs:
                        raise _dest_error(f"{token}: [{index}]", ERR_INDEX_OUT_OF_RANGE)
                # like nats-server, an index below 1 names the first token
                where = tuple(positions.get(index, 0) for index in ph.indexes)
                parsed.append(_DestToken(token, ph.kind, where, ph.number, ph.text))
        else:
            for token in dtokens:
                ph = _placeholder(token)
                if ph.kind in (NONE, RANDOM, PARTITION):
                    parsed.append(_DestToken(token, ph.kind, (), ph.number, ""))
                else:
                    raise _dest_error(token, ERR_INDEX_OUT_OF_RANGE)
        self._dest = tuple(parsed)
        self._tail = dtokens[-1] == FWC

    def __repr__(self) -> str:
        return f"SubjectTransform({self.src!r}, {self.dest!r})"

    def match(self, subject: str) -> str | None:
        """The mapped subject, or None when `subject` is not a literal matching `src`."""
        if self.src == FWC and self.dest in (FWC, ""):
            return subject
        if not is_valid_publish_subject(subject):
            return None
        if self.src != FWC and not filter_matches(self.src, subject):
            return None
        return self.transform(subject)

    def transform(self, subject: str) -> str:
        """Map a subject already known to match `src`."""
        tokens = subject.split(".")
        out: list[str] = []
        for dt in self._dest:
            kind = dt.kind
            if kind == NONE:
                if dt.literal == FWC:
                    break
                out.append(dt.literal)
            elif kind == WILDCARD:
                pos = dt.positions[0] if dt.positions else -1
                out.append(tokens[pos] if 0 <= pos < len(tokens) else "")
            elif kind == PARTITION:
                key = "".join(tokens[p] for p in dt.positions) if dt.positions else ".".join(tokens)
                buckets = dt.number & 0xFFFFFFFF  # Go's uint32(int(n))
                out.append("0" if dt.number == 0 else str(fnv1a32(key.encode()) % buckets))
            elif kind == RANDOM:
                out.append("0" if dt.number == 0 else str(random.getrandbits(31) % dt.number))
            else:
                out.append(_token_function(kind, tokens[dt.positions[0]], dt.number, dt.text))
        mapped = ".".join(out)
        if self._tail:
            rest = tokens[len(self._src_tokens) - 1:]
            mapped = f"{mapped}.{'.'.join(rest)}" if out else ".".join(rest)
        return mapped


def _token_function(kind: int, token: str, number: int, text: str) -> str:
    size = len(token)
    if kind == SPLIT:
        parts = token.split(text)
        pieces: list[str] = []
        for j, part in enumerate(parts):
            if part:
                pieces.append(part)
            if j < len(parts) - 1 and parts[j + 1] and not (j == 0 and not part):
                pieces.append(".")
        return "".join(pieces)
    if not 0 < number < size:  # too small to cut at the requested place: kept whole
        return token
    if kind == SPLIT_LEFT:
        return f"{token[:number]}.{token[number:]}"
    if kind == SPLIT_RIGHT:
        return f"{token[:size - number]}.{token[size - number:]}"
    if kind == SLICE_LEFT:
        cuts = [token[i:i + number] for i in range(0, size, number)]
        return ".".join(cuts)
    if kind == SLICE_RIGHT:
        rem = size % number
        cuts = ([token[:rem]] if rem else []) + [token[i:i + number] for i in range(rem, size, number)]
        return ".".join(cuts)
    if kind == LEFT:
        return token[:number]
    return token[size - number:]  # RIGHT


def validate_mapping(src: str, dest: str) -> None:
    """nats-server's ValidateMapping: raise `TransformError` for a destination it refuses."""
    if not dest:
        return
    fwc = False
    for token in dest.split("."):
        n = len(token)
        if n == 0 or fwc:
            raise _dest_error(token, ERR_INVALID_SUBJECT)
        if n > 4 and token.startswith("{{") and token.endswith("}}"):
            if not any(
                p.search(token)
                for p in (_PARTITION, _WILDCARD, _SPLIT_FROM_LEFT, _SPLIT_FROM_RIGHT,
                          _SLICE_FROM_LEFT, _SLICE_FROM_RIGHT, _SPLIT, _LEFT, _RIGHT, _RANDOM)
            ):
                raise _dest_error(token, ERR_UNKNOWN_FUNCTION)
            continue
        if token == FWC:
            fwc = True
        elif any(c in _WHITESPACE for c in token):
            raise TransformError(ERR_INVALID_SUBJECT)
    SubjectTransform(src, dest)


def first_match(transforms: tuple[SubjectTransform | None, ...], subject: str) -> str:
    """The subject mapped by the first transform that matches it (unchanged if none)."""
    for tr in transforms:
        if tr is not None:
            mapped = tr.match(subject)
            if mapped is not None:
                return mapped
    return subject
