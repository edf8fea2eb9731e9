"""The verb groups of the `jetstream` command, one module each; every module has
`register(cli)` that adds its commands to the root group."""
