"""JetStream: streams, consumers and the `$JS.API` on top of the core broker.

A `Service` (see jetstream_server.core.router): it subscribes internally and publishes like a
client; it has no asyncio and no sockets. Time comes from an injected clock.

Layers, top to bottom (import contracts in setup.cfg; no import cycles, a
test in tests/packaging checks it):
- engine.py: the service: subscriptions, the publish path, stream lifecycle
- api/: the `$JS.API` route table, handlers and dispatcher
- consumer/ and stream.py: consumers and streams, which never import each other
- seams.py: what streams and consumers ask of each other
- stream_config.py, persistence.py: stream configuration and metadata on disk
- errors.py (nats-server's error table, typed), subject_match.py

Times and durations as Go writes them are jetstream_server.core.gotime's.
"""
