"""Workloads of the benchmark job (`python -m jobs.benchmark`), one module per family.

Every workload runs in this (client) process against a server in its own
process (`jetstream_testing.process.ServerProcess`), so that client and server never
share a GIL. Workloads return plain figures (`jobs.bench.results.Figure`);
`jobs.benchmark` wires them and prints the table.
"""
