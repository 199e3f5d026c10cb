"""The write tools: write_note, edit_note, append_journal, with the vault's rules for agents.

Every write, before anything touches the disk:
- the path is a note the agent may write (`companion.mcp.paths`);
- the text is bounded (`Limits`), is plain text (no NUL, no invisible or control characters
  that would hide text from the person: `companion.memory.guard.invisible_character`) and
  holds no secret (`companion.secrets`: the error names the line and the kind, never the value,
  and says how to keep it in the keyring instead);
- note and journal text passes the one injection guard (`companion.memory.guard.check_write`):
  no instruction to run or fetch code, hide things from the person, send data elsewhere,
  override the agent's role, stay in memory, ask for passwords or switch off safeguards;
- a note a person edited recently (`VaultContext.edited_recently`, the dream's rule) is never
  rewritten: `write_note` puts the text in a sibling note, `edit_note` and `append_journal` add
  it after the note's last line, and the result says so;
- a note that is not plain UTF-8, or mixes line endings, is never rewritten.
The write is an atomic replace (`companion.sync.local.atomic`) that refuses if the note changed
since it was read, so a concurrent edit is never overwritten and a refused call changes nothing.
Each landed write is remembered as the agent's own (never a person's edit) and recorded in the
agent-write log with its provenance (`companion.mcp.writelog`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from dataclasses import dataclass
from typing import Any

from companion.mcp.context import ToolRefused, VaultContext
from companion.mcp.paths import note_path, writable_note_path
from companion.mcp.writelog import AgentWrite, make_diff
from companion.sync.local.filestate import FileState
from companion.vault.journal import section_key, section_title
from companion.vault.sections import (
    Section,
    SectionError,
    add_section,
    all_sections,
    append_at_end,
    append_to_section,
    find_section,
    replace_section,
)

JOURNAL_KEYS = ("done", "decided", "learned")


@dataclass
class Current:
    """A note as read before a write: text with `\\n` line ends, and what it was on disk."""

    text: str | None
    state: FileState | None
    crlf: bool = False


def check_text(
    ctx: VaultContext,
    text: str,
    what: str = "text",
    *,
    empty_ok: bool = False,
    where: str | None = None,
) -> str:
    """`text` with `\\n` line ends, or a refusal (size, hidden characters, a secret, and for
    text an agent will read back, `where` given, the injection guard)."""
    if not isinstance(text, str):
        raise ToolRefused(f"{what} must be a string")
    if len(text) > ctx.limits.text_chars:
        raise ToolRefused(
            f"{what} is {len(text):,} characters, over the {ctx.limits.text_chars:,} one write "
            "may carry; split it into several notes. Nothing was written"
        )
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip() and not empty_ok:
        raise ToolRefused(f"{what} is empty; nothing was written")
    from companion.memory.guard import invisible_character

    hidden = invisible_character(text)
    if hidden is not None:
        raise ToolRefused(
            f"{what} refused: {hidden.detail}; such characters hide text from the person who "
            "reads the note. Nothing was written"
        )
    secret = ctx.secret_in(text)
    if secret is not None:
        line, kind = secret
        raise ToolRefused(
            f"{what} refused: line {line} holds a secret ({kind}). Secrets never go into notes: "
            "ask the person to store it with `companion secrets set NAME` (the value on standard "
            "input) and write `keyring:NAME` in the note instead. Nothing was written"
        )
    if where is not None:
        from companion.memory.guard import check_write

        finding = check_write(text, where=where)
        if finding is not None:
            raise ToolRefused(
                f"{what} refused by the injection guard: {finding.detail} [rule {finding.rule}]. "
                "Notes and the journal are read back by agents, so they must not carry "
                "instructions to run code, hide things from the person, send data elsewhere, "
                "override the agent's role, ask for passwords or switch off safeguards. "
                "Nothing was written"
            )
    return text


def early_check(ctx: VaultContext, text: object) -> None:
    """The write limits before the text is scanned (a refusal costs nothing then): the note a
    write leaves holds at least the text, so its bytes are a lower bound of the write's."""
    bound = len(text) - text.count("\r") if isinstance(text, str) else 0
    ctx.quota.check(size=bound, at_least=True)


