"""Authentication and TLS files (client/auth.py) against real servers.

NKey users and user JWTs (operator mode: memory resolver, preloaded accounts)
against both servers configured at test time. TLS files reach the executors
through Spark's file distribution (`SparkContext.addFile`), named by their base
name only.
"""

from __future__ import annotations

import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from nats_auth import nkey_user_config, operator_config
from server_kinds import SERVER_KINDS

from jetstream_testing.process import ServerProcess, start_server
from spark_jetstream.client import LeanConnection, NatsError, ServerError
from spark_jetstream.options import ConnectionOptions


def _start(kind: str, conf: Path) -> ServerProcess:
    return start_server(kind, None, args=["-c", str(conf)])


def _check(opts: ConnectionOptions) -> None:
    with LeanConnection.open(opts) as conn:
        conn.js_api("STREAM.CREATE.A", {"name": "A", "subjects": ["a.>"], "storage": "memory"})
        conn.request("a.1", b"x", timeout=5)
        assert conn.js_api("STREAM.INFO.A")["state"]["messages"] == 1


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_nkey_user(kind: str, tmp_path: Path) -> None:
    user = nkey_user_config(tmp_path / "server.conf", tmp_path / "js")
    seed_file = tmp_path / "user.nk"
    seed_file.write_text(user.seed + "\n")
    srv = _start(kind, tmp_path / "server.conf")
    try:
        _check(ConnectionOptions.from_options({"servers": srv.url, "nkeySeedFile": str(seed_file)}))
        other = nkey_user_config(tmp_path / "unused.conf", tmp_path / "js2")  # a key the server does not know
        wrong = tmp_path / "wrong.nk"
        wrong.write_text(other.seed)
        with pytest.raises(ServerError, match="(?i)authorization violation") as err:
            LeanConnection.open(ConnectionOptions.from_options({"servers": srv.url, "nkeySeedFile": str(wrong)}))
        assert other.seed not in str(err.value) and user.seed not in str(err.value)
    finally:
        srv.stop()


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_user_jwt_with_its_seed_and_as_a_creds_file(kind: str, tmp_path: Path) -> None:
    user = operator_config(tmp_path / "server.conf", tmp_path / "js")
    seed_file, creds = tmp_path / "user.nk", tmp_path / "user.creds"
    seed_file.write_text(user.seed)
    creds.write_text(user.creds())
    srv = _start(kind, tmp_path / "server.conf")
    try:
        _check(ConnectionOptions.from_options({"servers": srv.url, "userJwt": user.jwt, "nkeySeedFile": str(seed_file)}))
        with LeanConnection.open(ConnectionOptions.from_options({"servers": srv.url, "credsFile": str(creds)})) as conn:
            assert conn.js_api("STREAM.INFO.A")["state"]["messages"] == 1
        # the seed alone is an NKey user this server does not know
        with pytest.raises(ServerError, match="(?i)authorization violation"):
            LeanConnection.open(ConnectionOptions.from_options({"servers": srv.url, "nkeySeedFile": str(seed_file)}))
    finally:
        srv.stop()


def test_key_files_are_checked_and_nkeys_is_named_when_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad.nk"
    bad.write_text("not a seed")
    opts = ConnectionOptions.from_options({"servers": "nats://127.0.0.1:1", "nkeySeedFile": str(bad)})
    from spark_jetstream.client.auth import connect_fields

    with pytest.raises(NatsError, match=f"option nkeySeedFile: no NKey user seed \\(SU...\\) found in {bad}"):
        connect_fields(opts, "nonce", None, None)
    creds = tmp_path / "x.creds"
    creds.write_text("nothing here")
    with pytest.raises(NatsError, match="option credsFile: no user JWT found"):
        connect_fields(ConnectionOptions(creds_file=str(creds)), "nonce", None, None)
    good = tmp_path / "good.nk"
    good.write_text("SUAFEQ5LZLRBXSZMITUUCEXKRMTXT3EIYQGLQ3JYAWAQJZSPND5CDDBIRE")
    monkeypatch.setitem(sys.modules, "nkeys", None)  # as if the extra were not installed
    with pytest.raises(NatsError, match=r"option nkeySeedFile needs the 'nkeys' package \(pip install 'spark-jetstream\[nkeys\]'\)"):
        connect_fields(ConnectionOptions(nkey_seed_file=str(good)), "nonce", None, None)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_tls_files_shipped_with_spark_add_file(kind: str, spark: Any, tmp_path: Path, certs: Path) -> None:
    srv = start_server(
        kind, tmp_path / "store",
        args=["--tls", "--tlscert", str(certs / "server.pem"), "--tlskey", str(certs / "server.key"),
              "--tlscacert", str(certs / "ca.pem"), "--tlsverify"],
    )
    try:
        shipped = tmp_path / "shipped"
        shipped.mkdir()
        tag = uuid.uuid4().hex[:8]  # one name per run: a Spark session takes each file name once
        names = {}
        for option, source in (("tlsCaFile", "ca.pem"), ("tlsCertFile", "client.pem"), ("tlsKeyFile", "client.key")):
            names[option] = f"{tag}-{source}"
            shutil.copy(certs / source, shipped / names[option])
            spark.sparkContext.addFile(str(shipped / names[option]))
        assert not Path(names["tlsCaFile"]).exists()  # not in the working directory: only Spark has it
        tls = {"servers": srv.url, **names}
        with LeanConnection.open(ConnectionOptions.from_options({"servers": srv.url, **{k: str(shipped / v) for k, v in names.items()}})) as conn:
            conn.js_api("STREAM.CREATE.T", {"name": "T", "subjects": ["t.>"], "storage": "memory"})
        rows = spark.createDataFrame([(f"t.{i % 3}", f"m{i}") for i in range(30)], "subject string, data string")
        rows.repartition(3).write.format("jetstream").options(**tls).mode("append").save()
        read = spark.read.format("jetstream").options(**tls).option("stream", "T").option("minPartitions", "3").load()
        assert sorted(r.data.decode() for r in read.select("data").collect()) == sorted(f"m{i}" for i in range(30))
    finally:
        srv.stop()
