"""Where a source is, without an absolute path: what the report and the notes' provenance say.

A vault syncs to other devices and people read its notes; a line's provenance must name its
source without naming this machine's folders or the person's account (issue 40). Journal
lines are vault-relative already. A transcript is named by its kind and its path as configured,
the home folder written `~` (`companion.dream.read.SourceSpec.name`); a path outside the home
folder is written from the root it belongs to instead:

- inside the Hermes home, when `HERMES_HOME` names it: `$HERMES_HOME/...`
  (`hermes:$HERMES_HOME/state.db`), which `--verify` resolves wherever `HERMES_HOME` names
  that home;
- anywhere else (`/srv/logs`), by a label and the path inside the source: `jsonl:@lab`,
  `claude:@projects/app/s1.jsonl`. The label is the `[dream] sources` item's `name`, or the
  source's own file or folder name (`read.source_labels`: unique, whatever the order of the
  sources), and `--verify` maps it back through `[dream] sources` (`read.find_messages`).

`scrub` writes this machine's folders out of the report's free text (warnings, skip reasons,
explanations): the vault's as vault-relative, the Hermes home's as `$HERMES_HOME`, a source's
as its short name, the home folder's as `~`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from companion.dream.model import Message


def _under(path: Path, root: Path) -> str | None:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def _env_home_is(home: Path) -> bool:
    """`$HERMES_HOME` names `home` here (so `--verify` in this environment reads the same
    state.db, never another home's)."""
    env = os.environ.get("HERMES_HOME")
    return bool(env) and os.path.realpath(os.path.expanduser(str(env))) == os.path.realpath(home)


def portable_path(path: Path, *, vault: Path, hermes_home: Path | None) -> str:
    """`path` (absolute) written from its root: `~/...`, `$HERMES_HOME/...`, vault-relative,
    or (none of those) its own name."""
    path = Path(os.path.abspath(path))
    if hermes_home is not None and _env_home_is(hermes_home):
        rel = _under(path, Path(os.path.abspath(hermes_home)))
        if rel is not None and not _under(Path(os.path.abspath(hermes_home)), Path.home()):
            return "$HERMES_HOME" + ("/" + rel if rel != "." else "")
    home_rel = _under(path, Path.home())
    if home_rel is not None:
        return "~" + ("/" + home_rel if home_rel != "." else "")
    rel = _under(path, Path(os.path.abspath(vault)))
    if rel is not None and rel != ".":
        return rel
    return path.name or "source"


def _resolvable(name: str) -> bool:
    """`--verify` (`read.find_messages`) can find the source by this name on this machine."""
    return name.startswith(("~", "$HERMES_HOME"))


def source_names(
    specs: Iterable[object], *, vault: Path, hermes_home: Path | None
) -> dict[str, str]:
    """{provenance name as read: portable name} for each configured source whose name would
    hold an absolute path (`read.SourceSpec`)."""
    from companion.dream.read import SourceSpec, source_labels  # noqa: PLC0415

    specs = list(specs)
    label_of = {
        str(real): label
        for label, real in source_labels(s for s in specs if isinstance(s, SourceSpec)).items()
    }
    out: dict[str, str] = {}
    for spec in specs:
        name = str(getattr(spec, "name", ""))
        kind, _, path = name.partition(":")
        if not path or not os.path.isabs(path):
            continue
        real = Path(getattr(spec, "real_path", path))
        short = portable_path(real, vault=vault, hermes_home=hermes_home)
        if _resolvable(short):
            out[name] = f"{kind}:{short}"
        elif str(Path(os.path.abspath(real))) in label_of:
            out[name] = f"{kind}:@{label_of[str(Path(os.path.abspath(real)))]}"
    return out


def rename_sources(messages: Iterable[Message], names: dict[str, str]) -> None:
    """Give each message of a renamed source (or of a file inside a renamed folder) its
    portable provenance name."""
    if not names:
        return
    for m in messages:
        new = names.get(m.source)
        if new is not None:
            m.source = new
            continue
        for old, short in names.items():
            if m.source.startswith(old.rstrip("/") + "/"):
                m.source = short.rstrip("/") + m.source[len(old.rstrip("/")) :]
                break


def source_roots(
    specs: Iterable[object], *, vault: Path, hermes_home: Path | None
) -> list[tuple[str, str]]:
    """(absolute path, portable name) of each configured source, for `scrub`."""
    specs = list(specs)
    names = source_names(specs, vault=vault, hermes_home=hermes_home)
    out = []
    for spec in specs:
        real = getattr(spec, "real_path", None)
        if real is not None and os.path.isabs(str(real)):
            labelled = names.get(str(getattr(spec, "name", "")), "").partition(":")[2]
            short = labelled or portable_path(Path(real), vault=vault, hermes_home=hermes_home)
            out.append((os.path.abspath(real), short))
    return out


def scrub(
    text: str,
    *,
    vault: Path,
    hermes_home: Path | None,
    sources: Iterable[tuple[str, str]] = (),
) -> str:
    """`text` with this machine's folders written from their roots (a source's as its
    portable name, the vault's as nothing, the Hermes home's as `$HERMES_HOME`, the home
    folder's as `~`)."""
    roots: list[tuple[str, str]] = sorted(sources, key=lambda r: -len(r[0]))
    roots.append((os.path.abspath(vault) + os.sep, ""))
    roots.append((os.path.abspath(vault), "the vault"))
    if hermes_home is not None:
        roots.append((os.path.abspath(hermes_home), "$HERMES_HOME"))
    roots.append((str(Path.home()), "~"))
    for root, short in roots:
        if len(root) > 1 and root in text:
            text = text.replace(root, short)
    return text
