"""The asyncio layer of the bundled server: listener, connections, broker,
monitoring HTTP. The only package in `server` that imports asyncio (besides
`server.clock.LoopClock` and `server.embedded`)."""
