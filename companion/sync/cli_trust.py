"""`companion trust`: device keys and the person's roster (docs/trust.md §3).

The person's devices vouch for each device's key and kind, so who wrote a record never rests on
the relay's word. Every command works on the vault folder's own files and this device's state;
the roster files it writes sync like any other file on the next round.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from companion.context import AppContext, pass_app
from companion.textsafe import shown

if TYPE_CHECKING:
    from companion.sync.trust import TrustContext

_VAULT = click.argument("vault", required=False, type=click.Path(file_okay=False, path_type=Path))
# before another argument, VAULT is required (else `accept FINGERPRINT` would read it as VAULT)
_VAULT_FIRST = click.argument("vault", type=click.Path(file_okay=False, path_type=Path))


def _ctx(app: AppContext, vault: Path | None) -> TrustContext:
    from companion.sync.cli import _vault
    from companion.sync.trust import TrustContext

    return TrustContext.open(app.paths, app.config, _vault(app, vault))


@click.group()
def trust() -> None:
    """Device keys: which devices are the person's, which are agents.

    Each device signs what it writes with its own key. The person's devices vouch for each
    device's key and kind in the vault's roster, so a relay (even together with an agent)
    cannot pass an agent off as the person. Compare fingerprints by eye, on both screens.

    \b
    Example (the laptop is the person's first device):
      laptop$ companion trust init ~/vault
      phone$  companion trust accept ~/vault TN4Y-IMNA-Q67B-65EX-RRWF-4XQM-H7EN
      laptop$ companion trust vouch ~/vault phone --kind human GCRE-...
      laptop$ companion trust vouch ~/vault server --kind agent 7MZQ-...
      laptop$ companion trust show ~/vault
    """


@trust.command()
@_VAULT
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_app
def show(app: AppContext, vault: Path | None, as_json: bool) -> None:
    """Show this device's key fingerprint, its anchor and the devices vouched for.

    The fingerprint is what the person types on another device (`trust accept` or
    `trust vouch`). Roster files that do not count are listed with why.

    \b
    Example:
      companion trust show ~/vault
      companion trust show ~/vault --json
    """
    from companion.sync.trust import trust_summary

    data = trust_summary(_ctx(app, vault))
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True))
        return
    fp = data["fingerprint"] or "no key yet (made on the next sync)"
    click.echo(f"this device:  {data['device_id']} ({data['kind']}), key {fp}")
    if not data["anchored"]:
        click.echo(
            "device keys:  not set up (who wrote a change is the relay's and the record's "
            "word; run `companion trust init` on the person's first device, `trust accept` "
            "on the others)"
        )
    else:
        a = data["anchor"]
        click.echo(f"anchor:       {shown(a['name'] or a['device_id'])} ({a['fingerprint']})")
        click.echo(f"vouched for ({len(data['trusted'])}):")
        for t in data["trusted"]:
            name = shown(t["name"] or "?")
            click.echo(f"  {t['device_id']}  {t['kind']:<6} {t['fingerprint']}  {name}")
    if data["unvouched_devices"]:
        click.echo(f"not vouched for ({len(data['unvouched_devices'])}; count as agents):")
        for d in data["unvouched_devices"]:
            click.echo(f"  {d['device_id']}  {d['fingerprint']}  {shown(d['name'])}")
    for n in data["not_vouched"]:
        click.echo(f"roster file not counted: {shown(n['file'])}.json: {n['why']}")


@trust.command()
@_VAULT
@pass_app
def init(app: AppContext, vault: Path | None) -> None:
    """Start the person's roster on this device (their first human device, once per vault).

    This device signs its own entry and trusts its own key from now on. Then, on each other
    device of the person, `companion trust accept VAULT FINGERPRINT` with the fingerprint
    printed here, and vouch for every device from here.

    \b
    Example:
      companion trust init ~/vault
    """
    from companion.sync.trust import trust_init

    anchor = trust_init(_ctx(app, vault))
    click.echo(f"roster started; this device's key fingerprint: {anchor.fingerprint}")
    click.echo("sync, then on the person's other devices: companion trust accept VAULT FINGERPRINT")


@trust.command()
@_VAULT_FIRST
@click.argument("fingerprint")
@pass_app
def accept(app: AppContext, vault: Path | None, fingerprint: str) -> None:
    """Trust the roster of the person's device whose key has FINGERPRINT.

    Read FINGERPRINT on that device (`companion trust show` there, or the plugin's settings);
    its announcement must have synced here.

    \b
    Example:
      companion trust accept ~/vault TN4Y-IMNA-Q67B-65EX-RRWF-4XQM-H7EN
    """
    from companion.sync.trust import trust_accept

    ctx = _ctx(app, vault)
    anchor = trust_accept(ctx, fingerprint)
    click.echo(f"this device now trusts the roster of {shown(anchor.name or anchor.device_id)}")
    own = ctx.key().fingerprint
    click.echo(
        f"vouch for this device from there: companion trust vouch VAULT "
        f"{ctx.device.device_id} --kind {ctx.device.kind} {own}"
    )


@trust.command()
@_VAULT_FIRST
@click.argument("device")
@click.argument("fingerprint", required=False)
@click.option(
    "--kind",
    required=True,
    type=click.Choice(["human", "agent", "revoked"]),
    help="What DEVICE is: the person's (human), an agent's, or withdrawn (revoked).",
)
@pass_app
def vouch(
    app: AppContext, vault: Path | None, device: str, fingerprint: str | None, kind: str
) -> None:
    """Vouch for DEVICE (its id or name) as KIND, if its key has FINGERPRINT.

    Read FINGERPRINT on DEVICE itself (`companion trust show` there). Nothing is signed unless
    it matches the key DEVICE announced in the vault. `--kind revoked` needs no fingerprint.

    \b
    Example:
      companion trust vouch ~/vault phone --kind human GCRE-...
      companion trust vouch ~/vault c3c3c3c3c3c3c3c3 --kind agent 7MZQ-...
      companion trust vouch ~/vault server --kind revoked
    """
    from companion.sync.trust import trust_vouch

    entry = trust_vouch(_ctx(app, vault), device, kind, fingerprint)
    what = "revoked" if kind == "revoked" else f"vouched for as {kind}"
    who = shown(entry.name or entry.device_id)
    click.echo(f"{who} ({entry.device_id}) {what}; sync to share it")
