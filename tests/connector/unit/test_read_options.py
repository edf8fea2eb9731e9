"""Read options (options/read.py): parsing, defaults, and errors that name the option (no Spark, no server)."""

from __future__ import annotations

import pickle

import pytest

from spark_jetstream.options import OptionError, ReadOptions
from spark_jetstream.options.table import OPTIONS, Scope, read_table

READ_OPTIONS = [o for o in OPTIONS if o.applies & Scope.READ]


def parse(streaming: bool = True, **opts: str) -> ReadOptions:
    return ReadOptions.from_options({"stream": "S", **opts}, streaming=streaming)


def test_defaults() -> None:
    o = parse()
    assert o.stream == "S"
    assert o.connection.servers == ("nats://127.0.0.1:4222",)
    assert o.subjects == ()
    assert o.starting_offsets == "earliest" and o.ending_offsets == "latest"
    assert o.fail_on_data_loss is True and o.include_headers is True
    assert o.min_partitions is None and o.max_messages_per_partition == 500_000
    assert o.max_trigger_delay_s == 900.0
    assert pickle.loads(pickle.dumps(o)) == o


def test_keys_are_case_insensitive_and_values_parsed() -> None:
    o = ReadOptions.from_options(
        {
            "STREAM": "ORDERS",
            "Subjects": "a.*, b.>",
            "startingoffsets": "42",
            "MAXMESSAGESPERTRIGGER": "100",
            "maxOffsetsPerTrigger": "50",
            "maxBytesPerTrigger": "4096",
            "minMessagesPerTrigger": "10",
            "maxTriggerDelay": "500ms",
            "failOnDataLoss": "False",
            "includeHeaders": "false",
            "servers": "nats://a:1, nats://b:2",
            "durable": "app",
        },
        streaming=True,
    )
    assert o.stream == "ORDERS"
    assert o.subjects == ("a.*", "b.>")
    assert o.starting_offsets == 42
    assert o.max_messages_per_trigger == 50  # the smaller of the two names wins
    assert o.max_bytes_per_trigger == 4096
    assert o.min_messages_per_trigger == 10
    assert o.max_trigger_delay_s == pytest.approx(0.5)
    assert o.fail_on_data_loss is False and o.include_headers is False
    assert o.connection.servers == ("nats://a:1", "nats://b:2")
    assert o.durable == "app"


@pytest.mark.parametrize(
    ("raw", "expected_ms"),
    [("1700000000000", 1700000000000), ("2023-11-14T22:13:20Z", 1700000000000), ("2023-11-14T22:13:20", 1700000000000)],
)
def test_timestamps(raw: str, expected_ms: int) -> None:
    assert parse(startingTimestamp=raw).starting_timestamp_ms == expected_ms
    assert parse(False, endingTimestamp=raw).ending_timestamp_ms == expected_ms


