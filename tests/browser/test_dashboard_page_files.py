"""The dashboard's page ships twice, once in each distribution (the server and the CLI
never import each other): the copies must be the same files. The server's copy is the
source; after changing it, copy it over:
    cp server/src/jetstream_server/app/dashboard_page/* cli/src/jetstream_cli/dashboard/dashboard_page/
Also: the page, the server and the CLI spell the connector's metadata key as the
connector does."""

from __future__ import annotations

from pathlib import Path

from jetstream_cli.dashboard.collect import CONNECTOR_OWNER_KEY as CLI_KEY
from jetstream_server.app.dashboard_snapshot import CONNECTOR_OWNER_KEY as SERVER_KEY
from spark_jetstream.read.durable import OWNER_KEY

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "server/src/jetstream_server/app/dashboard_page"
COPY = ROOT / "cli/src/jetstream_cli/dashboard/dashboard_page"
FILES = {"index.html", "dashboard.js", "dashboard.css"}


def test_both_distributions_ship_the_same_page() -> None:
    assert {p.name for p in SOURCE.iterdir()} == FILES
    assert {p.name for p in COPY.iterdir()} == FILES
    for name in sorted(FILES):
        assert (COPY / name).read_bytes() == (SOURCE / name).read_bytes(), (
            f"{COPY / name} differs from {SOURCE / name}: copy the server's page over "
            "(see this module's docstring)")


def test_the_installed_packages_carry_the_page() -> None:
    from importlib import resources

    for package, folder in (("jetstream_server.app", "dashboard_page"),
                            ("jetstream_cli.dashboard", "dashboard_page")):
        for name in FILES:
            shipped = resources.files(package).joinpath(folder).joinpath(name).read_bytes()
            assert shipped == (SOURCE / name).read_bytes(), (package, name)


def test_connector_owner_key_is_the_one_the_page_reads() -> None:
    assert OWNER_KEY == SERVER_KEY == CLI_KEY
    assert f'"{OWNER_KEY}"' in (SOURCE / "dashboard.js").read_text()
