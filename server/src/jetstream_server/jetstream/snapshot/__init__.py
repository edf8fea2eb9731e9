"""Stream snapshot and restore (`$JS.API.STREAM.SNAPSHOT` / `RESTORE`), as nats-server 2.15.

`content` turns a stream into nats-server's backup archive (`NATSARC1` entries
in an S2 stream, store/natsarc.py and store/s2frame.py) and back into consumer
state; `sender` streams a snapshot to a client in chunks paced by its acks;
`restore` takes a client's chunks and builds a new stream from them. The API
handlers are api/snapshots.py.
"""
