"""Files named by options (options/files.py): found at their path, else among Spark's files.

Without Spark in the process only the path counts; with Spark, a file distributed by
`SparkContext.addFile` is found by its base name (tests/connector/integration/test_client_auth.py
reads through TLS files shipped that way).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from spark_jetstream.options import ConnectionOptions, OptionError
from spark_jetstream.options.files import (
    SPARK_FILES_MODULE,
    find_file,
    not_found_text,
    spark_files_root,
)


def test_a_path_that_exists_is_kept_as_given(tmp_path: Path) -> None:
    f = tmp_path / "ca.pem"
    f.write_text("x")
    assert find_file(str(f)) == str(f)
    assert find_file(str(tmp_path / "missing.pem")) is None


def test_spark_files_of_a_worker_are_searched_by_base_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "client.pem").write_text("x")

    class SparkFiles:  # what a Spark worker process holds (pyspark.core.files.SparkFiles)
        _is_running_on_worker = True
        _root_directory = str(tmp_path)

        @classmethod
        def getRootDirectory(cls) -> str:  # noqa: N802 - Spark's name
            return cls._root_directory

    module = types.ModuleType(SPARK_FILES_MODULE)
    module.SparkFiles = SparkFiles  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, SPARK_FILES_MODULE, module)
    assert spark_files_root() == str(tmp_path)
    assert find_file("client.pem") == str(tmp_path / "client.pem")
    assert find_file("/etc/certs/client.pem") == str(tmp_path / "client.pem")  # the driver's path
    assert find_file("other.pem") is None
    # the option accepts it on the driver: it keeps the name, executors resolve it again
    opts = ConnectionOptions.from_options({"tlsCaFile": "client.pem"})
    assert opts.tls_ca_file == "client.pem" and opts.tls


def test_not_found_names_the_option_and_both_ways_to_provide_the_file() -> None:
    text = not_found_text("tlsCaFile", "ca.pem")
    assert text.startswith("option tlsCaFile: file not found: ca.pem")
    assert "every executor" in text and "SparkContext.addFile" in text
    with pytest.raises(OptionError, match="option nkeySeedFile: file not found: user.nk"):
        ConnectionOptions.from_options({"nkeySeedFile": "user.nk"})
