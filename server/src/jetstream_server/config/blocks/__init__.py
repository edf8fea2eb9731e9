"""The blocks of a config file, each translated into its settings.

One module per block or group of keys, each a function from the parsed value
(`config.syntax`) to settings of `config.model`, with nats-server's checks
and messages:

- `limits`: the top-level scalars (sizes, durations, limits, lame duck);
- `authorization`: ``authorization`` (users, NKey users, permissions);
- `accounts`: ``accounts`` (their users, JetStream limits, exports, imports);
- `operator`: ``operator``, ``resolver``, ``resolver_preload`` (JWT mode);
- `tls`: ``tls``; `websocket`: ``websocket``;
- `jetstream`: ``jetstream`` (the settings the JetStream engine gets).

A block never sees the file: an error is a `ConfigError` with the line of the
offending key when the parser recorded one; the loader adds the file name.
"""
