"""The docs check: every command and Python snippet in the docs is run, here or by a named test.

Pages: README.md, docs/*.md, server/README.md, cli/README.md. What counts as a command is in
tests/support/doc_commands.py. Each command is accounted for in exactly one way:

- run here: `jetstream ...` CLI commands, in page order, against a bundled server started for
  the page (in a scratch working directory); `jetstream-server` / `nats-server` start commands,
  started with their documented flags on a free port and a scratch store until they log
  `Server is ready`, then stopped; `--help` commands; Python snippets (the quick start on the
  suite's SparkSession, with its results checked);
- `make TARGET`: the Makefile has the target with the recipe `MAKE_TARGETS` names (and the
  variables given), and the test named there runs what the recipe runs;
- `pytest ...`: a file of the suite (which `make test` runs); its paths exist and its `-k`
  words and `-m` markers select something in them;
- `RUN_BY_TESTS`: the command's pattern, the file of the test (or harness, or Makefile) that
  runs it, and a string that file must contain, the proof that it does.

A command that is none of these fails `test_every_command_is_run_or_listed` with its page and
line; an entry of `RUN_BY_TESTS` that no command uses, or whose proof is gone, fails too. Links
to pages and anchors that do not exist fail `test_links_resolve`.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from doc_commands import Command, Page, read_page

from jetstream_cli.app import cli
from jetstream_server import EmbeddedServer
from jetstream_testing.process import ServerProcess, nats_server_binary, start_server

ROOT = Path(__file__).resolve().parents[1]
PAGE_PATHS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
              ROOT / "server" / "README.md", ROOT / "cli" / "README.md")
PAGES = {path: read_page(path) for path in PAGE_PATHS}
COMMANDS = [command for page in PAGES.values() for command in page.commands]
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class RunBy:
    """`pattern` (a regex, matched whole against a command's text) is run by `test`, a file of
    this repository that contains `proof`."""

    pattern: str
    test: str
    proof: str
    why: str


_STANDALONE = "tests/connector/integration/test_spark_standalone.py"
_CONNECT = "tests/connector/integration/test_spark_connect.py"
_PIPELINE = "tests/jobs/test_orders_pipeline.py"
_BENCH = "tests/jobs/test_benchmark_quick.py"
_INSTALL = "tests/packaging/test_install.py"
_DASHBOARD = "tests/jobs/test_dashboard_docs.py"

RUN_BY_TESTS: tuple[RunBy, ...] = (
    # -- installing: the packaging test installs each distribution alone, `make install`
    #    (the first step of `make test`) installs them with every extra
    RunBy(r"pip install \./server", _INSTALL, "test_server_alone_has_no_dependencies_and_serves",
          "installs ./server alone into a fresh venv and serves clients"),
    RunBy(r"pip install \.", _INSTALL, "test_connector_alone_reads_and_writes_a_real_nats_server",
          "installs . alone into a fresh venv and reads and writes"),
    RunBy(r"pip install spark-jetstream", _INSTALL, '"spark-jetstream"',
          "installs the spark-jetstream distribution (from this repository)"),
    RunBy(r"pip install \./server '\.\[server\]'", "Makefile", "'.[server,nkeys,jobs,test]'",
          "make install installs ./server and the connector with its server extra"),
    RunBy(r"pip install '\.\[nkeys\]'|pip install 'spark-jetstream\[nkeys\]'", "Makefile",
          "'.[server,nkeys,jobs,test]'", "make install installs the connector's nkeys extra"),
    RunBy(r"pip install '\./server\[bcrypt,nkeys(,websocket,snapshot)?\]'|pip install '\./server\[speedups\]'",
          "Makefile", "'./server[bcrypt,nkeys,websocket,snapshot,speedups]'",
          "make install installs every server extra"),
    RunBy(r"pip install \./cli|pip install '\./cli\[nkeys\]'", "Makefile", "./cli",
          "make install installs the CLI (its nkeys come with the connector's extra)"),
    RunBy(r"pip install 'pyspark\[connect\]' 'pandas<3'", "pyproject.toml", '"pandas>=2.2.0,<3"',
          "the test extra (make install) brings pyspark's Connect client for test_spark_connect.py"),
    # -- the jobs
    RunBy(r"(\.venv/bin/)?python -m jobs\.orders_pipeline", _PIPELINE,
          "def test_continuous_on_the_default_embedded_server",
          "main() with the defaults' embedded server (make demo runs it with 100000 orders)"),
    RunBy(r"(\.venv/bin/)?python -m jobs\.orders_pipeline( --orders \d+)? --servers nats://127\.0\.0\.1:4222",
          _PIPELINE, '["--servers", srv.url, "--orders"', "main() against a server's URL"),
    RunBy(r"python -m jobs\.benchmark( --quick)?", _BENCH, 'main(["--quick"',
          "the benchmark's main() end to end (--quick; the full run is the same code, larger)"),
    RunBy(r"python -m jobs\.benchmark --only natspy --only cpu", _BENCH,
          "def test_natspy_family_shows_the_speedups_beside_asyncio",
          "the two families --quick, the bundled server on uvloop and with speedups off"),
    RunBy(r"JETSTREAM_SPEEDUPS=off jetstream-server -js", "tests/server/integration/test_speedups.py",
          '{**os.environ, "JETSTREAM_SPEEDUPS": "off"}', "the server with speedups off by the variable"),
    RunBy(r"python -m jobs\.benchmark --only dashboard", _DASHBOARD, "def test_benchmark_family",
          "the dashboard family end to end (with --quick: 200 streams instead of 5,000)"),
    RunBy(r"jetstream dashboard( --server \S+( --port \d+)?| --creds FILE)?", _DASHBOARD,
          "def test_cli_commands", "serves until stopped: the test starts it (with a server's "
          "URL; a user's credentials in tests/cli/test_cli_dashboard.py), reads its page, stops it"),
    RunBy(r"\.venv/bin/python -m jobs\.orders_pipeline .*", "tests/jobs/test_orders_docs.py",
          "def test_each_job_command_of_the_page_passes_its_checks",
          "each job command of docs/main-job.md through the job's entry point, its data dir moved"),
    RunBy(r"python -m jobs\.hostile( --quick --servers bundled)?", "tests/jobs/test_hostile_quick.py",
          '"-m", "jobs.hostile", "--quick", "--servers", "bundled"',
          "every scenario, small, on the bundled server (the full run is the same code, larger, on both)"),
    RunBy(r"python -m jobs\.client_suites( --natspy PATH( --python313 PYTHON)?)?",
          "tests/jobs/test_client_suites.py", "def test_the_command_needs_a_checkout",
          "a developer command (it needs a nats.py checkout CI has not): its shim, its report reading "
          "and its refusal without a checkout are tested"),
    RunBy(r"python -m jobs\.bench\.sink_cpu --server (both|bundled|nats-server) --rows \d+",
          "tests/jobs/test_bench_sink_cpu.py", 'sink_cpu.main(["--server", "both", "--rows"',
          "main() on both servers it starts, with fewer rows"),
    RunBy(r"python -m jobs\.benchmark --markdown \S+( --plot \S+)?", _BENCH,
          '"--markdown", str(report), "--plot", str(plot)', "--markdown and --plot, written and read back"),
    RunBy(r"python -m spark_jetstream\.options --update docs/options\.md",
          "tests/connector/unit/test_option_tables_page.py", '"--check", str(OPTIONS_PAGE)',
          "the generator checks this page (--check: what --update would leave unchanged)"),
    RunBy(r"python -m jetstream_testing\.fuzz --inputs \d+ --seed \d+", "tests/server/unit/test_fuzz.py",
          "fuzz.run(", "seeded runs of the same fuzzer (the long run is the same code, longer)"),
    # -- the server and the CLI as programs
    RunBy(r"python -m jetstream_server", "testing/src/jetstream_testing/process.py",
          '[sys.executable, "-m", "jetstream_server"]', "how every test starts the bundled server"),
    RunBy(r"jetstream-server --signal ldm=<pid>", "tests/server/integration/test_lame_duck.py",
          '"--signal", spec', "lame duck mode by --signal ldm=<pid> on both servers"),
    RunBy(r"python -m jetstream_cli", "tests/support/cli_helpers.py", '"-m", "jetstream_cli"',
          "how every CLI test runs the CLI"),
    # -- deployment: Spark standalone, nats-server clusters, Spark Connect
    RunBy(r"\.venv/bin/pip wheel --no-deps -w dist \.", _STANDALONE, '"wheel", "--quiet", "--no-deps"',
          "builds the connector's wheel as the guide does"),
    RunBy(r"cp dist/spark_jetstream-\*\.whl dist/spark_jetstream\.zip", _STANDALONE,
          'out / "spark_jetstream.zip"', "copies the wheel to a zip for --py-files"),
    RunBy(r"spark-submit --master spark://127\.0\.0\.1:7077 --py-files dist/spark_jetstream\.zip my_job\.py",
          _STANDALONE, '"--py-files", str(connector_zip)', "spark-submit with the zip on a standalone master"),
    RunBy(r"export SPARK_HOME=.*", "testing/src/jetstream_testing/spark_cluster.py", "def spark_home",
          "the harness finds SPARK_HOME in the pip package of pyspark the same way"),
    RunBy(r"export SPARK_LOCAL_IP=127\.0\.0\.1", "testing/src/jetstream_testing/spark_cluster.py",
          'SPARK_LOCAL_IP="127.0.0.1"', "the standalone cluster's environment"),
    RunBy(r"\$SPARK_HOME/bin/spark-class org\.apache\.spark\.deploy\.(master\.Master|worker\.Worker) .*",
          "testing/src/jetstream_testing/spark_cluster.py", "org.apache.spark.deploy.worker.Worker",
          "test_spark_standalone.py's master and workers (SparkStandalone)"),
    RunBy(r"mkdir -p nats-cluster\nfor i in 1 2 3; do(.|\n)*", "testing/src/jetstream_testing/cluster.py",
          "def cluster_config", "three nats-server nodes with routes to all (NatsCluster, used by "
          "test_nats_cluster_failover.py and test_spark_standalone.py)"),
    RunBy(r"PYSPARK_PYTHON=\$PWD/\.venv/bin/python \.venv/bin/python -m jobs\.orders_pipeline --master .*",
          _STANDALONE, '"--replicas", "3", "--py-files"', "the main job on a standalone master and an R3 cluster"),
    RunBy(r"kill \$\(jobs -p\)", _STANDALONE, "SparkStandalone(",
          "the harness stops the cluster processes it started (the guide's shell stops its jobs)"),
    RunBy(r"PYSPARK_PYTHON=\$PWD/\.venv/bin/python SPARK_LOCAL_IP=127\.0\.0\.1 "
          r"\$SPARK_HOME/sbin/start-connect-server\.sh .*", "testing/src/jetstream_testing/spark_connect.py",
          'SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"',
          "test_spark_connect.py's Connect server: the class start-connect-server.sh runs"),
    RunBy(r"\$SPARK_HOME/sbin/stop-connect-server\.sh", "testing/src/jetstream_testing/spark_connect.py",
          "def stop(", "test_spark_connect.py stops its Connect server"),
    RunBy(r'from pyspark\.sql import SparkSession\n(.|\n)*\.remote\((.|\n)*',
          _CONNECT, "SparkSession.builder.remote(", "batch and streaming reads and writes over Connect"),
)

# make TARGET: (what its recipe must contain, the test that runs that, the proof in it)
MAKE_TARGETS: dict[str, tuple[str, str, str]] = {
    "demo": ("-m jobs.orders_pipeline", _PIPELINE, "def test_pipeline_runs_checks_itself"),
    "test": ("$(BIN)/pytest -q -p no:cacheprovider $(PYTEST_WORKERS)", "tests/test_docs.py",
             "def test_every_command_is_run_or_listed"),
    "install": ("pip install --quiet --no-deps --force-reinstall $(PACKAGES)", "tests/conftest.py",
                "def _check_installed"),
    "lint": ("$(BIN)/lint-imports", "Makefile", "\t$(BIN)/ruff check server testing cli spark_jetstream jobs tests\n\t$(BIN)/lint-imports\n\t$(BIN)/mypy\n\t$(BIN)/pytest"),
    "bench": ("-m jobs.benchmark", _BENCH, 'main(["--quick"'),
    "bench-quick": ("-m jobs.benchmark --quick", _BENCH, 'main(["--quick"'),
    "test-spark-versions": ("the version matrix passed on pyspark", ".ci/run",
                            'make test-spark-versions SPARK_VERSIONS="4.0.5"'),
}
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")

_SERVER_PROGRAMS = ("jetstream-server", ".venv/bin/nats-server")


def _words(command: Command) -> list[str]:
    return shlex.split(command.text, comments=True)


def _is_help(command: Command) -> bool:
    return command.kind == "shell" and _words(command)[-1:] == ["--help"]


def _is_cli(command: Command) -> bool:
    """A `jetstream` command the check runs itself (one listed in RUN_BY_TESTS, such as a
    command that serves until stopped, is run by its test instead)."""
    return (command.kind == "shell" and _words(command)[0] == "jetstream"
            and not _is_help(command) and _listed(command) is None)


def _is_server_start(command: Command) -> bool:
    words = _words(command)
    return command.kind == "shell" and words[0] in _SERVER_PROGRAMS and not _is_help(command) \
        and not any(w.startswith(("-sl", "--signal", "<")) for w in words)


def _is_run_here(command: Command) -> bool:
    if command.kind == "python":
        return _listed(command) is None
    return _is_help(command) or _is_cli(command) or _is_server_start(command)


def _listed(command: Command) -> RunBy | None:
    for entry in RUN_BY_TESTS:
        if re.fullmatch(entry.pattern, command.text):
            return entry
    return None


def _recipe(target: str, depth: int = 3) -> str | None:
    """The commands `make target` runs: its recipe and its prerequisites' (rules of this
    Makefile only), or None when there is no such rule."""
    rule = re.search(rf"^{re.escape(target)}:([^\n]*)\n((?:\t[^\n]*\n)*)", MAKEFILE, re.MULTILINE)
    if rule is None:
        return None
    text = rule.group(2)
    if depth > 0:
        for prerequisite in rule.group(1).split():
            text += _recipe(prerequisite, depth - 1) or ""
    return text


def _make_problem(command: Command) -> str | None:
    """None when `make ...` is accounted for, else what is wrong."""
    words = _words(command)
    targets = [w for w in words[1:] if "=" not in w]
    variables = [w.split("=", 1)[0] for w in words[1:] if "=" in w]
    for target in targets:
        if target not in MAKE_TARGETS:
            return f"make target {target!r} is not in MAKE_TARGETS"
        recipe = _recipe(target)
        if recipe is None or MAKE_TARGETS[target][0] not in recipe:
            return f"the Makefile's {target!r} recipe does not run {MAKE_TARGETS[target][0]!r}"
    for name in variables:
        if not re.search(rf"^{name}\s*\?=", MAKEFILE, re.MULTILINE):
            return f"the Makefile sets no default for {name} (`{name} ?= ...`)"
    return None


def _pytest_problem(command: Command) -> str | None:
    words = _words(command)
    start = next(i for i, w in enumerate(words) if w.endswith("pytest"))
    args = words[start + 1:]
    paths = [ROOT / a for a in args if a.startswith("tests/")]
    if not paths:
        return "names no test path"
    missing = [p for p in paths if not p.exists()]
    if missing:
        return f"no such test path: {missing[0].relative_to(ROOT)}"
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("test_*.py")))]
    text = "\n".join(f.read_text(encoding="utf-8") for f in files)
    for flag, value in zip(args, args[1:], strict=False):
        if flag == "-k" and value not in text:
            return f"-k {value} selects nothing in {', '.join(str(p.relative_to(ROOT)) for p in paths)}"
        if flag == "-m":
            marks = [w for w in re.findall(r"[a-z_]+", value) if w not in ("not", "and", "or")]
            if not all(m in text or f'"{m}:' in (ROOT / "pyproject.toml").read_text() for m in marks):
                return f"-m {value}: unknown marker"
    return None


def _account(command: Command) -> str | None:
    """None when the command is accounted for, else why it is not."""
    if _is_run_here(command) or _listed(command) is not None:
        return None
    if command.kind == "shell":
        first = _words(command)[0]
        if first == "make":
            return _make_problem(command)
        if first.endswith("pytest") or "pytest" in _words(command):
            return _pytest_problem(command)
    return "neither run by the docs check nor listed in RUN_BY_TESTS"


def test_every_command_is_run_or_listed() -> None:
    assert COMMANDS, "no commands found in the docs"
    problems = [f"{c.where(ROOT)}: {c.text.splitlines()[0]!r}: {why}"
                for c in COMMANDS if (why := _account(c)) is not None]
    assert not problems, "commands in the docs that nothing runs:\n" + "\n".join(problems)


def test_every_listed_command_is_in_the_docs_and_its_test_runs_it() -> None:
    for entry in RUN_BY_TESTS:
        assert any(re.fullmatch(entry.pattern, c.text) for c in COMMANDS), (
            f"RUN_BY_TESTS entry {entry.pattern!r} matches no command in the docs: remove it")
        path = ROOT / entry.test
        assert path.is_file(), f"{entry.test} (for {entry.pattern!r}) does not exist"
        assert entry.proof in path.read_text(encoding="utf-8"), (
            f"{entry.test} no longer contains {entry.proof!r}, the proof that it runs "
            f"{entry.pattern!r} ({entry.why})")
    for target, (_, test, proof) in MAKE_TARGETS.items():
        assert proof in (ROOT / test).read_text(encoding="utf-8"), (target, test, proof)


def test_the_check_refuses_a_command_nothing_runs(tmp_path: Path) -> None:
    page = tmp_path / "new.md"
    page.write_text("Run `jetstream-server --frobnicate 3` or:\n\n```bash\nmake frobnicate\n"
                    "pip install ./nowhere\n```\n\n```python\nprint('x')\n```\n", encoding="utf-8")
    found = read_page(page).commands
    assert [c.text for c in found] == ["jetstream-server --frobnicate 3", "make frobnicate",
                                       "pip install ./nowhere", "print('x')"]
    assert _account(found[1]) == "make target 'frobnicate' is not in MAKE_TARGETS"
    assert _account(found[2]) == "neither run by the docs check nor listed in RUN_BY_TESTS"
    # a start command and a Python snippet are run here: test_server_start_commands and
    # test_python_snippets fail for them if they do not work
    assert _is_run_here(found[0]) and _is_run_here(found[3])


def _anchor_problem(page: Page, link: str) -> str | None:
    target, _, anchor = link.partition("#")
    if re.match(r"^[a-z]+:", target):
        return None  # http(s), mailto: not checked here
    path = (page.path.parent / target).resolve() if target else page.path
    if not path.exists():
        return f"{link}: no such file"
    if anchor:
        if path.suffix != ".md":
            return f"{link}: an anchor into a file that is not a page"
        anchors = PAGES[path].anchors if path in PAGES else read_page(path).anchors
        if anchor not in anchors:
            return f"{link}: no heading with that anchor"
    return None


def test_links_resolve() -> None:
    problems = [f"{link.page.relative_to(ROOT)}:{link.line}: {why}"
                for page in PAGES.values() for link in page.links
                if (why := _anchor_problem(page, link.target)) is not None]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_every_docs_page_is_in_the_index() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    for path in sorted((ROOT / "docs").glob("*.md")):
        if path.name != "README.md":
            assert f"]({path.name})" in index, f"docs/README.md does not list {path.name}"


# -- running the commands ---------------------------------------------------------------


def _ids(commands: list[Command]) -> list[str]:
    return [f"{c.where(ROOT)}" for c in commands]


def _program(word: str) -> list[str]:
    """The argv for a documented program: the venv's console scripts and binaries."""
    if word == "jetstream":
        return [str(BIN / "jetstream")]
    if word == "jetstream-server":
        return [str(BIN / "jetstream-server")]
    if word in ("python", "python3", ".venv/bin/python"):
        return [sys.executable]
    if word == ".venv/bin/nats-server":
        return [nats_server_binary()]
    raise AssertionError(f"no program for {word!r}")


