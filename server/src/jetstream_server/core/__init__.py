"""The sans-IO core of the bundled server: the NATS protocol parser and
encoders, subjects and the subscription index, headers, the router seam
between the broker and its services, and the injected clock.

Nothing here imports asyncio or touches a socket (an import contract checks it).
"""
