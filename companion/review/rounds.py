"""What a device does with the review notes after each sync round (docs/review.md).

- **Write the night's note.** The device that committed a night's dream report writes
  `review/DAY.md` at its next round, listing what the relay's history says agent devices
  changed since the previous note (`attest`). A person's device writes it instead when the
  dream's device has not within `GRACE_S` of the report (it crashed, or it is hostile).
- **Check it.** A person's device compares the note's changes with the relay's history over
  the note's own range; a note that hides, adds or alters a change is rewritten from the
  history, with every decision line kept, and says so.
- **Carry out decisions.** A tick counts only when the revision that made it was committed by
  a person's device (`blame`). The device that ticked carries out a revert, "keep mine" or
  "take the new value" itself; the device that dreamt applies or drops proposals (through
  the agent's memory lock). Each writes the outcome on the line. A tick an agent device wrote
  is cleared by a person's device, and the line says so.
- **Point at it.** Home.md starts with a link to the newest note while something waits.

Everything written here is an ordinary edit of this device, synced by the round that follows.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from companion.fileio import write_text_atomic
from companion.logs import get_logger
from companion.review import attest, blame, decide, hook, labels
from companion.review import note as notes
from companion.review.model import (
    APPLY,
    BY_DREAM_DEVICE,
    BY_TICKER,
    DROP,
    FOLDER,
    KEEP,
    REVERT,
    TAKE,
    Carried,
    ChangeItem,
    Disagreement,
    Line,
    ProposalItem,
    Review,
    change_id,
    is_review_path,
    night_id,
    note_path,
    proposal_item_id,
)

if TYPE_CHECKING:
    from companion.sync.remote.vault import RemoteChange, RemoteVault
    from companion.sync.round.engine import SyncEngine
    from companion.sync.round.report import RoundReport

log = get_logger("review")

GRACE_S = 600.0  # a person's device writes a missing note once the report is this old
ACTIVE_DAYS = 14  # notes older than the newest by more are left as they are (carried forward)
RECENT_DAYS = hook.RECENT_DAYS  # a report this much older than the newest gets no note
HOME = "Home.md"
BOOK = ".companion/dreams/proposals.json"  # the dream's proposals (companion.dream.proposals)
HOME_BEGIN = "<!-- review:begin -->"
HOME_END = "<!-- review:end -->"
HUMAN = "human"


@dataclass
class Device:
    """This device as the review sees it."""

    root: Path
    remote: RemoteVault
    device_id: str
    name: str
    kind: str
    tz: str
    config: Any = None
    now: Callable[[], float] = time.time
    written: set[str] = field(default_factory=set)
    seen: dict[str, str] = field(default_factory=dict)  # note path -> text hash processed
    seen_file: Path | None = None  # where `seen` is kept between processes (one-shot syncs)
    firsts: dict[str, Any] = field(default_factory=dict)  # report path -> its first revision
    _lang: str | None = None

    @property
    def human(self) -> bool:
        return self.kind == HUMAN

    @property
    def lang(self) -> str:
        if self._lang is None:
            self._lang = _vault_lang(self.root, self.config)
        return self._lang

    @lang.setter
    def lang(self, value: str) -> None:
        self._lang = value

    def read(self, rel: str) -> str | None:
        try:
            return (self.root / rel).read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError):
            return None

    def write(self, rel: str, text: str | None) -> None:
        path = self.root / rel
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, text)
        self.written.add(rel)


def device_for(engine: SyncEngine) -> Device:
    core = engine.core
    config = engine.config
    from companion.sync.state.device import vault_dir

    seen_file = vault_dir(engine.paths, core.root) / hook.SEEN_FILE
    return Device(
        root=core.root,
        remote=core.remote,
        device_id=core.device.device_id,
        name=core.device.device_name,
        kind=core.kind,
        tz=_tz(config),
        config=config,
        seen=_load_seen(seen_file),
        seen_file=seen_file,
    )


def _load_seen(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}


def _save_seen(dev: Device, before: dict[str, str]) -> None:
    """Keep what was looked at, so the next process (a one-shot `companion sync`) does not
    fetch every recent note's history again; the engine's own folder, never the vault."""
    if dev.seen_file is None or dev.seen == before:
        return
    notes_now = {rel for _, rel in note_files(dev.root)}
    keep = {k: v for k, v in dev.seen.items() if k in notes_now}
    try:
        write_text_atomic(dev.seen_file, json.dumps(keep, sort_keys=True))
    except OSError as exc:
        log.debug("review: cannot keep %s: %s", dev.seen_file, exc)


def _tz(config: Any) -> str:
    try:
        return str(config.settings.dream.timezone or "UTC")
    except AttributeError:
        return "UTC"


def _vault_lang(root: Path, config: Any) -> str:
    from companion.dream.record import vault_language

    journal = root / "journal"
    texts = []
    if journal.is_dir():
        for p in sorted(journal.glob("*.md"))[-7:]:
            try:
                texts.append(p.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
    try:
        return labels.language(vault_language(texts, config))
    except Exception:
        return "en"


def install(engine: SyncEngine) -> None:
    """Run the review's work after each round of `engine` that settles (one `Device` kept
    across rounds: a note is looked at again only when its text changed)."""
    dev = device_for(engine)

    def hook(engine: SyncEngine, report: RoundReport) -> set[str]:
        return after_round(dev)

    engine.after_round.append(hook)


def after_round(dev: Device) -> set[str]:
    """The review's work for one settled round; the vault paths it wrote."""
    dev.written = set()
    before = dict(dev.seen)
    try:
        write_missing(dev)
        carry_out(dev)
        _save_seen(dev, before)
        if dev.written:
            point_home(dev)
    except Exception as exc:  # the review never breaks sync: said, and tried next round
        log.warning("review: %s", exc)
    return set(dev.written)


