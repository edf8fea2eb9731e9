"""Imports every API handler module so that their `@api_handler` routes register.

dispatch.py imports this module once. Add one import line per handler module.
"""

from jetstream_server.jetstream.api import account, consumers, direct, streams  # noqa: F401
