"""`companion init | sync | watch | status | history | restore`: encrypted sync from the shell.

Exit status (a contract for scripts): 0 done; 1 failed (relay refused, token revoked, data from
the relay failed verification, changes still pending); 2 bad input or configuration; 3 a mass
deletion was held back (run again with --allow-mass-delete if intended); 4 another one-shot
command holds this vault copy's lock (a running `watch` or desktop app does the work asked of it
instead: `sync/service/requests.py`); 5 the relay is unreachable (changes stay queued locally);
6 the vault folder is missing or not the vault's (an unmounted drive: `sync/local/folder.py`),
nothing synced.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from companion.context import AppContext, pass_app
from companion.errors import CompanionError, InputError
from companion.relayclient.errors import RelayUnreachable
from companion.sync.round.guard import MassDeleteRefused
from companion.textsafe import SHOWN_PATH, shown
from companion.vaultpath import which_vault

EXIT_MASS_DELETE = 3
EXIT_LOCKED = 4
EXIT_OFFLINE = 5


class MassDeleteHeld(CompanionError):
    exit_code = EXIT_MASS_DELETE


class Offline(CompanionError):
    exit_code = EXIT_OFFLINE


def _vault(app: AppContext, vault: Path | None) -> Path:
    return which_vault(vault, app.config)


def _when(ts: float | None) -> str:
    if not ts:
        return "never"
    ago = time.time() - ts
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
    if ago < 90:
        return f"{stamp} ({int(ago)} s ago)"
    if ago < 5400:
        return f"{stamp} ({int(ago // 60)} min ago)"
    return stamp


def _open_engine(app: AppContext, vault: Path, **kw: Any) -> Any:
    from companion.heap import freeze_loaded
    from companion.review.hook import install
    from companion.sync.round.engine import SyncEngine

    freeze_loaded()  # the engine is imported: the collector need not walk any of it again
    engine = SyncEngine(vault, app.paths, app.config, **kw)
    install(engine)
    return engine


def _locked(app: AppContext, vault: Path, *, serves_requests: bool = False) -> Any:
    from companion.sync.service.lock import VaultLock
    from companion.sync.state.device import vault_dir

    return VaultLock(vault_dir(app.paths, os.path.realpath(vault)), serves_requests=serves_requests)


def _round_errors(exc: BaseException) -> None:
    """Map engine errors to the documented exit statuses."""
    if isinstance(exc, MassDeleteRefused):
        raise MassDeleteHeld(str(exc)) from None
    if isinstance(exc, RelayUnreachable):
        raise Offline(f"{exc}; local changes stay queued and go out on the next sync") from None
    raise exc


def _print_report(report: Any) -> None:
    parts = []
    for label, items in (
        ("downloaded", report.downloaded),
        ("deleted here", report.deleted_local),
        ("renamed here", report.renamed_local),
        ("uploaded", report.uploaded),
        ("deleted on other devices", report.deleted_remote),
        ("merged", report.merged),
    ):
        if items:
            parts.append(f"{len(items)} {label}")
    click.echo("synced: " + (", ".join(parts) if parts else "no changes"))
    for c in report.conflicts:
        click.echo(f"conflict: {c.message}")
    for path in report.kept_edits:
        click.echo(f"kept edit: {path} was deleted elsewhere but edited here or there; kept")
    for msg in report.skipped:
        click.echo(f"skipped: {shown(msg)}", err=True)
    for path in report.held:
        click.echo(f"held for your approval: {shown(path)} (companion held list)")
    for name in report.quarantined:
        click.echo(f"quarantined: {shown(name)} (companion quarantine list)", err=True)
    for path in report.waiting:
        click.echo(f"waiting for your decision: local change to {shown(path)} not sent")


# ------------------------------------------------------------------------------------ init


@click.command()
@click.argument("vault", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--relay", "relay_url", metavar="URL", help="Relay base URL (default: [sync] relay_url)."
)
@click.option(
    "--invite", metavar="CODE", help="One-time invite code from `companion relay invite`."
)
@click.option(
    "--device-name",
    metavar="NAME",
    help="How other devices see this one (default: [sync] device_name or the host name).",
)
@click.option(
    "--kind",
    type=click.Choice(["human", "agent"]),
    help="The kind you expect this device to be: a person's (human) or an AI agent's (agent). "
    "The invite decides (`companion relay invite --kind`); a different expectation is refused "
    "before the invite is used.",
)
@click.option(
    "--ca-cert",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Trust this CA bundle or self-signed certificate for an https relay.",
)
@click.option(
    "--insecure-http",
    is_flag=True,
    help="Allow a plain http:// relay on another host (the device token travels in clear: "
    "only on a network you trust). Remembered for this folder.",
)
@click.option(
    "--rejoin",
    is_flag=True,
    help="Join VAULT, already set up here, again as a new device of its vault: for when the "
    "secret store lost this device's relay token. Needs a new --invite.",
)
@pass_app
def init(
    app: AppContext,
    vault: Path,
    relay_url: str | None,
    invite: str | None,
    device_name: str | None,
    kind: str | None,
    ca_cert: Path | None,
    insecure_http: bool,
    rejoin: bool,
) -> None:
    """Set up VAULT (a folder, created if missing) to sync through an encrypted relay.

    Redeems the invite, then either creates the vault's encryption key (first device: choose a
    passphrase) or unlocks it with the passphrase. The passphrase comes from
    COMPANION_PASSPHRASE_FILE (an owner-only file; refused if others can read it), the secret
    store entry `vault-passphrase`, or a prompt. The relay token and the vault key are kept in
    the OS keyring (or the owner-only secrets file on a headless server), never in the vault.
    If the passphrase is wrong, the device leaves the vault again: ask for a new invite.
    With --rejoin, a folder already set up whose relay token the secret store lost joins again
    as a new device of the same vault (its index and history kept).

    \b
    Example:
      companion init ~/vault --relay https://relay.example.org \\
          --invite 3f9a0c1d2e4b5a69-... --device-name laptop --kind human
      COMPANION_PASSPHRASE_FILE=~/.vault-pass companion init /srv/agent-vault \\
          --relay http://127.0.0.1:8787 --invite ... --device-name server --kind agent
      companion init ~/vault --rejoin --invite 5b1e...
    """
    import socket

    from companion.credentials.store import open_store
    from companion.sync.commands.join import (
        check_join_request,
        join_vault,
        passphrase_source,
        rejoin_vault,
        remember_join,
    )

    if rejoin:
        root = check_join_request(
            app.paths, vault, relay_url=relay_url or "", invite=invite,
            device_name=device_name or "", kind=kind, insecure_http=insecure_http, rejoin=True,
        )  # fmt: skip
        store = open_store(app.config)
        result = rejoin_vault(
            app.paths, store, root, invite=invite or "", device_name=device_name, kind=kind,
            passphrase=passphrase_source(store),
        )  # fmt: skip
        s = result.state
        click.echo(f"joined vault {s.vault_id} again as {s.device_name!r} ({s.kind})")
        click.echo(f"key fingerprint: {s.key_fingerprint} (the same on every device of this vault)")
        click.echo(f"next: companion sync {s.vault_root}")
        return
    relay_url = relay_url or app.config.settings.sync.relay_url
    device_name = device_name or app.config.settings.sync.device_name or socket.gethostname()
    # every argument checked before anything is opened or written (the secret store included)
    check_join_request(
        app.paths, vault, relay_url=relay_url, invite=invite, device_name=device_name,
        kind=kind, insecure_http=insecure_http,
    )  # fmt: skip
    store = open_store(app.config)
    result = join_vault(
        app.paths,
        store,
        vault,
        relay_url=relay_url,
        invite=invite,
        device_name=device_name,
        kind=kind,
        passphrase=passphrase_source(store),
        ca_cert=str(ca_cert.resolve()) if ca_cert else "",
        insecure_http=insecure_http,
    )
    s = result.state
    what = "created" if result.created_vault else "joined"
    click.echo(f"{what} vault {s.vault_id} as {s.device_name!r} ({s.kind})")
    click.echo(f"key fingerprint: {s.key_fingerprint} (the same on every device of this vault)")
    if result.created_vault and s.kind == "human":
        from companion.sync.round.scopes import new_vault_scopes

        line = new_vault_scopes(Path(s.vault_root))
        if line:
            click.echo(line)
    configured = app.config.settings.vault.path
    if not configured or os.path.realpath(Path(configured).expanduser()) == s.vault_root:
        remember_join(app.config, s)  # the tray app and `companion sync` find it from now on
        click.echo(f"this device's vault is now {s.vault_root} ([vault] path in {app.config.file})")
    click.echo(f"next: companion sync {s.vault_root}")


# ------------------------------------------------------------------------------------ sync


@click.command()
@click.argument("vault", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--allow-mass-delete",
    is_flag=True,
    help="Confirm a round that deletes a large share of the vault on other devices.",
)
@click.option(
    "--rescan",
    is_flag=True,
    help="Look at every file even when a running watch has seen every change.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the round's report as JSON.")
@pass_app
def sync(
    app: AppContext, vault: Path | None, allow_mass_delete: bool, rescan: bool, as_json: bool
) -> None:
    """Sync VAULT once: pull, merge, push, until nothing is pending.

    While `companion watch` or the desktop app owns VAULT, its engine runs the round and
    this command prints that round's report, with the same exit status. Its file watcher
    has noted every change by then (on Linux, on a local disk), so the round looks only at
    those; --rescan makes it look at every file. Run alone, a round always looks at every
    file.

    Exit status: 0 synced; 1 failed (or changes still pending); 3 a mass deletion was held
    back; 4 another one-shot command (a `sync`, a dream) is syncing this folder; 5 the relay
    is unreachable (local changes stay queued); 6 vault folder missing (not there, or not this
    vault's: is the drive mounted?), nothing synced.

    \b
    Example:
      companion sync ~/vault
      companion sync ~/vault --allow-mass-delete
      companion sync ~/vault --json
    """
    vault = _vault(app, vault)
    report = run_round(app, vault, allow_mass_delete=allow_mass_delete, rescan=rescan)
    with _index(app, vault) as index:
        quarantined, problems = _left_over(index)
    if as_json:
        summary = report.summary()
        summary["quarantined_files"] = [q.path or q.file_id for q in quarantined]
        summary["problem_files"] = [{"path": p, "reason": why} for p, why in problems]
        click.echo(json.dumps(summary, indent=2, sort_keys=True))
    else:
        _print_report(report)
    if problems:
        shown_problems = "; ".join(
            f"{shown(p, SHOWN_PATH)}: {shown(why)}" for p, why in problems[:3]
        )
        more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
        raise CompanionError(
            f"synced, except {len(problems)} remote change(s) this copy cannot apply: "
            f"{shown_problems}{more}"
        )
    if quarantined:
        names = ", ".join(shown(q.path or f"id {q.file_id[:12]}") for q in quarantined[:3])
        more = f" and {len(quarantined) - 3} more" if len(quarantined) > 3 else ""
        raise CompanionError(
            f"synced, except {len(quarantined)} quarantined file(s) whose newest record cannot "
            f"be opened: {names}{more} (see `companion quarantine list`)"
        )
    if not report.converged:
        from companion.sync.round.engine import NotConverged

        raise NotConverged(
            f"changes still pending after {report.passes} passes "
            f"({report.pending_upload} to upload, {report.pending_download} to apply); "
            "run `companion sync` again"
        )


# ------------------------------------------------------------------------------------ watch


@click.command()
@click.argument("vault", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--rescan-minutes",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0.1),
    help="Full safety rescan interval.",
)
@click.option(
    "--allow-mass-delete", is_flag=True, help="Do not hold back large deletions (dangerous)."
)
@pass_app
def watch(
    app: AppContext, vault: Path | None, rescan_minutes: float, allow_mass_delete: bool
) -> None:
    """Keep VAULT in sync continuously (the headless daemon; runs until stopped).

    Watches the folder and long-polls the relay: a saved note goes out at once, a remote
    change is applied the moment it lands. Offline, edits queue and the daemon reconnects
    with backoff. SIGTERM or Ctrl-C stop it cleanly (the current write finishes first).

    \b
    Example:
      companion watch /srv/agent-vault
      nohup companion watch ~/vault >/dev/null 2>&1 &
    """
    from companion.sync.service.daemon import Daemon

    vault = _vault(app, vault)
    with _locked(app, vault, serves_requests=True), _open_engine(app, vault) as engine:
        daemon = Daemon(
            engine, rescan_interval_s=rescan_minutes * 60, allow_mass_delete=allow_mass_delete
        )
        click.echo(
            f"watching {engine.core.root} (device {engine.core.name!r}); Ctrl-C to stop", err=True
        )
        code = daemon.run()
    if code:
        raise CompanionError(daemon.fatal or "the sync daemon stopped on an error")


# ------------------------------------------------------------------------------------ status


@click.command()
@click.argument("vault", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--json", "as_json", is_flag=True, help="Machine-readable output (shape in docs/sync.md)."
)
@click.option("--offline", is_flag=True, help="Do not contact the relay (faster; no online check).")
@pass_app
def status(app: AppContext, vault: Path | None, as_json: bool, offline: bool) -> None:
    """Show VAULT's sync state: device, last sync, pending changes, conflicts, errors.

    \b
    Example:
      companion status ~/vault
      companion status ~/vault --json | jq .pending
    """
    from companion.sync.commands.statusview import collect_status

    vault = _vault(app, vault)
    data = collect_status(app.paths, app.config, vault, probe=not offline)
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True))
        return
    dev = data["device"]
    online = {True: "online", False: "offline", None: "not checked"}[data["online"]]
    click.echo(f"vault:      {data['vault']}")
    click.echo(f"device:     {dev['name']} ({dev['kind']}), id {dev['id']}")
    click.echo(f"vault id:   {data['vault_id']}  key fingerprint {data['key_fingerprint']}")
    click.echo(f"relay:      {data['relay']} ({online})")
    state = data["state"]
    if state == "vault_missing":
        state = f"vault folder missing ({data['vault']} is not there or not this vault's)"
    click.echo(f"state:      {state}")
    click.echo(f"last sync:  {_when(data['last_sync_ts'])}")
    pend = data["pending"]
    click.echo(f"pending:    {pend['upload']} to upload, {pend['download']} to download")
    daemon = data["daemon"]
    running = f"running (pid {daemon.get('pid')}: {daemon.get('command')})" if daemon else ""
    click.echo("daemon:     " + (running or "not running"))
    click.echo("device keys: " + _keys_line(data["device_keys"]))
    if data["held"]:
        click.echo(f"held for your approval ({len(data['held'])}, `companion held list`):")
        for h in data["held"][:10]:
            click.echo(f"  {shown(h['path'])}: {h['reason']} (from {shown(h['author'] or '?')})")
    if data["quarantined"]:
        click.echo(f"quarantined ({len(data['quarantined'])}, `companion quarantine list`):")
        for q in data["quarantined"][:10]:
            click.echo(f"  {shown(q['path'] or 'unknown file ' + q['file_id'][:12])}")
    if data["problems"]:
        click.echo(f"cannot apply here ({len(data['problems'])}):")
        for p in data["problems"][:10]:
            click.echo(f"  {shown(p['path'])}: {shown(p['reason'])}")
    if data["not_synced"]:
        click.echo(f"not synced from here ({data['not_synced_count']}):")
        for n in data["not_synced"][:10]:
            click.echo(f"  {shown(n['path'])}: {shown(n['detail'])}")
    if data["conflicts"]:
        click.echo(f"conflicts ({len(data['conflicts'])} copies in the vault):")
        for c in data["conflicts"][-10:]:
            click.echo(f"  {shown(c.get('message') or c.get('copy') or '')}")
    for q in data.get("agent_quotas") or []:
        click.echo(f"agent quota: {shown(q['name'])} ({q['kind']}): {_quota_line(q)}")
    last = data["last_error"]
    if last:
        when = f"{_when(last['time'])}: " if last.get("time") else ""  # none: read just now
        click.echo(f"last error: {when}{last.get('message')}")


def _keys_line(keys: dict[str, Any]) -> str:
    """`not set up` or `anchored on laptop (ABCD-...); 1 device not vouched for`."""
    if keys.get("error"):
        return f"cannot read: {shown(keys['error'])}"
    if not keys.get("anchored"):
        return "not set up (`companion trust init` / `trust accept`)"
    a = keys["anchor"]
    line = f"anchored on {shown(a['name'] or a['device_id'])} ({a['fingerprint']})"
    n = keys.get("unvouched", 0)
    if n:
        line += f"; {n} device{'s' if n != 1 else ''} not vouched for (`companion trust show`)"
    return line


def _quota_line(q: dict[str, Any]) -> str:
    """`2 of 2 records, 1,234 of 536,870,912 bytes today; throttled until <ISO time> ...`"""
    parts = []
    for key in ("records", "bytes"):
        used, limit = q.get(key, 0), q.get(f"{key}_limit") or 0
        parts.append(f"{used:,} of {limit:,} {key}" if limit else f"{used:,} {key}")
    line = ", ".join(parts) + " today"
    if q.get("throttled_until"):
        line += f"; throttled until {q['throttled_until']} (its writes wait on the relay)"
    return line


# ------------------------------------------------------------------------------------ history


@click.command()
@click.argument("vault", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_app
def history(app: AppContext, vault: Path, path: str, as_json: bool) -> None:
    """List the revisions of PATH (relative to VAULT) the relay keeps, newest first.

    \b
    Example:
      companion history ~/vault knowledge/git.md
      companion restore ~/vault knowledge/git.md --rev 3
    """
    rel = _relative(vault, path)
    with _open_engine(app, vault) as engine:
        revs = engine.history(rel)
    rows = [_history_row(ch) for ch in revs]
    if as_json:
        click.echo(json.dumps(rows, indent=2, sort_keys=True))
        return
    if not rows:
        raise InputError(f"the relay has no revisions of {rel!r}")
    for r in rows:
        if r.get("refused"):
            click.echo(f"rev {r['rev']:>4}  refused: {shown(r['refused'])}")
            continue
        what = "deleted" if r["deleted"] else f"{r['size']} bytes"
        if r["rename_from"]:
            what += f", renamed from {shown(r['rename_from'])}"
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["time"])) if r["time"] else "?"
        if r["time_source"] == "relay":
            when += " (relay's clock)"
        click.echo(f"rev {r['rev']:>4}  {when}  {shown(r['device'])} ({r['kind']})  {what}")


def _history_row(ch: Any) -> dict[str, Any]:
    """One revision. The time is the one sealed by the writing device (the relay's own
    `committed_at` is unauthenticated: it is used only for records that carry no sealed
    time, and marked so). Device and kind are the verified author."""
    from companion.sync.remote.vault import Refused

    if isinstance(ch, Refused):
        return {"rev": ch.rev, "refused": ch.reason, "device": ch.device_name or ""}
    m = ch.meta
    sealed = (m.recorded_ns / 1e9) if m.recorded_ns else None
    return {
        "rev": ch.rev,
        "time": sealed or ch.committed_at,
        "time_source": "sealed" if sealed else "relay",
        "device": ch.author_name,
        "kind": ch.author_kind,
        "size": m.size,
        "deleted": m.deleted,
        "sha256": m.sha256,
        "rename_from": m.rename_from,
    }


def _relative(vault: Path, path: str) -> str:
    from companion.sync.local.pathsafe import normalize

    p = Path(path)
    if p.is_absolute():
        try:
            path = os.path.relpath(os.path.realpath(p), os.path.realpath(vault))
        except ValueError:
            raise InputError(f"{path!r} is not inside the vault {vault}") from None
        if path.startswith(".."):
            raise InputError(f"{p} is not inside the vault {vault}")
    try:
        return normalize(path.replace(os.sep, "/"))
    except CompanionError as exc:
        raise InputError(str(exc)) from None


# ------------------------------------------------------------------------------------ restore


@click.command()
@click.argument("vault", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("path")
@click.option(
    "--rev",
    required=True,
    type=click.IntRange(1),
    help="The revision to bring back (see `companion history`).",
)
@pass_app
def restore(app: AppContext, vault: Path, path: str, rev: int) -> None:
    """Bring back revision REV of PATH as a new edit, synced at once.

    The current version is synced first and stays in the history, so a restore never
    destroys anything (restore it back the same way).

    \b
    Example:
      companion history ~/vault projects/site.md
      companion restore ~/vault projects/site.md --rev 4
    """
    rel = _relative(vault, path)
    here_or_by_owner(
        app, vault, "restore", lambda engine: engine.restore(rel, rev), path=rel, rev=rev
    )
    click.echo(f"restored {rel} to revision {rev} (synced as a new revision)")


def here_or_by_owner(
    app: AppContext, vault: Path, kind: str, here: Callable[[Any], Any], **args: Any
) -> Any:
    """Do the work with this copy's lock: `here(engine)`, whose result is returned. When
    `companion watch` or the desktop app holds the lock, its engine does `kind` with `args`
    instead (`through_owner`) and its `requests.Outcome` is returned."""
    from companion.sync.service.lock import LockHeld

    lock = _locked(app, vault)
    try:
        lock.acquire()
    except LockHeld:
        return through_owner(app, vault, lock, kind, **args)
    try:
        with _open_engine(app, vault) as engine:
            try:
                return here(engine)
            except Exception as exc:
                _round_errors(exc)
                raise
    finally:
        lock.release()


def run_round(
    app: AppContext, vault: Path, *, allow_mass_delete: bool = False, rescan: bool = False
) -> Any:
    """One round here, or by the engine that owns the copy: its `RoundReport` either way.
    Here it scans every file; the owner may scan only what its watcher noted, unless
    `rescan` (`Daemon._watched_scope`)."""
    from companion.sync.round.report import RoundReport

    done = here_or_by_owner(
        app, vault, "round", lambda engine: engine.round(allow_mass_delete=allow_mass_delete),
        allow_mass_delete=allow_mass_delete, rescan=rescan,
    )  # fmt: skip
    return done if isinstance(done, RoundReport) else RoundReport.from_summary(done.report or {})


def _index(app: AppContext, vault: Path) -> Any:
    """This copy's sync index, opened beside the engine that owns it (SQLite allows that)."""
    from companion.sync.state.device import sync_index_path
    from companion.sync.state.index import SyncIndex

    return SyncIndex(sync_index_path(app.paths, os.path.realpath(vault)))


def _left_over(index: Any) -> tuple[list[Any], list[tuple[str, str]]]:
    """What a round could not sync: quarantined files, and remote changes with a problem."""
    return index.quarantine.rows(), [(r.path, r.problem) for r in index.inbox.rows() if r.problem]


def through_owner(app: AppContext, vault: Path, lock: Any, kind: str, **args: Any) -> Any:
    """Ask the engine that holds this copy's lock to do `kind` (`sync/service/requests.py`) and wait
    for it; its failure is raised with the exit status the work would have had here. A holder
    that takes no requests (another one-shot command) is `LockHeld` at once, exit 4."""
    from companion.sync.service import requests
    from companion.sync.state.device import DeviceState

    DeviceState.load(app.paths, os.path.realpath(vault))  # not set up: the init hint
    if not lock.owner_serves_requests():
        raise lock.held_elsewhere()
    holder = lock.holder() or {}
    click.echo(
        f"the companion syncing this copy (pid {holder.get('pid', '?')}) does it; waiting",
        err=True,
    )
    with _index(app, vault) as index:
        outcome = requests.by_owner(index, lock, kind, **args)
    requests.raise_for(outcome)
    return outcome
