"""The write half of the connector: message ids, the publisher, sink tasks and writers.

- `schema`: which DataFrame columns the sink uses, checked on the driver.
- `msg_ids`: deterministic `Nats-Msg-Id`s.
- `publisher`: pipelined publishing with a bounded window of unacked messages.
- `sink_task`: one executor task, Arrow batches in, acked messages out.
- `dedup_check`: the driver's cached check of the dedup windows of the streams written to.
- `commit_report`: what the writers' `commit` does with the tasks' reports.
- `batch_writer`, `stream_writer`: what Spark calls.

Independent of the read package (an import contract checks it). Empty on
purpose: importing a module here imports only what that module needs.
"""