# ------------------------------------------------------------------ the notes on disk


def note_files(root: Path) -> list[tuple[str, str]]:
    """(night, vault path) of every review note, oldest night first."""
    folder = root / FOLDER
    if not folder.is_dir():
        return []
    out = []
    for p in folder.glob("*.md"):
        night = p.stem
        try:
            dt.date.fromisoformat(night)
        except ValueError:
            continue
        out.append((night, f"{FOLDER}/{p.name}"))
    return sorted(out)


# ------------------------------------------------------------------ writing a night's note


def _oldest(remote: RemoteVault, rel: str) -> RemoteChange | None:
    from companion.sync.remote.vault import RemoteChange

    try:
        hist = remote.history(rel)
    except Exception:
        return None
    ok = [h for h in hist if isinstance(h, RemoteChange)]
    return ok[-1] if ok else None


def write_missing(dev: Device) -> None:
    from companion.dream.report import list_reports

    reports = list_reports(dev.root)
    newest = _day(reports[-1].stem) if reports else None
    for report in reports:
        night = report.stem
        day = _day(night)
        if day is None or newest is None or (newest - day).days > RECENT_DAYS:
            continue
        rel = note_path(night)
        if (dev.root / rel).exists():
            continue
        key = f".companion/dreams/{report.name}"
        first = dev.firsts.get(key) or _oldest(dev.remote, key)
        if first is None:
            continue  # not on the relay yet: nothing attests it
        dev.firsts[key] = first
        mine = first.device_id == dev.device_id
        late = dev.now() - (first.committed_at or dev.now()) > GRACE_S
        if not (mine or (dev.human and late)):
            continue
        review = build(dev, night, dream_device=first.device_id, report_time=first.committed_at)
        dev.write(rel, notes.render(review))
        log.info("review: wrote %s (%d changes)", rel, len(review.changes))


def relay_seq(remote: RemoteVault) -> int:
    page = remote.client.changes_page(0, 0, limit=1)
    return int(page.vault_seq)


