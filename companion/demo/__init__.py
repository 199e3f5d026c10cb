"""`companion demo`: the whole story on embedded defaults, one command, no network.

Each chapter is a function taking the shared `DemoWorld`; chapters print a short story of what
happened. The demo lives under this device's data dir (`demo/`), is recreated on every run and
removed at the end unless `--keep` is given, so it can run twice in a row.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import time
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

import click

from companion.context import AppContext, pass_app
from companion.demo.sample import (
    MEMORY_ENTRIES,
    PLANTED_BROKEN_LINKS,
    USER_ENTRIES,
    write_sample_vault,
)
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
    laptop_vault: Path = field(init=False)
    laptop_paths: DevicePaths = field(init=False)
    engines: dict[str, Any] = field(default_factory=dict)
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    # what the person edited on the laptop in this story (vault path -> when)
    person_edits: dict[str, datetime] = field(default_factory=dict)
    gui: str = "auto"  # "auto": windows when a display is present; "never"; "always"

    def __post_init__(self) -> None:
        self.server_vault = self.root / "server" / "vault"
        self.hermes_home = self.root / "server" / "hermes"
        self.server_paths = device_paths(self.root / "server" / "home").ensure()
        self.laptop_vault = self.root / "laptop" / "vault"
        self.laptop_paths = device_paths(self.root / "laptop" / "home").ensure()

    def sync(self, device: str) -> Any:
        """One sync round on `device` ("server" or "laptop") until converged."""
        return self.engines[device].round()


class StoryEditors:
    """Who edited what, as the demo's story knows it: the person's edits on the laptop, and
    nothing else (the agent wrote the rest). The dream's default reads file times and cannot
    tell the agent from a person; on a real sync copy the sync engine knows the device."""

    def __init__(self, world: DemoWorld) -> None:
        self.world = world

    def last_human_edit(self, path: str) -> datetime | None:
        return self.world.person_edits.get(path)


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
    c, p = d["counts"], d["problems"]
    click.echo(
        f"vault check: {c['notes']} notes, {c['links']} links; {p['errors']} errors "
        f"({c['broken_links']} broken links, {c['missing_anchors']} missing headings),"
    )
    click.echo(
        f"  {p['warnings']} warnings ({c['orphans']} orphans, {c['not_in_home']} notes not "
        "listed in Home.md)"
    )
    found = {(b["source"], b["raw"]) for b in d["broken_links"]}
    if found and found == set(PLANTED_BROKEN_LINKS) and p["errors"] == len(found):
        click.echo(
            f"  The {len(found)} broken links are planted in the sample on purpose "
            "(nothing failed):"
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
    from companion.dream.summary import change_text
    from companion.memory import Snapshot

    say("6. The nightly dream on the server (02:00 Europe/Madrid)")
    dream_at = datetime.combine(world.today, datetime.min.time().replace(hour=2)).replace(
        tzinfo=ZoneInfo("Europe/Madrid")
    )
    write_hermes_state(world.hermes_home / "state.db", dream_at)
    click.echo("The agent had two sessions yesterday (Hermes state.db) and kept its journal.")
    from companion.config import load_config
    from companion.sync.service.dreamhook import EngineSyncHook

    # the server dreams on its own device's settings: the person's config (its `[dream]
    # sources`, `[memory] hermes_home`) is not the demo's
    server_config = load_config(world.server_paths)
    report = run_dream(
        world.server_vault,
        server_config,
        dream_at,
        paths=world.server_paths,
        hermes_home=world.hermes_home,
        ran_on="server",
        sync=EngineSyncHook(world.engines["server"]),
        editors=StoryEditors(world),
    )
    counts = report.counts
    summary = ", ".join(f"{v} {k}" for k, v in counts.items() if v and k != "candidates")
    click.echo(f"Dream report: {summary or 'nothing changed'}")
    for c in report.changes:
        click.echo(f"  {c.kind:<12} {c.note}: {change_text(c, 'en')}")
    for s in report.skipped:
        if s.code == "being_edited":
            click.echo(f"  waiting      {s.reason}")
    journal = world.server_vault / "journal" / f"{world.today.isoformat()}.md"
    dreaming = [
        line.split(" <!-- src:")[0]
        for line in journal.read_text(encoding="utf-8").split("\n")
        if "<!-- src: .companion/dreams/" in line
    ]
    click.echo("Under ## Dreaming in today's journal:")
    for line in dreaming:
        click.echo(f"  {line}")
    said = [
        int(m.group(1))
        for m in re.finditer(r"(\d+) (?:orphan|nota huérfana|notas hu)", "\n".join(dreaming))
    ]
    click.echo(
        "Dreaming line and report agree on orphans: "
        + str((said[0] if said else 0) == len(report.orphans))
    )
    if report.path is not None:
        click.echo(f"Machine-readable report: {report.path.relative_to(world.server_vault)}")
    verify = report.to_dict().get("verify") or {}
    click.echo(f"Verify: sync {verify.get('status', 'not run')} (pending: {verify.get('pending')})")
    again = run_dream(
        world.server_vault,
        server_config,
        dream_at,
        paths=world.server_paths,
        hermes_home=world.hermes_home,
        ran_on="server",
        sync=EngineSyncHook(world.engines["server"]),
        editors=StoryEditors(world),
    )
    click.echo(
        "A second dream over the same night: "
        + ("nothing changed (idempotent)." if again.nothing_changed else "CHANGED (bug!)")
    )
    click.echo("")
    click.echo("The injected memory after the dream:")
    click.echo(Snapshot.capture(world.hermes_home).text())


def _device_config(paths: DevicePaths, kind: str, name: str) -> Any:
    """Each demo device keeps its secrets in an owner-only file (no desktop keyring needed)."""
    from companion.config import load_config

    paths.config_file.parent.mkdir(parents=True, exist_ok=True)
    paths.config_file.write_text(
        f'[secrets]\nbackend = "file"\n\n[sync]\nkind = "{kind}"\ndevice_name = "{name}"\n',
        encoding="utf-8",
    )
    return load_config(paths)


def chapter_relay(world: DemoWorld) -> None:
    from companion.credentials.store import open_store
    from companion.relay.testing import running_relay
    from companion.review.hook import install as install_review
    from companion.sync.commands.join import join_vault
    from companion.sync.round.engine import SyncEngine

    say("3. An end-to-end encrypted relay, a server copy and a laptop copy")
    relay = world.stack.enter_context(running_relay(world.root / "relay"))
    click.echo(f"Relay listening on {relay.url} (loopback; it stores ciphertext only).")
    passphrase = secrets.token_urlsafe(18)  # the demo's passphrase lives only in memory
    world.laptop_vault.mkdir(parents=True, exist_ok=True)
    for device, kind, vault, paths in (
        ("server", "agent", world.server_vault, world.server_paths),
        ("laptop", "human", world.laptop_vault, world.laptop_paths),
    ):
        config = _device_config(paths, kind, device)
        store = open_store(config)
        res = join_vault(
            paths,
            store,
            vault,
            relay_url=relay.url,
            invite=relay.invite(kind=kind),
            device_name=device,
            kind=kind,
            passphrase=lambda _vid, _new: passphrase,
        )
        verb = "created the vault and set its passphrase" if res.created_vault else "joined with it"
        click.echo(f"  {device} ({kind}) {verb}")
        if kind == "human":  # the person's first device grants the agents their scopes
            from companion.sync.round.scopes import new_vault_scopes

            line = new_vault_scopes(vault)
            if line:
                click.echo(f"  {device}: {line}")
        engine = world.stack.enter_context(
            contextlib.closing(SyncEngine(vault, paths, config, store=store))
        )
        install_review(engine)
        world.engines[device] = engine
        rep = world.sync(device)
        moved = len(rep.uploaded) or len(rep.downloaded)
        what = "uploaded" if rep.uploaded else "downloaded"
        click.echo(f"  {device} synced: {moved} files {what}, converged={rep.converged}")
    world.sync("server")  # what the laptop added (its scopes file)
    same = _tree(world.server_vault) == _tree(world.laptop_vault)
    click.echo(f"Both copies byte-identical: {same}")
    blob_bytes = b"".join(p.read_bytes() for p in (world.root / "relay").rglob("*") if p.is_file())
    leaked = [w for w in (b"Weather station", b"restic", b"Raspberry") if w in blob_bytes]
    click.echo(f"Names or words from the notes found in the relay's files: {leaked or 'none'}")


def _tree(root: Path) -> dict[str, bytes]:
    """The synced files of a copy: not its temporary files, nor its own folder marker."""
    from companion.sync.local.folder import MARKER_NAME

    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".companion-tmp" not in p.name and p.name != MARKER_NAME
    }


def chapter_edits(world: DemoWorld) -> None:
    say("4. Edits travel both ways")
    note = world.laptop_vault / "projects" / "Weather station.md"
    with note.open("a", encoding="utf-8") as f:
        f.write("- Add a rain gauge in spring.\n")
    world.person_edits["projects/Weather station.md"] = datetime.now().astimezone()
    world.sync("laptop")
    world.sync("server")
    arrived = "rain gauge" in (world.server_vault / "projects" / "Weather station.md").read_text()
    click.echo(f"laptop: added a line to projects/Weather station.md -> on the server: {arrived}")
    new = world.server_vault / "knowledge" / "Chrony.md"
    new.write_text("# Chrony\n\nThe Pi keeps time with chrony.\n", encoding="utf-8")
    world.sync("server")
    world.sync("laptop")
    arrived = (world.laptop_vault / "knowledge" / "Chrony.md").is_file()
    click.echo(f"server: the agent wrote knowledge/Chrony.md -> on the laptop: {arrived}")


def chapter_conflict(world: DemoWorld) -> None:
    say("5. A conflict: the person and the agent edit the same line")
    rel = "projects/Blog.md"
    for _device, vault, status in (
        ("server", world.server_vault, "Status: the agent thinks two drafts are ready."),
        ("laptop", world.laptop_vault, "Status: I published the sensors post."),
    ):
        p = vault / rel
        p.write_text(
            p.read_text(encoding="utf-8").replace("Status: three drafts in progress.", status),
            encoding="utf-8",
        )
    world.person_edits[rel] = datetime.now().astimezone()
    world.sync("server")  # the agent's edit reaches the relay first
    rep = world.sync("laptop")
    world.sync("server")
    for c in rep.conflicts:
        click.echo(f"  {c.message}")
    kept = (world.laptop_vault / rel).read_text(encoding="utf-8")
    click.echo(f"The note keeps the person's line: {'I published' in kept}")
    copies = sorted(p.name for p in (world.laptop_vault / "projects").glob("Blog (conflict*"))
    click.echo(f"The agent's version is kept in: {', '.join(copies) or 'NOTHING (bug!)'}")
    same = _tree(world.server_vault) == _tree(world.laptop_vault)
    click.echo(f"Both copies byte-identical again: {same}")


def chapter_morning(world: DemoWorld) -> None:
    from companion.gui.events import DreamLanded
    from companion.gui.notify_policy import notifications_for
    from companion.review import desk

    say("7. The morning on the laptop")
    rep = world.sync("laptop")
    reports = sorted((world.laptop_vault / ".companion" / "dreams").glob("????-??-??.json"))
    click.echo(
        f"The laptop received {len(rep.downloaded)} files by sync, the dream report among them."
    )
    if not reports:
        click.echo("No dream report arrived (bug!)")
        return
    data = json.loads(reports[-1].read_text(encoding="utf-8"))
    note = desk.note_for(world.laptop_vault, reports[-1].stem)  # the night's review note
    event = DreamLanded(
        reports[-1],
        data.get("date", ""),
        data.get("ran_on", "server"),
        dict(data.get("counts") or {}),
        review=note,
        waiting=desk.open_counts(world.laptop_vault, note) if note else None,
    )
    cfg = replace(world.app.config.settings.notify, morning_time="00:00")
    notes = notifications_for([event], cfg, datetime.now())
    for n in notes:
        click.echo(f"  [notification] {n.title}: {n.body}")
    same = _tree(world.server_vault) == _tree(world.laptop_vault)
    click.echo(f"Both copies byte-identical after the dream: {same}")
    _morning_review(world)
    why_not = _no_gui_reason(world.gui)
    if why_not is None:
        _morning_gui(world, reports[-1], notes)
    elif world.gui != "never":
        click.echo(f"(No window: {why_not}; the summary above is what it would show.)")


REVIEW_SECONDS = 4


def _morning_review(world: DemoWorld) -> None:
    """The review note on the laptop, and one decision ticked in it (docs/review.md)."""
    from companion.fileio import write_text_atomic
    from companion.review import note as notes
    from companion.review.rounds import note_files

    found = note_files(world.laptop_vault)
    if not found:
        click.echo("No review note arrived (bug!)")
        return
    night, rel = found[-1]
    path = world.laptop_vault / rel
    text = path.read_text(encoding="utf-8")
    lines = notes.parse_lines(text)
    counts = next((x for x in text.split("\n") if x.startswith(("Waiting", "Nothing"))), "")
    click.echo(f"The night's review, as Obsidian shows it on the laptop and the phone: {rel}")
    click.echo(f"  {counts}")
    for row in text.split("\n"):
        if row.startswith("### "):
            click.echo(f"  {row[4:]}")
    reverts = [
        ln
        for ln in lines
        if ln.id.startswith("c-")
        and ln.code == "r"
        and (notes.context(text, ln, "en").target or "").startswith("knowledge/")
    ]
    if not reverts:
        return
    ln = reverts[-1]
    target = notes.context(text, ln, "en").target
    click.echo(f"The person ticks one line on the laptop: {ln.label} `{ln.id}/r` ([[{target}]])")
    write_text_atomic(path, notes.set_ticked(text, ln.key))
    world.sync("laptop")
    [done] = [x for x in notes.parse_lines(path.read_text(encoding="utf-8")) if x.key == ln.key]
    click.echo(f"  at the laptop's next sync: {done.outcome}")
    world.sync("server")
    same = _tree(world.server_vault) == _tree(world.laptop_vault)
    click.echo(f"  the server has it too (both copies byte-identical: {same})")


def _no_gui_reason(mode: str, environ: Any = None) -> str | None:
    """Why the morning is printed only (None: show the real windows)."""
    if mode == "never":
        return "--headless"
    if mode == "always":
        return None
    from companion.gui.display import display_problem  # Qt-free

    env = os.environ if environ is None else environ
    if env.get("QT_QPA_PLATFORM", "") == "offscreen":
        return "QT_QPA_PLATFORM is offscreen"
    problem = display_problem(env)
    return f"no display ({problem})" if problem else None


def _morning_gui(world: DemoWorld, report: Path, notes: list[Any]) -> None:
    """The real notification and the morning review window on the laptop, for a few seconds.

    The Qt part lives in `companion.gui.demo_morning`; whatever goes wrong (no Qt, no display),
    one line says why and the demo goes on with the printed summary it already showed.
    """
    try:
        from companion.gui.demo_morning import show_morning
    except Exception as exc:  # noqa: BLE001 - no Qt here: the printed summary is enough
        click.echo(f"(No window: the desktop GUI cannot load: {exc})")
        return
    try:
        show_morning(
            world.app.config,
            world.laptop_vault,
            report,
            notes,
            click.echo,
            REVIEW_SECONDS,
            engine=world.engines.get("laptop"),
        )
    except Exception as exc:  # noqa: BLE001 - a Qt problem must not end the demo
        click.echo(f"(No window: the desktop GUI failed: {type(exc).__name__}: {exc})")


CHAPTERS = [
    chapter_vault,
    chapter_memory,
    chapter_relay,
    chapter_edits,
    chapter_conflict,
    chapter_dream,
    chapter_morning,
]


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
    "--gui",
    is_flag=True,
    help="Open the morning's windows even when no display is detected (tests, offscreen Qt).",
)
@click.option(
    "--today",
    type=click.DateTime(["%Y-%m-%d"]),
    default=None,
    help="Pretend today is this date (YYYY-MM-DD).",
)
@pass_app
def demo(app: AppContext, keep: bool, headless: bool, gui: bool, today: datetime | None) -> None:
    """Run the whole story on embedded defaults: no configuration, no network.

    Builds a sample agent vault with a week of journal, checks it, shows the agent's injected
    memory, and cleans up after itself (unless --keep). With a display (and without
    --headless) the morning notification and the review window are shown for a few seconds.

    \b
    Example:
      companion demo
      companion demo --keep --headless
    """
    world = DemoWorld(app.paths.data_dir / "demo", (today or datetime.now()).date(), app)
    if headless and gui:
        raise click.UsageError("--headless and --gui contradict each other; choose one")
    world.gui = "never" if headless else "always" if gui else "auto"
    _fresh_dir(world.root)
    started = time.monotonic()
    try:
        with world.stack:
            for chapter in CHAPTERS:
                chapter(world)
    finally:
        if not keep:
            shutil.rmtree(world.root, ignore_errors=True)
    say("Done")
    where = f"kept in {world.root}" if keep else "cleaned up"
    click.echo(f"The demo took {time.monotonic() - started:.1f} s; its files were {where}.")
