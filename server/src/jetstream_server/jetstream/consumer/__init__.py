"""Consumers: a cursor, an ack tracker and a delivery (pull or push), driven by `Consumer`.

Modules, top to bottom (a module imports only those below it; the import
contract in setup.cfg checks it):
- acks.py: the `$JS.ACK.>` handler (ack subjects and payloads -> a consumer)
- consumer.py: `Consumer`, a stream's listener; drives the parts below
- pull.py, push.py: `PullDelivery`, `PushDelivery`, the two deliveries of one shape
- delivery.py: that shape (`Delivery`), what it asks of the consumer (`Source`)
  and of the server (`ConsumerHost`); ack_tracker.py: `AckTracker`
- cursor.py: `Cursor`, what to deliver next
- config.py: `ConsumerConfig`; store.py: durable state on disk
"""
