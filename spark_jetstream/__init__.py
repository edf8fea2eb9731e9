"""The `jetstream` Spark data source for NATS JetStream."""
