"""The asyncio layer of the bundled server: it only moves bytes, timers and tasks.

- `server`: the listener, the services' life cycle, monitoring data;
- `connection`: an `asyncio.Protocol` feeding a core `Session` and writing
  what it queues (batched), with the ping, auth and write-deadline timers and
  the TLS upgrade;
- `write_batch`: one `transport.write` per connection per read batch;
- `monitoring`: the HTTP endpoints (`/varz`, `/connz`, `/jsz`, `/healthz`);
- `services`: which services (JetStream) run inside the server;
- `loop_clock`, `tls`: the real clock on the event loop, the server's TLS context;
- `speedups`: which event loop runs it all (uvloop from the `speedups` extra, or asyncio's).

Together with `jetstream_server.embedded` (which runs a loop in a thread) and
the command line, the only code of `jetstream_server` that imports asyncio;
everything below it is sans-IO."""