def build(
    dev: Device,
    night: str,
    *,
    dream_device: str | None,
    report_time: float | None,
    to_seq: int | None = None,
    from_seq: int | None = None,
    since: int | None = None,
) -> Review:
    """The night's review from the relay's history: bounds taken from the previous note
    (or given, to check an existing note against its own)."""
    earlier = [(n, rel) for n, rel in note_files(dev.root) if n < night]
    if to_seq is None:
        to_seq = relay_seq(dev.remote)
    if from_seq is None:
        from_seq, since = 0, None
        if earlier:
            front = notes.front_matter(dev.read(earlier[-1][1]) or "")
            from_seq = _int(front.get("to"))
        if not from_seq:  # the first review: from a person's first write, and a day and a half
            first = attest.first_human_seq(dev.remote, to_seq)
            from_seq = max(0, first - 1) if first is not None else 0
            since = int((report_time or dev.now()) - 36 * 3600)
    feed = attest.agent_spans(
        dev.remote,
        from_seq,
        to_seq,
        not_before=since,
        include=(lambda ch: ch.device_id == dream_device) if dream_device else None,
    )
    from_report = attest.report_notes(dev.root, night, dev.lang)
    from_log = attest.log_notes(dev.root, dev.lang)

    def explain(span: attest.Span, after: str | None) -> list[str]:
        return [*from_report.get(span.path, []), *from_log(span)]

    changes = attest.changes(dev.remote, feed, dev.tz, explain)
    earlier_texts = [(n, dev.read(rel) or "") for n, rel in earlier]
    return Review(
        night=night,
        from_seq=from_seq,
        to_seq=to_seq,
        lang=dev.lang,
        tz=dev.tz,
        since=since,
        changes=changes,
        disagreements=attest.disagreements(changes),
        proposals=_proposals(dev.root, night, earlier_texts),
        carried=_carried(dev.root, earlier_texts),
    )