@pytest.mark.parametrize(
    ("opts", "streaming", "message"),
    [
        ({"stream": ""}, True, "option stream is required"),
        ({"stream": "a.b"}, True, "option stream: invalid stream name"),
        ({"bogus": "1"}, True, "unknown option 'bogus'"),
        ({"startingOffsets": "first"}, True, "option startingOffsets: expected earliest or latest"),
        ({"startingOffsets": "0"}, True, "option startingOffsets: a stream sequence starts at 1"),
        ({"endingOffsets": "5"}, True, "option endingOffsets applies only to batch reads"),
        ({"maxMessagesPerTrigger": "5"}, False, "option maxMessagesPerTrigger applies only to streaming reads"),
        ({"durable": "d"}, False, "option durable applies only to streaming reads"),
        ({"maxMessagesPerTrigger": "0"}, True, "option maxMessagesPerTrigger: must be >= 1"),
        ({"maxBytesPerTrigger": "lots"}, True, "option maxBytesPerTrigger: expected an integer"),
        ({"minPartitions": "-1"}, True, "option minPartitions: must be >= 1"),
        ({"maxTriggerDelay": "5s"}, True, "option maxTriggerDelay needs minMessagesPerTrigger"),
        ({"minMessagesPerTrigger": "1", "maxTriggerDelay": "soon"}, True, "option maxTriggerDelay: expected a duration"),
        ({"minMessagesPerTrigger": "9", "maxMessagesPerTrigger": "3"}, True, "minMessagesPerTrigger \\(9\\) is larger"),
        ({"failOnDataLoss": "perhaps"}, True, "option failOnDataLoss: expected true or false"),
        ({"subjects": "a..b"}, True, "option subjects: invalid subject 'a..b'"),
        ({"subjects": "a.>.b"}, True, "option subjects: invalid subject"),
        ({"subjects": "a,a"}, True, "option subjects: duplicate subject"),
        ({"durable": "x.y"}, True, "option durable: invalid consumer name"),
        ({"startingOffsets": "3", "startingTimestamp": "5"}, True, "startingOffsets and startingTimestamp exclude"),
        ({"startingTimestamp": "yesterday"}, True, "option startingTimestamp: expected milliseconds"),
        ({"startingOffsets": "9", "endingOffsets": "3"}, False, "option endingOffsets \\(3\\) is before"),
        ({"servers": "localhost:4222"}, True, "option servers: 'localhost:4222' is not a URL"),
        ({"user": "u"}, True, "options user and password must be given together"),
        ({"tlsCaFile": "/nonexistent/ca.pem"}, True, "option tlsCaFile: file not found"),
        ({"connectTimeout": "x"}, True, "option connectTimeout: expected a number"),
        ({"stream": "A,b.c"}, True, "option stream: invalid stream name 'b.c'"),
        ({"stream": "A, A"}, True, "option stream: duplicate stream"),
        ({"maxRecordsPerBatch": "5"}, True, "option maxRecordsPerBatch was removed .*use maxMessagesPerTrigger"),
        ({"MAXBYTESPERBATCH": "5"}, True, "option maxBytesPerBatch was removed .*use maxBytesPerTrigger"),
        ({"minMessagesPerTrigger": "2", "minOffsetsPerTrigger": "3"}, True, "minOffsetsPerTrigger exclude each other"),
        ({"startingOffsetsByTimestampStrategy": "first"}, True, "expected error or latest"),
    ],
)
def test_bad_options_name_the_option(opts: dict[str, str], streaming: bool, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        ReadOptions.from_options({"stream": "S", **opts}, streaming=streaming)


def test_one_table_documents_every_option() -> None:
    names = [spec.name for spec in READ_OPTIONS]
    assert len(names) == len(set(n.lower() for n in names))
    table = read_table()
    for name in names:
        assert f"`{name}`" in table
    # every documented option is accepted by the parser in the mode it applies to
    for spec in READ_OPTIONS:
        if spec.name in ("stream", "user", "password", "maxTriggerDelay", "credsFile", "nkeySeedFile", "userJwt") or spec.name.startswith("tls"):
            continue
        value = {
            "servers": "nats://h:1", "subjects": "a", "durable": "d", "startingOffsets": "1",
            "startingTimestamp": "1", "endingOffsets": "2", "endingTimestamp": "2", "failOnDataLoss": "true",
            "includeHeaders": "true", "token": "t", "connectTimeout": "1",
            "startingOffsetsByTimestampStrategy": "latest", "startingOffsetsByTimestamp": '{"S": 1}',
            "readMode": "direct",
        }.get(spec.name, "1")
        ReadOptions.from_options({"stream": "S", spec.name: value}, streaming=spec.applies != Scope.BATCH_READ)


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("500ms", 0.5), ("30s", 30.0), ("15m", 900.0), ("1h", 3600.0), ("1h30m", 5400.0), ("90", 90.0), ("1H", 3600.0)],
)
def test_max_trigger_delay_reads_the_duration_grammar(raw: str, seconds: float) -> None:
    # the grammar of every duration option: 1h30m was refused here while dedupWindowCheck took it
    o = parse(minMessagesPerTrigger="1", maxTriggerDelay=raw)
    assert o.max_trigger_delay_s == pytest.approx(seconds)


def test_sizes_and_connect_timeout_read_their_grammar() -> None:
    o = parse(maxBytesPerTrigger="64m", connectTimeout="2500ms")
    assert o.max_bytes_per_trigger == 64 << 20
    assert o.connection.connect_timeout_s == pytest.approx(2.5)


