"""Mirrors and sources: streams that copy messages from other streams of this server.

- `headers.py`: the `Nats-Stream-Source` header (nats-server's format) and
  the header clean-up a sourced message gets;
- `feed.py`: one mirror or one source of a stream: where it reads next,
  how it finds that place again after a restart, how far behind it is;
- `coordinator.py`: every feed of the server; wakes them when an origin
  stores a message, copies in bounded turns, checks configs that need the
  other streams (cycles, mirror sizes) and answers the mirror/source info.

Within one server, a feed reads the origin stream's store directly (no
internal consumer is needed), so its progress is the origin sequence it has
copied: for a mirror the stream's own last sequence (a mirror keeps the
origin's sequences), for a source the sequence in the newest
`Nats-Stream-Source` header it stored. Both live in the stored messages, so
progress is as durable as they are.
"""
