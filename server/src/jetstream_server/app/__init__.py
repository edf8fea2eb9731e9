"""The asyncio layer of the bundled server: listener, connections, broker,
timers (`loop_clock`), monitoring HTTP. Together with `jetstream_server.embedded`
(which runs a loop in a thread) and the command line, the only code of
`jetstream_server` that imports asyncio; everything below it is sans-IO."""