@pytest.mark.parametrize(
    ("opts", "streaming", "message"),
    [
        ({"subjects": "a", "SUBJECTS": "b"}, True, "option SUBJECTS given twice"),
        ({"subject": "a"}, True, "option subject applies only to writes, not streaming reads"),
        ({"typo": "a"}, True, "unknown option 'typo' for reading from jetstream \\(known: servers, stream,"),
        ({"bogus": "1", "other": "2"}, False, "unknown options 'bogus', 'other'"),
        ({"maxInFlight": "5"}, True, "option maxInFlight applies only to writes, not streaming reads"),
    ],
)
def test_option_names_are_checked(opts: dict[str, str], streaming: bool, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        ReadOptions.from_options({"stream": "S", **opts}, streaming=streaming)


def test_empty_values_are_unset() -> None:
    assert parse(durable="", startingOffsets=" ", maxMessagesPerTrigger="", failOnDataLoss="") == parse()
    # an empty startingOffsets does not count as given next to startingTimestamp
    assert parse(startingOffsets="", startingTimestamp="5").starting_timestamp_ms == 5


def test_kafka_names_and_several_streams() -> None:
    """Spark's Kafka names mean the same as ours; `stream` takes a list."""
    assert parse(maxOffsetsPerTrigger="7").max_messages_per_trigger == 7
    assert parse(maxOffsetsPerTrigger="7", maxMessagesPerTrigger="5").max_messages_per_trigger == 5
    assert parse(minOffsetsPerTrigger="4").min_messages_per_trigger == 4
    assert parse().timestamp_strategy == "error"
    assert parse(startingOffsetsByTimestampStrategy="LATEST").timestamp_strategy == "latest"
    several = ReadOptions.from_options({"stream": "A, B,C"}, streaming=True)
    assert several.streams == ("A", "B", "C") and several.stream == "A"


def test_per_stream_starts_and_ends_as_json() -> None:
    o = parse(
        False, stream="ORDERS,EVENTS,AUDIT",
        startingOffsets='{"ORDERS": 1200, "EVENTS": "latest"}',
        endingOffsets='{"ORDERS": "2000"}',
        startingOffsetsByTimestamp='{"AUDIT": "2024-05-01T00:00:00Z"}',
    )
    assert [o.start_position(s) for s in ("ORDERS", "EVENTS", "AUDIT")] == [1200, "latest", "earliest"]
    assert [o.start_timestamp_ms(s) for s in ("ORDERS", "EVENTS")] == [None, None]
    assert o.start_timestamp_ms("AUDIT") == 1714521600000
    assert [o.end_position(s) for s in ("ORDERS", "EVENTS")] == [2000, "latest"]
    assert pickle.loads(pickle.dumps(o)) == o
    one = parse(stream="A,B", startingOffsets="7")  # one value: every stream
    assert one.start_position("A") == one.start_position("B") == 7


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        ({"startingOffsets": '{"ORDERS": 1, "NOPE": 2}'},
         r"option startingOffsets names stream 'NOPE', which option stream does not \(ORDERS, EVENTS\)"),
        ({"endingOffsets": '{"X": 5}'}, r"option endingOffsets names stream 'X'"),
        ({"startingOffsetsByTimestamp": '{"Y": 0}'}, r"option startingOffsetsByTimestamp names stream 'Y'"),
        ({"startingOffsets": '{"ORDERS": 1'}, r"option startingOffsets: not a JSON object of stream -> value"),
        ({"startingOffsets": "[1, 2]"}, r"option startingOffsets: expected earliest or latest or a stream sequence"),
        ({"startingOffsets": '{"ORDERS": "soon"}'},
         r"option startingOffsets\[ORDERS\]: expected earliest or latest or a stream sequence number"),
        ({"startingOffsets": '{"ORDERS": true}'}, r"the value of stream 'ORDERS' must be a string or a number"),
        ({"startingOffsetsByTimestamp": '{"ORDERS": "yesterday"}'}, r"option startingOffsetsByTimestamp\[ORDERS\]"),
        ({"startingOffsets": '{"ORDERS": 1}', "startingOffsetsByTimestamp": '{"ORDERS": 0}'},
         r"startingOffsets and startingOffsetsByTimestamp both name stream 'ORDERS'"),
        ({"startingTimestamp": "0", "startingOffsetsByTimestamp": '{"ORDERS": 0}'},
         r"options startingOffsetsByTimestamp and startingTimestamp exclude each other"),
        ({"startingOffsets": '{"EVENTS": 9}', "endingOffsets": '{"EVENTS": 3}'},
         r"option endingOffsets of stream 'EVENTS' \(3\) is before startingOffsets \(9\)"),
    ],
)
def test_per_stream_json_errors_name_the_option_and_stream(opts: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse(False, stream="ORDERS,EVENTS", **opts)


def test_max_records_per_partition_is_the_kafka_name() -> None:
    assert parse(maxRecordsPerPartition="1000").max_messages_per_partition == 1000
    assert parse(maxRecordsPerPartition="9000", maxMessagesPerPartition="4000").max_messages_per_partition == 4000
    assert parse(maxRecordsPerPartition="9000").max_messages_per_partition == 9000  # above the default: given wins


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        ({"stream": "A,B"}, "option consumer reads one stream .* 2: A, B"),
        ({"durable": "d"}, "options consumer and durable exclude each other: durable creates"),
        ({"readMode": "direct"}, "options consumer and readMode exclude each other"),
        ({"startingOffsets": "latest"}, "options consumer and startingOffsets exclude each other: the consumer decides"),
        ({"startingTimestamp": "0"}, "options consumer and startingTimestamp exclude each other"),
        ({"consumer": "a.b"}, "option consumer"),
        ({"consumer": "a>"}, "option consumer"),
    ],
)
def test_option_consumer_takes_one_stream_and_excludes_what_the_consumer_decides(
    opts: dict[str, str], message: str
) -> None:
    with pytest.raises(OptionError, match=message):
        ReadOptions.from_options({"stream": "S", "consumer": "FEED", **opts}, streaming=True)


def test_option_consumer() -> None:
    o = parse(consumer="FEED", subjects="s.>", maxMessagesPerTrigger="10")
    assert (o.consumer, o.subjects, o.max_messages_per_trigger) == ("FEED", ("s.>",), 10)
    assert parse(streaming=False, consumer="FEED").consumer == "FEED"  # batch reads take it too
    assert parse().consumer is None
