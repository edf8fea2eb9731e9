"""jetstream-cli: natscli's management verbs for any NATS server, as the `jetstream` command.

Layers: `app` (the click command tree and the one-line error handling) > `commands.*`
(one module per verb group: they parse flags, ask natscli's questions, print natscli's
output) > `jsapi` (JetStream API requests over a nats-py connection), `connection`,
`snapshot` (stream backup/restore protocol) > `render`, `units`, `prompts`, `templates`
(pure helpers). Nothing here imports the bundled server or the Spark connector.
"""

__version__ = "0.1.0"
