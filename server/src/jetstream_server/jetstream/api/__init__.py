"""The `$JS.API` handlers: one module per area, all registered in `registry`."""
