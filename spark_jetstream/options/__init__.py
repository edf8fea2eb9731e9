"""Options of the `jetstream` source and sink: one table, one grammar.

- `grammar`: how every kind of value is read (durations, sizes, counts,
  booleans, timestamps, names, subjects); `OptionError`.
- `table`: every option declared once (name, kind, default, where it applies,
  help); parsing and the docs/options.md tables come from it.
- `connection`, `read`, `write`: the frozen, picklable option groups the
  connector uses, with the rules that join several options.
- `files`: where a file named by an option is (its path, or Spark's
  distributed copy); `secrets`: how passwords and tokens are shown (`***`).

Imports neither pyspark nor pyarrow, and nothing of the client, read or write
packages. `python -m spark_jetstream.options` prints the docs/options.md sections.
"""

from spark_jetstream.options.connection import ConnectionOptions
from spark_jetstream.options.grammar import OptionError
from spark_jetstream.options.read import ReadOptions
from spark_jetstream.options.table import OPTIONS, Option, Scope
from spark_jetstream.options.write import WriteOptions

__all__ = ["OPTIONS", "ConnectionOptions", "Option", "OptionError", "ReadOptions", "Scope", "WriteOptions"]
