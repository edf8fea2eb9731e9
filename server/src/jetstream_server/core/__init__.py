"""The sans-IO core of the bundled server: what NATS decides, without any I/O.

- `protocol`: the client protocol parser (bytes -> ops) and encoders;
- `session`: one client's session state machine (CONNECT and auth state,
  subscriptions, ping accounting, the bytes to write, when to close);
- `auth`: authentication decisions (CONNECT options -> identity or refusal);
- `routing`: the broker (subject index, queue groups, echo, auto-unsubscribe,
  no responders);
- `subjects`, `headers`: subject validation and index, NATS header blocks;
- `router`: the seam between the broker and the services built on it;
- `clock`: injected time (`FakeClock` for tests);
- `gotime`: Go's durations and RFC 3339 times, as nats-server reads and writes them.

Nothing here imports asyncio or touches a socket (an import contract checks
it); the asyncio layer (`jetstream_server.app`) feeds bytes and timer events
in and writes what comes out.
"""