def check_reason(ctx: VaultContext, reason: str) -> str:
    reason = " ".join((reason or "").split())
    if len(reason) > ctx.limits.reason_chars:
        raise ToolRefused(f"reason is longer than {ctx.limits.reason_chars} characters")
    return check_text(ctx, reason, "reason", empty_ok=True) if reason else ""


def load(ctx: VaultContext, rel: str) -> Current:
    """Read a note for a write: refuse what may not be rewritten."""
    target = ctx.root / rel
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return Current(None, None)
    except OSError as exc:
        raise ToolRefused(f"cannot read {rel}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        cap = ctx.limits.note_bytes
        if st.st_size > cap:
            raise ToolRefused(f"{rel} is larger than {cap:,} bytes; it is never rewritten")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolRefused(f"{rel} is not plain UTF-8 text; it is never rewritten") from None
    if "\x00" in raw:
        raise ToolRefused(f"{rel} is a binary file, not a note")
    crlf = "\r\n" in raw
    if crlf and raw.replace("\r\n", "").count("\n"):
        raise ToolRefused(f"{rel} mixes line endings; it is never rewritten")
    state = FileState.from_stat(st, hashlib.sha256(data).hexdigest())
    return Current(raw.replace("\r\n", "\n") if crlf else raw, state, crlf)


def _ago(ctx: VaultContext, rel: str) -> str:
    last = ctx.editors.last_human_edit(rel)
    if last is None:
        return "recently"
    minutes = max(0, int((ctx.now() - last).total_seconds() // 60))
    when = f"{minutes} min ago" if minutes < 120 else f"{minutes // 60} h ago"
    hours = ctx.human_window.total_seconds() / 3600
    return f"{when} (within the {hours:g} h during which a person's edit is never rewritten)"


def commit(
    ctx: VaultContext,
    *,
    tool: str,
    rel: str,
    current: Current,
    after: str,
    action: str,
    message: str,
    reason: str,
    requested: str = "",
    sent: int | None = None,
) -> dict[str, Any]:
    """Write `after` to `rel` if it is still what `current` read, within the agent's write
    limits (`companion.mcp.quota`: `sent` is the bytes of text the call carried, what counts
    toward `[mcp] bytes_per_day`; the whole note when not given); record it; the tool
    result."""
    if ctx.read_only:
        raise ToolRefused("this server is read-only (started with --read-only)")
    out_text = after.replace("\n", "\r\n") if current.crlf else after
    data = out_text.encode("utf-8")
    if len(data) > ctx.limits.note_bytes:
        raise ToolRefused(
            f"{rel} would grow to {len(data):,} bytes, over {ctx.limits.note_bytes:,}; start a "
            "new note instead. Nothing was written"
        )
    if current.text == after:
        return {"path": rel, "action": "unchanged", "message": "the note already holds this text"}
    size = len(data) if sent is None else sent
    from companion.mcp.scope import write_scope

    proposal = write_scope(ctx, rel)  # outside the agent's scope: held on the person's devices
    with ctx.quota.hold():  # the check, the write and its record: one write at a time
        ctx.quota.check(size=size, new=current.state is None)
        result = _land(
            ctx, tool=tool, rel=rel, current=current, after=after, data=data, action=action,
            message=message, reason=reason, requested=requested, size=size,
        )  # fmt: skip
    if proposal is not None:
        result["proposed"] = True
        result["message"] = f"{result['message']}. {proposal}"
    return result


def _land(
    ctx: VaultContext,
    *,
    tool: str,
    rel: str,
    current: Current,
    after: str,
    data: bytes,
    action: str,
    message: str,
    reason: str,
    requested: str,
    size: int,
) -> dict[str, Any]:
    from companion.sync.local.atomic import ChangedSinceScan, atomic_write
    from companion.sync.local.pathsafe import UnsafePath

    try:
        atomic_write(ctx.root, rel, data, current.state)
    except ChangedSinceScan:
        raise ToolRefused(
            f"{rel} changed while this write was prepared (someone is editing it); nothing was "
            "written: read it again and retry"
        ) from None
    except UnsafePath as exc:
        raise ToolRefused(str(exc)) from None
    except OSError as exc:
        raise ToolRefused(
            f"cannot write {rel}: {exc.strerror or exc}; nothing was written"
        ) from None
    ctx.record_own_write(rel, data)
    diff, truncated = make_diff(rel, current.text, after, ctx.has_secret)
    record = AgentWrite(
        tool=tool,
        path=rel,
        action=action,
        message=message,
        reason=reason,
        requested=requested or rel,
        client=ctx.client,
        before_sha256=current.state.sha256 if current.state else None,
        after_sha256=hashlib.sha256(data).hexdigest(),
        diff=diff,
        diff_truncated=truncated,
        size=size,
        new=current.state is None,
    )
    result: dict[str, Any] = {"path": rel, "action": action, "message": message}
    if requested and requested != rel:
        result["requested_path"] = requested
    try:
        ctx.log.record(record)
        result["recorded"] = True
    except OSError as exc:
        result["recorded"] = False
        result["warning"] = f"written, but not recorded for the morning review: {exc}"
    return result


# --- write_note ------------------------------------------------------------------------------


def _sibling(ctx: VaultContext, rel: str) -> tuple[str, Current]:
    """Where a rewrite of a note the person is editing goes: `<name> (agent).md`, reused while
    the person has not edited it, else `<name> (agent 2).md`, ..."""
    stem = rel[:-3]
    for n in range(1, 21):
        cand = f"{stem} (agent).md" if n == 1 else f"{stem} (agent {n}).md"
        cur = load(ctx, cand)
        if cur.text is None or not ctx.edited_recently(cand):
            return cand, cur
    raise ToolRefused(f"{rel}: twenty agent drafts beside it are all being edited; nothing written")


def write_note(ctx: VaultContext, path: str, text: str, reason: str) -> dict[str, Any]:
    rel = writable_note_path(ctx, path)
    early_check(ctx, text)
    text = check_text(ctx, text, where="mcp:note")
    reason = check_reason(ctx, reason)
    sent = len(text.encode("utf-8"))
    after = text if text.endswith("\n") else text + "\n"
    current = load(ctx, rel)
    if current.text is None:
        note_path(ctx, path, new=True)
        return commit(
            ctx, tool="write_note", rel=rel, current=current, after=after, action="created",
            message=f"created {rel}", reason=reason, sent=sent,
        )  # fmt: skip
    if current.text == after:
        return {"path": rel, "action": "unchanged", "message": "the note already holds this text"}
    if ctx.edited_recently(rel):
        sibling, cur = _sibling(ctx, rel)
        msg = (
            f"{rel} was edited by the person {_ago(ctx, rel)}, so it was not rewritten: your "
            f"text went to {sibling}. Tell the person, or add to the note with "
            "edit_note(mode='append')"
        )
        return commit(
            ctx, tool="write_note", rel=sibling, current=cur, after=after, action="sibling",
            message=msg, reason=reason, requested=rel, sent=sent,
        )  # fmt: skip
    return commit(
        ctx, tool="write_note", rel=rel, current=current, after=after, action="replaced",
        message=f"replaced the text of {rel}", reason=reason, sent=sent,
    )  # fmt: skip


# --- edit_note -------------------------------------------------------------------------------


def _last_section(text: str) -> Section | None:
    secs = all_sections(text)
    return max(secs, key=lambda s: s.heading) if secs else None


def edit_note(
    ctx: VaultContext, path: str, section: str, text: str, mode: str, reason: str
) -> dict[str, Any]:
    rel = writable_note_path(ctx, path)
    early_check(ctx, text)
    if mode not in ("replace", "append"):
        raise ToolRefused(f"mode {mode!r}: use 'replace' or 'append'")
    text = check_text(ctx, text, empty_ok=mode == "replace", where="mcp:note")
    reason = check_reason(ctx, reason)
    sent = len(text.encode("utf-8"))
    name = section.strip() if isinstance(section, str) else ""
    if not name or len(name) > 200 or "\n" in name:
        raise ToolRefused("section must be a heading's text (one line, at most 200 characters)")
    check_text(ctx, name, "section", where="mcp:note")
    current = load(ctx, rel)
    if current.text is None:
        raise ToolRefused(f"no note at {rel}; create it with write_note")
    try:
        found = find_section(current.text, name)
    except SectionError as exc:
        raise ToolRefused(f"{rel}: {exc}") from None
    title = name.split("#")[-1].strip().lstrip("#").strip()
    if ctx.edited_recently(rel):
        last = _last_section(current.text)
        if found is not None and last is not None and last.heading == found.heading:
            after = append_to_section(current.text, found, text)
        else:
            after = append_at_end(current.text, f"## {title}\n\n{text.strip()}")
        msg = (
            f"{rel} was edited by the person {_ago(ctx, rel)}, so nothing in it was changed: "
            f"your text was added after its last line, under '## {title}'"
        )
        return commit(
            ctx, tool="edit_note", rel=rel, current=current, after=after, action="appended",
            message=msg, reason=reason, sent=sent,
        )  # fmt: skip
    if found is None:
        if "#" in name.strip("#"):
            raise ToolRefused(
                f"{rel}: no section {name!r}; a nested one is created under its parent"
            )
        after = add_section(current.text, title, text)
        action, msg = "section_added", f"{rel}: added the section '## {title}' at the end"
    elif mode == "replace":
        after = replace_section(current.text, found, text)
        action, msg = "section_replaced", f"{rel}: replaced the section '{found.title}'"
    else:
        after = append_to_section(current.text, found, text)
        action, msg = "section_appended", f"{rel}: appended to the section '{found.title}'"
    return commit(
        ctx, tool="edit_note", rel=rel, current=current, after=after, action=action,
        message=msg, reason=reason, sent=sent,
    )  # fmt: skip


# --- append_journal --------------------------------------------------------------------------


def journal_key(section: str) -> str:
    key = section_key(section.strip()) if isinstance(section, str) else None
    if key is None and isinstance(section, str) and section.strip().lower() in JOURNAL_KEYS:
        key = section.strip().lower()
    if key not in JOURNAL_KEYS:
        raise ToolRefused(
            f"section {section!r}: use done, decided or learned (Hecho, Decidido, Aprendido)"
        )
    return key


def _language(ctx: VaultContext, today: dt.date) -> tuple[str, str]:
    """(language, journal tag) of the vault's journal, as the dream picks them
    (`dream.record.vault_language`, `journal_tag`), from the last week's days."""
    from companion.dream.record import journal_tag, vault_language

    texts = []
    for back in range(8):
        day = today - dt.timedelta(days=back)
        cur = ctx.root / "journal" / f"{day.isoformat()}.md"
        try:
            texts.append(cur.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return vault_language(texts, ctx.config), journal_tag(texts)


def _bullets(text: str) -> str:
    out = []
    for line in text.strip().split("\n"):
        s = line.strip()
        if not s:
            continue
        starts = s[:2] in ("- ", "* ", "+ ") or s.split(" ", 1)[0].rstrip(".)").isdigit()
        out.append(line.rstrip() if starts or line[:1] in (" ", "\t") else f"- {s}")
    return "\n".join(out)


def append_journal(ctx: VaultContext, section: str, text: str, reason: str) -> dict[str, Any]:
    from companion.dream.engine import dream_date, dream_timezone
    from companion.vault.layout import new_journal_text

    key = journal_key(section)
    early_check(ctx, text)
    text = check_text(ctx, text, where="mcp:journal")
    reason = check_reason(ctx, reason)
    today = dream_date(ctx.now(), dream_timezone(ctx.config))
    rel = f"journal/{today.isoformat()}.md"
    note_path(ctx, rel)
    lang, tag = _language(ctx, today)
    title = section_title(key, lang)
    body = _bullets(text)
    sent = len(body.encode("utf-8"))
    current = load(ctx, rel)
    base = current.text if current.text is not None else new_journal_text(today, tag)
    found = next((s for s in all_sections(base) if section_key(s.title) == key), None)
    recent = current.text is not None and ctx.edited_recently(rel)
    last = _last_section(base)
    if found is not None and (not recent or (last is not None and last.heading == found.heading)):
        after = append_to_section(base, found, body)
        where = f"under '{found.title}'"
    elif recent:
        after = append_at_end(base, f"## {title}\n\n{body}")
        where = (
            f"after its last line under a new '## {title}' (the person edited it {_ago(ctx, rel)})"
        )
    else:
        after = add_section(base, title, body)
        where = f"in a new section '## {title}'"
    verb = "created" if current.text is None else "added to"
    return commit(
        ctx, tool="append_journal", rel=rel, current=current, after=after, action="journal",
        message=f"{verb} today's journal {rel}, {where}", reason=reason, sent=sent,
    )  # fmt: skip