HELP = [c for c in COMMANDS if _is_help(c)]


@pytest.mark.parametrize("command", HELP, ids=_ids(HELP))
def test_help_commands(command: Command) -> None:
    words = _words(command)
    done = subprocess.run(_program(words[0]) + words[1:], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "usage" in done.stdout.lower(), done.stdout


SERVER_STARTS = [c for c in COMMANDS if _is_server_start(c)]


_DOC_URL = "nats://127.0.0.1:4222"  # the server URL the pages write


def _documented_flags(words: list[str], store: Path) -> tuple[list[str], bool]:
    """The documented flags, with `-p N` and `-m N` left to the harness (free ports: the
    documented ones may be taken on this machine) and the store directory in a scratch
    place; and whether a monitoring port was asked for."""
    flags: list[str] = []
    skip = False
    monitor = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word in ("-p", "--port", "-m", "--http_port"):
            monitor = monitor or word in ("-m", "--http_port")
            skip = True
            continue
        if i > 0 and words[i - 1] in ("-sd", "--store_dir"):
            word = str(store)
        flags.append(word)
    return flags, monitor


@pytest.mark.parametrize("command", SERVER_STARTS, ids=_ids(SERVER_STARTS))
def test_server_start_commands(command: Command, tmp_path: Path) -> None:
    words = _words(command)
    flags, monitor = _documented_flags(words[1:], tmp_path / "store")
    proc = ServerProcess(_program(words[0]), flags, http_port=-1 if monitor else None)
    proc.start()  # returns once `Server is ready` is logged
    try:
        assert proc.running
        assert not monitor or proc.monitor_port
    finally:
        assert proc.proc is not None
        proc.proc.send_signal(signal.SIGTERM)
        assert proc.proc.wait(20) == 0
        proc.stop()


CLI_PAGES = [path for path, page in PAGES.items() if any(_is_cli(c) for c in page.commands)]


@pytest.mark.parametrize("path", CLI_PAGES, ids=[str(p.relative_to(ROOT)) for p in CLI_PAGES])
def test_cli_commands_run_in_page_order(path: Path, tmp_path: Path) -> None:
    """In this process (the console script's click tree; `--help` above runs the script
    itself), so a page of commands costs milliseconds a command, not an interpreter each."""
    server = start_server("bundled", tmp_path / "store")
    env = {k: None for k in os.environ if k.startswith("NATS_")}
    runner = CliRunner()
    try:
        with _in(tmp_path):
            for command in (c for c in PAGES[path].commands if _is_cli(c)):
                words = [server.url if w == _DOC_URL else w for w in _words(command)[1:]]
                done = runner.invoke(cli, ["-s", server.url, *words], env=env,
                                     prog_name="jetstream", input="")
                assert done.exit_code == 0, (
                    f"{command.where(ROOT)}: {command.text}\n{done.output}\n{done.exception!r}")
    finally:
        server.stop()


PYTHON = [c for c in COMMANDS if c.kind == "python" and _listed(c) is None]
SPARK_SNIPPETS = [c for c in PYTHON if "spark" in c.text]
PLAIN_SNIPPETS = [c for c in PYTHON if c not in SPARK_SNIPPETS]


@contextlib.contextmanager
def _in(directory: Path) -> Iterator[None]:
    previous = Path.cwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(previous)


@pytest.mark.parametrize("snippet", PLAIN_SNIPPETS, ids=_ids(PLAIN_SNIPPETS))
def test_python_snippets(snippet: Command, tmp_path: Path) -> None:
    printed = io.StringIO()
    with _in(tmp_path), contextlib.redirect_stdout(printed):
        exec(compile(snippet.text, snippet.where(ROOT), "exec"), {"__name__": "__docs__"})
    if "EmbeddedServer" in snippet.text:
        assert re.fullmatch(r"nats://127\.0\.0\.1:\d+\n", printed.getvalue().splitlines(True)[0])


@pytest.mark.parametrize("snippet", SPARK_SNIPPETS, ids=_ids(SPARK_SNIPPETS))
def test_spark_snippets(snippet: Command, spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The quick start as a notebook runs it, then what it wrote is checked: the batch copy and
    the streaming query's output, 1000 messages each, in OUT."""
    namespace: dict[str, object] = {"__name__": "__docs__"}
    # The snippet's paths are relative to a notebook's working directory. Python's is moved
    # to a scratch directory (and the server it starts is used and stopped there), but the
    # suite's JVM keeps its own, where a checkpoint would outlive the run: relative paths
    # under jetstream-data/ are made absolute, in the scratch directory.
    code = snippet.text.replace('"jetstream-data/', f'"{tmp_path}/jetstream-data/')
    with _in(tmp_path):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code, snippet.where(ROOT), "exec"), namespace)
            srv = namespace.get("srv")
            if srv is not None:
                out = (spark.read.format("jetstream").option("servers", srv.url)  # type: ignore[attr-defined]
                       .option("stream", "OUT").load())
                counts = {row["subject"]: row["count"] for row in out.groupBy("subject").count().collect()}
                assert counts == {"out.copy": 1000, "out.upper": 1000}
        finally:
            if isinstance(srv := namespace.get("srv"), EmbeddedServer):
                srv.stop()
