"""JetStream: streams, consumers and the `$JS.API` on top of the core broker.

A `Service` (see jetstream_server.core.router): it subscribes internally and publishes like a
client; it has no asyncio and no sockets. Time comes from an injected clock,
settings from a frozen `EngineSettings`.

Layers, top to bottom (import contracts in setup.cfg; no import cycles, a
test in tests/packaging checks it):
- engine.py: the service of one account: stream lifecycle (load, create,
  update, restore, delete) and the wiring of the parts below
- intake.py: where a publish to a stream's subjects goes (a batch or the pipeline)
- api/ (the `$JS.API` route table, handlers and dispatcher, behind `ApiHost`),
  fast_batch.py and atomic_batch.py (batch publishes), sourcing/ (mirrors and
  sources), never each other
- publish.py: the publish pipeline (store, group commit, pub acks, listeners,
  periodic sync); reports.py: `/jsz` and `$JS.API.INFO` usage
- pub_ack.py (the pub ack JSON), limits.py (account and server store limits),
  router_host.py (the router as consumers see it)
- snapshot/: stream snapshots and restores
- consumer/ and stream.py: consumers and streams, which never import each other
- seams.py: what streams and consumers ask of each other
- stream_config.py, persistence.py: stream configuration and metadata on disk
- errors.py (nats-server's error table, typed), settings.py, subject_match.py

Times and durations as Go writes them are jetstream_server.core.gotime's.
"""
