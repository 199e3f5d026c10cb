"""`companion demo`: the whole story on embedded defaults, one command, no network.

Each chapter is a function taking the shared `DemoWorld`; chapters print a short story of what
happened. The demo lives under this device's data dir (`demo/`), is recreated on every run and
removed at the end unless `--keep` is given, so it can run twice in a row.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import click

from companion.cli import AppContext, pass_app
from companion.demo.sample import MEMORY_ENTRIES, USER_ENTRIES, write_sample_vault
from companion.paths import DevicePaths, device_paths


@dataclass
class DemoWorld:
    """Everything the demo's chapters share."""

    root: Path
    today: date
    app: AppContext
    server_vault: Path = field(init=False)
    hermes_home: Path = field(init=False)
    server_paths: DevicePaths = field(init=False)

    def __post_init__(self) -> None:
        self.server_vault = self.root / "server" / "vault"
        self.hermes_home = self.root / "server" / "hermes"
        self.server_paths = device_paths(self.root / "server" / "home").ensure()


def say(title: str) -> None:
    click.echo("")
    click.secho(f"== {title}", bold=True)


def chapter_vault(world: DemoWorld) -> None:
    from companion.vault import Vault, run_check

    say("1. The agent's vault")
    files = write_sample_vault(world.server_vault, world.today)
    click.echo(f"Created {len(files)} notes in {world.server_vault}")
    click.echo("  Home.md, knowledge/, projects/, and a week of journal in English and Spanish.")
    report = run_check(Vault(world.server_vault), world.root / "server" / "data")
    d = report.to_dict()
    c = d["counts"]
    click.echo(
        f"vault check: {c['notes']} notes, {c['links']} links, {c['broken_links']} broken links, "
        f"{c['orphans']} orphans, {c['not_in_home']} notes not listed in Home.md"
    )
    for b in d["broken_links"]:
        click.echo(f"  broken: {b['source']}:{b['line']}  {b['raw']}")


def chapter_memory(world: DemoWorld) -> None:
    from companion.memory import MemoryStore, Op, Snapshot

    say("2. The agent's injected memory (Hermes MEMORY.md / USER.md)")
    mem = MemoryStore(world.hermes_home, "memory")
    mem.apply_batch([Op("add", content=e) for e in MEMORY_ENTRIES])
    user = MemoryStore(world.hermes_home, "user")
    user.apply_batch([Op("add", content=e) for e in USER_ENTRIES])
    click.echo(f"What the agent sees at the start of every session ({world.hermes_home}):")
    click.echo("")
    click.echo(Snapshot.capture(world.hermes_home).text())


def chapter_dream(world: DemoWorld) -> None:
    from zoneinfo import ZoneInfo

    from companion.demo.sample import write_hermes_state
    from companion.dream import run_dream
    from companion.memory import Snapshot

    say("3. The nightly dream (02:00 Europe/Madrid)")
    dream_at = datetime.combine(world.today, datetime.min.time().replace(hour=2)).replace(
        tzinfo=ZoneInfo("Europe/Madrid")
    )
    write_hermes_state(world.hermes_home / "state.db", dream_at)
    click.echo("The agent had two sessions yesterday (Hermes state.db) and kept its journal.")
    report = run_dream(
        world.server_vault,
        world.app.config,
        dream_at,
        paths=world.server_paths,
        hermes_home=world.hermes_home,
        ran_on="server",
    )
    counts = report.counts
    summary = ", ".join(f"{v} {k}" for k, v in counts.items() if v and k != "candidates")
    click.echo(f"Dream report: {summary or 'nothing changed'}")
    for c in report.changes:
        click.echo(f"  {c.kind:<12} {c.note}: {c.summary}")
    if report.path is not None:
        click.echo(f"Machine-readable report: {report.path.relative_to(world.server_vault)}")
    again = run_dream(
        world.server_vault,
        world.app.config,
        dream_at,
        paths=world.server_paths,
        hermes_home=world.hermes_home,
        ran_on="server",
    )
    click.echo(
        "A second dream over the same night: "
        + ("nothing changed (idempotent)." if again.nothing_changed else "CHANGED (bug!)")
    )
    click.echo("")
    click.echo("The injected memory after the dream:")
    click.echo(Snapshot.capture(world.hermes_home).text())


CHAPTERS = [chapter_vault, chapter_memory, chapter_dream]


def _fresh_dir(root: Path) -> None:
    """Move an old demo aside before deleting it (a bulk delete slows file creation on ext4)."""
    if root.exists():
        aside = root.with_name(f"{root.name}.old-{time.time_ns()}")
        root.rename(aside)
        shutil.rmtree(aside, ignore_errors=True)
    root.mkdir(parents=True)


@click.command()
@click.option("--keep", is_flag=True, help="Keep the demo's files instead of removing them.")
@click.option("--headless", is_flag=True, help="Never open a window; print everything.")
@click.option(
    "--today",
    type=click.DateTime(["%Y-%m-%d"]),
    default=None,
    help="Pretend today is this date (YYYY-MM-DD).",
)
@pass_app
def demo(app: AppContext, keep: bool, headless: bool, today: datetime | None) -> None:
    """Run the whole story on embedded defaults: no configuration, no network.

    Builds a sample agent vault with a week of journal, checks it, shows the agent's injected
    memory, and cleans up after itself (unless --keep).

    \b
    Example:
      companion demo
      companion demo --keep --headless
    """
    world = DemoWorld(app.paths.data_dir / "demo", (today or datetime.now()).date(), app)
    _fresh_dir(world.root)
    started = time.monotonic()
    try:
        for chapter in CHAPTERS:
            chapter(world)
    finally:
        if not keep:
            shutil.rmtree(world.root, ignore_errors=True)
    say("Done")
    where = f"kept in {world.root}" if keep else "cleaned up"
    click.echo(f"The demo took {time.monotonic() - started:.1f} s; its files were {where}.")
