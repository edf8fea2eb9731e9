"""The read half of the connector: offsets, partitions, the batch and stream readers.

- `offsets`: the offset value (stream -> sequence), the stream state, time ->
  sequence, read limits.
- `partitions`: sequence ranges split for Spark tasks, and the executor's read.
- `arrow_rows`: fetched messages -> Arrow record batches (the read schema).
- `batch_reader`, `stream_reader`: what Spark calls on the driver.
- `durable`: the durable consumer that mirrors the committed offset (marked
  with the query's identity, best effort).
- `filtered`: matching-message counts for the per-trigger limits.
- `lag`: per-stream lag from Spark's progress reports.

Independent of the write package (an import contract checks it). Empty on
purpose: importing a module here imports only what that module needs.
"""
