"""JetStream: streams, consumers and the `$JS.API` on top of the core broker.

A `Service` (see jetstream_server.core.router): it subscribes internally and publishes like a
client; it has no asyncio and no sockets. Time comes from an injected clock.
"""