def _day(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _listed(texts: list[tuple[str, str]]) -> set[str]:
    return {ln.id for _, text in texts for ln in notes.parse_lines(text)}


def _proposals(root: Path, night: str, earlier: list[tuple[str, str]]) -> list[ProposalItem]:
    from companion.dream.proposals import load_book, pending

    listed = _listed(earlier)
    out = []
    for p in pending(load_book(root)):
        item = proposal_item_id(str(p["id"]))
        if str(p.get("night") or "") > night or item in listed:
            continue
        out.append(
            ProposalItem(
                id=item,
                pid=str(p["id"]),
                file=str(p.get("file") or p.get("target")),
                op=str(p.get("op") or "add"),
                old=p.get("old") if isinstance(p.get("old"), str) else None,
                new=p.get("new") if isinstance(p.get("new"), str) else None,
                reason=str(p.get("reason") or ""),
                quote=p.get("quote") if isinstance(p.get("quote"), str) else None,
            )
        )
    return out


def _carried(root: Path, earlier: list[tuple[str, str]]) -> list[Carried]:
    """Each undecided line of an earlier note, once (from the night it was first listed);
    a proposal decided some other way (`companion dream proposals`) is not carried."""
    from companion.dream.proposals import load_book, pending

    waiting = {proposal_item_id(str(p["id"])) for p in pending(load_book(root))}
    decided: set[tuple[str, str]] = set()
    first: dict[tuple[str, str], Carried] = {}
    for night, text in earlier:
        lang = notes.front_matter(text).get("lang") or "en"
        for ln in notes.parse_lines(text):
            if ln.final:
                decided.add(ln.key)
                continue
            if ln.id.startswith("n-") or ln.key in first:
                continue
            if ln.id.startswith("p-") and ln.id not in waiting:
                continue
            ctx = notes.context(text, ln, lang)
            if ctx.night:  # itself carried: it belongs to the night it names
                first[ln.key] = Carried(ln.id, ln.code, _carried_label(ln), ctx.night)
                continue
            label = ln.label.strip()
            if ctx.target and "[[" not in label:
                label = f"{label}: [[{ctx.target}]]"
            first[ln.key] = Carried(ln.id, ln.code, label, night)
    return [c for k, c in first.items() if k not in decided]


def _carried_label(ln: Line) -> str:
    label = ln.label.strip()
    cut = label.rfind(" (")
    return label[:cut] if cut > 0 else label


# ------------------------------------------------------------------ carrying out decisions


def _revisions(dev: Device, rel: str) -> list[blame.Revision]:
    """The note's retained revisions, oldest first, with their verified contents."""
    from companion.sync.remote.vault import RemoteChange

    hist = [h for h in dev.remote.history(rel) if isinstance(h, RemoteChange)]
    hist.reverse()
    got = dev.remote.fetch([h.meta for h in hist if not h.deleted])
    return [
        blame.Revision(
            rev=h.rev,
            device_id=h.device_id or "",
            device=h.author_name,
            kind=h.author_kind,
            text=None if h.deleted else got[h.meta.sha256].decode("utf-8", errors="replace"),
        )
        for h in hist
    ]


def carry_out(dev: Device) -> None:
    dreamer: list[str | None] = []  # asked of the relay once, when a proposal line needs it
    files = note_files(dev.root)
    newest = _day(files[-1][0]) if files else None
    for night, rel in files:
        text = dev.read(rel)
        if text is None or dev.seen.get(rel) == decide.sha(text):
            continue
        day = _day(night)
        if day is None or newest is None or (newest - day).days > ACTIVE_DAYS:
            dev.seen[rel] = decide.sha(text) or ""  # left as it is: looked at, for the hook
            continue
        waiting = [ln for ln in notes.parse_lines(text) if ln.ticked and not ln.final]
        if not waiting and not dev.human:
            dev.seen[rel] = decide.sha(text) or ""
            continue
        revs = _revisions(dev, rel)
        if not revs or revs[-1].text != text:
            continue  # an edit not on the relay yet: its round comes first
        if dev.human:
            checked = _check(dev, night, rel, text, revs)
            if checked != text:  # rewritten: the same lines (states kept), at other places
                waiting = [ln for ln in notes.parse_lines(checked) if ln.ticked and not ln.final]
            text = checked
        if not waiting:
            if text == dev.read(rel):  # nothing to do until the note changes
                dev.seen[rel] = decide.sha(text) or ""
            continue
        who = blame.ticks(revs)
        lang = notes.front_matter(text).get("lang") or dev.lang
        for ln in waiting:
            tick = who.get(ln.key)
            if tick is None:
                continue
            if tick.kind != HUMAN:
                if dev.human:
                    notice = f"{notes.NOTICE} " + labels.text(
                        lang, "out_agent_tick", device=tick.device
                    )
                    text = notes.set_outcome(text, ln.key, notice, ticked=False)
                continue
            if ln.code in BY_TICKER and tick.device_id == dev.device_id:
                text = _decide_note(dev, rel, text, ln, tick, lang)
            elif ln.code in BY_DREAM_DEVICE:
                if not dreamer:
                    dreamer.append(_dream_device(dev))
                if dreamer[0] != dev.device_id:
                    continue
                text = _decide_proposal(dev, rel, text, ln, tick, lang)
        if text != dev.read(rel):
            dev.write(rel, notes.recount(text))
        else:
            dev.seen[rel] = decide.sha(text) or ""


def _dream_device(dev: Device) -> str | None:
    """The device that dreams: the one that committed the proposals book's newest revision."""
    rel = BOOK
    if not (dev.root / rel).exists():
        return None
    try:
        head = dev.remote.head(rel)
    except Exception:
        return None
    return head.device_id if head is not None else None


def _stamp(dev: Device) -> str:
    return dt.datetime.fromtimestamp(dev.now(), attest.zone(dev.tz)).strftime("%H:%M")


def _decide_note(dev: Device, rel: str, text: str, ln: Line, tick: blame.Tick, lang: str) -> str:
    """Revert, keep mine or take the new value, here (the device that ticked)."""
    if ln.id.startswith("n-"):  # revert the whole night: its own changes still open, newest first
        done = 0
        for other in reversed(notes.parse_lines(text)):
            own = "[[" not in other.label  # not a line carried from an earlier night
            if other.code == REVERT and other.id.startswith("c-") and own and not other.final:
                text, ok = _one(dev, rel, text, other, tick, lang)
                done += ok
        return notes.set_outcome(
            text,
            ln.key,
            labels.text(lang, "out_done", time=_stamp(dev), device=tick.device),
            ticked=True,
        )
    text, _ = _one(dev, rel, text, ln, tick, lang)
    return text


def _one(
    dev: Device, rel: str, text: str, ln: Line, tick: blame.Tick, lang: str
) -> tuple[str, bool]:
    ctx = notes.context(text, ln, lang)
    source_text = text
    if ctx.night and ctx.night != Path(rel).stem:  # carried: read the item where it was listed
        earlier = dev.read(note_path(ctx.night)) or ""
        found = [x for x in notes.parse_lines(earlier) if x.key == ln.key]
        if found:
            source_text = earlier
            ctx = notes.context(earlier, found[0], notes.front_matter(earlier).get("lang") or lang)
    path = _path_of(dev.root, ctx.target)
    stamp = _stamp(dev)
    if path is None:
        result = decide.Result(False, refusal="gone")
    elif ln.code == REVERT:
        change = _attested_change(dev, path, ln.id)
        result = (
            decide.revert(dev.read(path), change)
            if change is not None
            else decide.Result(False, refusal="gone")
        )
    else:
        d = Disagreement(ln.id, path, "", ctx.new or "", ctx.mine)
        fn = decide.keep_mine if ln.code == KEEP else decide.take_new
        result = fn(dev.read(path), d) if ctx.new else decide.Result(False, refusal="gone")
    if result.ok and path is not None:
        dev.write(path, result.text)
        key = {REVERT: "out_reverted", KEEP: "out_kept", TAKE: "out_taken"}[ln.code]
        outcome = labels.text(lang, key, time=stamp, device=tick.device)
    else:
        key = "out_edited" if result.refusal == "edited" else "out_gone"
        outcome = labels.text(lang, key, time=stamp)
    text = notes.set_outcome(text, ln.key, outcome, ticked=True)
    if source_text is not text and ctx.night:
        _mark_elsewhere(dev, note_path(ctx.night), ln.key, rel, lang)
    return text, result.ok


def _mark_elsewhere(dev: Device, other_rel: str, key: tuple[str, str], rel: str, lang: str) -> None:
    other = dev.read(other_rel)
    if other is None:
        return
    outcome = labels.text(lang, "out_elsewhere", link=notes.link(rel))
    new = notes.set_outcome(other, key, outcome, ticked=True)
    if new != other:
        dev.write(other_rel, new)


def _path_of(root: Path, target: str | None) -> str | None:
    if not target:
        return None
    if target.endswith(".md") or (root / target).is_file():
        return target
    return target + ".md"


def _attested_change(dev: Device, path: str, item_id: str) -> ChangeItem | None:
    """The change `item_id` names, found again in the relay's history of `path`: a span of
    revisions all committed by agent devices (or the dreaming device) whose id matches."""
    from companion.sync.remote.vault import RemoteChange

    try:
        hist = [h for h in dev.remote.history(path) if isinstance(h, RemoteChange)]
    except Exception:
        return None
    hist.reverse()
    fid = dev.remote.file_id(path)
    for j, last in enumerate(hist):
        for i in range(j, -1, -1):
            first = hist[i]
            if change_id(fid, first.parent_rev, last.rev) == item_id:
                span = attest.Span(path, fid, first, last)
                before, known, after = attest.contents(dev.remote, [span])[0]
                return ChangeItem(
                    item_id, path, fid, first.parent_rev, last.rev, before, after,
                    last.author_name, last.author_kind, "", known,
                )  # fmt: skip
    return None


def _decide_proposal(
    dev: Device, rel: str, text: str, ln: Line, tick: blame.Tick, lang: str
) -> str:
    """Apply or drop proposals, here (the device that dreams), through the memory lock."""
    from companion.dream import proposals as props
    from companion.memory.home import memory_stores

    book = props.load_book(dev.root)
    by_item = {proposal_item_id(str(p["id"])): str(p["id"]) for p in book}
    if ln.id.startswith("n-"):
        keys = [
            x.key for x in notes.parse_lines(text)
            if x.id.startswith("p-") and x.code == APPLY and not x.final and "[[" not in x.label
        ]  # fmt: skip
    else:
        keys = [ln.key]
    stores = memory_stores(dev.config)
    stamp = _stamp(dev)
    for item, code in keys:
        pid = by_item.get(item)
        if pid is None:
            text = notes.set_outcome(
                text, (item, code), labels.text(lang, "out_gone", time=stamp), ticked=True
            )
            continue
        action = "apply" if code == APPLY else "drop"
        [o] = props.decide(dev.root, stores, action, [pid], device=tick.device)
        if o.result in (props.APPLIED, props.DROPPED):
            key = "out_applied" if o.result == props.APPLIED else "out_dropped"
            outcome = labels.text(lang, key, time=stamp, device=tick.device)
            other = DROP if code == APPLY else APPLY
            text = notes.set_outcome(text, (item, other), outcome, ticked=False)
        elif o.result == "unknown":
            outcome = labels.text(lang, "out_gone", time=stamp)
        else:
            outcome = labels.text(lang, "out_refused", why=o.why or o.result, time=stamp)
        text = notes.set_outcome(text, (item, code), outcome, ticked=True)
        dev.written.add(props.book_path(dev.root).relative_to(dev.root).as_posix())
    if ln.id.startswith("n-"):
        text = notes.set_outcome(
            text,
            ln.key,
            labels.text(lang, "out_done", time=stamp, device=tick.device),
            ticked=True,
        )
    return text


# ------------------------------------------------------------------ checking a note


def _check(dev: Device, night: str, rel: str, text: str, revs: list[blame.Revision]) -> str:
    """A person's device: the note's changes against the relay's history over the note's own
    range; a note that differs is rewritten from the history, its decision lines kept."""
    if all(r.kind == HUMAN for r in revs):
        return text  # only people's devices wrote it
    front = notes.front_matter(text)
    earlier = [(n, r) for n, r in note_files(dev.root) if n < night]
    prev_to = _int(notes.front_matter(dev.read(earlier[-1][1]) or "").get("to")) if earlier else 0
    from_seq = _int(front.get("from"))
    to_seq = _int(front.get("to"))
    since = _int(front.get("since")) or None
    problems = []
    if earlier and from_seq != prev_to:
        problems.append(f"its range starts at {from_seq}, the previous review ends at {prev_to}")
        from_seq = prev_to
    writer = next((r.device for r in reversed(revs) if r.kind != HUMAN), "?")
    report = _oldest(dev.remote, f".companion/dreams/{night}.json")
    dream_device = report.device_id if report is not None else None
    if to_seq <= 0:
        to_seq = relay_seq(dev.remote)
    saved_lang, saved_tz = dev.lang, dev.tz
    dev.lang = labels.language(front.get("lang") or dev.lang)
    dev.tz = front.get("tz") or dev.tz  # the note's own words and clock, to compare like with like
    try:
        truth = build(
            dev, night, dream_device=dream_device, report_time=None,
            to_seq=to_seq, from_seq=from_seq, since=since,
        )  # fmt: skip
    finally:
        dev.lang, dev.tz = saved_lang, saved_tz
    shown = {ln.id for ln in notes.parse_lines(text) if ln.id.startswith("c-")}
    real = {c.id for c in truth.changes}
    hidden, forged = real - shown, shown - real - _carried_ids(text)
    if hidden:
        problems.append(f"{len(hidden)} change(s) left out")
    if forged:
        problems.append(f"{len(forged)} change(s) the history does not hold")
    shown_blocks = notes.change_blocks(text)
    true_blocks = notes.change_blocks(notes.render(truth))
    altered = [i for i in real & shown if shown_blocks.get(i) != true_blocks.get(i)]
    if altered:
        problems.append(f"{len(altered)} change(s) shown otherwise than the history holds")
    if not problems:
        return text
    states = notes.states_of(text)
    truth.carried = [c for c in truth.carried if c.id not in real]
    truth.notice = labels.text(
        truth.lang, "repaired", device=dev.name, writer=writer, what="; ".join(problems)
    )
    fixed = notes.render(truth, states)
    log.warning("review: %s did not match the relay's history (%s): rewritten", rel, problems)
    dev.write(rel, fixed)
    return fixed


def _carried_ids(text: str) -> set[str]:
    out = set()
    for ln in notes.parse_lines(text):
        if "[[review/" in ln.label or "[[" in ln.label:
            out.add(ln.id)
    return out


# ------------------------------------------------------------------ Home.md


def point_home(dev: Device) -> None:
    """Home.md starts with a link to the newest note that has something waiting, or nothing."""
    home = dev.read(HOME)
    if home is None:
        return
    newest = None
    for night, rel in reversed(note_files(dev.root)):
        text = dev.read(rel) or ""
        if any(not ln.final for ln in notes.parse_lines(text)):
            newest = (night, rel, notes.front_matter(text).get("lang") or dev.lang)
            break
    block = ""
    if newest is not None:
        night, rel, lang = newest
        title = labels.text(lang, "title", night=night)
        block = f"{HOME_BEGIN}\n> [!todo] [[{rel[:-3]}|{title}]]\n{HOME_END}\n\n"
    start, end = home.find(HOME_BEGIN), home.find(HOME_END)
    if start != -1 and end != -1:
        rest = home[end + len(HOME_END) :].lstrip("\n")
        new = home[:start] + block + rest
    else:
        new = block + home if block else home
    if new != home:
        dev.write(HOME, new)


def ensure_folder(root: Path) -> None:
    os.makedirs(root / FOLDER, exist_ok=True)


__all__ = ["after_round", "build", "install", "is_review_path", "night_id"]
