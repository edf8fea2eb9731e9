"""jetstream-cli: natscli's management verbs for any NATS server, as the `jetstream` command.

Layers (the `cli-layers` contract in setup.cfg): `app` (the click command tree and the
one-line error handling) > `commands.*` (one package per verb group, one module per job in
it: click commands at module level that parse flags and hand a coroutine to `session.run`;
questions, configuration building and natscli's output beside them) > `snapshot` (stream
backup/restore protocol) > `session` (flags shared by every command, the connected session)
> `jsapi` (JetStream API requests over a nats-py connection), `connection` > `render`,
`prompts`, `templates` > `units`, `errors` (pure helpers). Nothing here imports the bundled
server or the Spark connector. A new verb group is a module or package in `commands/` with
`register(cli)`, listed in `commands.REGISTRARS`.
"""

__version__ = "0.1.0"
