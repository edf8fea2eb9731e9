"""`jetstream dashboard`: the JetStream dashboard page for any NATS server.

- `access`: what the user may ask, from `$SYS.REQ.USER.INFO`'s permissions;
- `collect`: one refresh's data (the shape the bundled server's monitoring port sends
  too; docs/dashboard.md) from JetStream API and `$SYS` requests over nats-py;
- `web`: the standard library's HTTP server for the page (`dashboard_page/`, the same
  files jetstream-server ships: a test keeps the copies identical) and data.json.
"""
