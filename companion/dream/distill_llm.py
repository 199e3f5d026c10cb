"""The `llm` distiller: an OpenAI-compatible chat endpoint proposes, a deterministic check
disposes.

The dream sends numbered excerpts (journal items, user and assistant messages; lines the secret
gate flags are replaced by `[secret removed]` before anything leaves the machine) to
`{base_url}/chat/completions` and asks for JSON proposals, each citing one excerpt id and
quoting it verbatim. The request asks for structured output (`response_format` with the JSON
schema `PROPOSALS_SCHEMA`, which llama.cpp's server, Ollama and vLLM honour; an endpoint that
refuses it is asked for `json_object` with the schema, as llama-cpp-python's server takes it,
then for a plain JSON object), and every reply is validated
against that schema whatever the endpoint promised: a reply that is not an object with a
`proposals` list is a failed batch (retried, then reported), an item that does not fit the
schema is rejected. A proposal is kept only if:
- its quote (compared with whitespace collapsed and case folded) occurs in the cited excerpt;
- every value of its text (number, time, date, IP address, version, path, identifier) is in
  its quote as it is, and its text has the same negations and hedges as its quote
  (`companion.dream.meaning.grounding_problem`; `--verify` checks the same again);
- at least `GROUNDED_SHARE` of the informative words of its text occur in that excerpt (the
  model may shorten and tidy, not add facts);
- its kind is knowledge, decision or status.
Everything else is rejected and reported with the reason. Proposals are never promoted to the
injected memory on the model's word: only the rules (memory-tool adds, always/siempre markers,
recurrence) promote. The report's `llm` section says, per batch, whether it was answered and
in how long, how many proposals came back, were kept and rejected.

Budgets per dream, from `[llm]`: `max_tokens` (prompt and completion, from the server's
`usage` or estimated at 4 characters a token), `timeout_s` (wall time of the whole exchange)
and `retries` per request. Reaching a budget ends the exchange and keeps what came back; a batch
whose reply is off-schema after the retries is reported and the others are kept; a failure of
the endpoint (down, HTTP error) or of every batch drops the model's proposals and the dream
goes on with the `rules` distiller alone, saying so in its report and the morning
notification. The rules distiller always runs too: explicit markers and memory-tool calls
never depend on a model.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import jsonschema  # type: ignore[import-untyped]

from companion.dream.blocks import Ref
from companion.dream.meaning import grounding_problem
from companion.dream.model import Candidate, JournalEntry, Message, Provenance
from companion.dream.report import Skipped
from companion.dream.text import collapse, contains_quote, words
from companion.logs import get_logger, register_secret
from companion.memory import guard

if TYPE_CHECKING:
    from companion.config import Config

log = get_logger("dream.llm")

GROUNDED_SHARE = 0.7
CHARS_PER_TOKEN = 4
BATCH_CHARS = 12_000
MAX_UNIT_CHARS = 2_000
COMPLETION_TOKENS = 1_500
API_KEY_NAME = "llm-api-key"
SYSTEM_PROMPT = """\
You read numbered excerpts ([S1], [S2], ...) from an AI agent's daily journal and \
conversations, and pick out what is worth keeping in its long-term notes. Reply with one JSON \
object with a "proposals" list and nothing else. Each proposal has:
- "kind": "knowledge" (a lasting lesson or fact), "decision" (a decision about a named \
project) or "status" (a project's current state);
- "source": the id of the one excerpt it comes from, such as "S2";
- "quote": a passage copied word for word from that excerpt, never paraphrased;
- "text": one self-contained sentence that restates the quote and adds nothing to it (keep \
every number, name, negation and "usually"/"may" exactly as the quote has them);
- "topic": a short topic or project name from the excerpt, or "".
For example, from the excerpt [S9] "lesson: the garage door motor needs oil every spring." \
the proposal is {"kind": "knowledge", "source": "S9", "quote": "the garage door motor needs \
oil every spring", "text": "The garage door motor needs oil every spring.", "topic": "Garage"}.
Never propose code, commands, credentials or personal data. At most 20 proposals; if \
nothing qualifies, reply {"proposals": []}.
"""


@dataclass(frozen=True)
class LlmSettings:
    base_url: str
    model: str
    max_tokens: int = 20_000
    timeout_s: float = 60.0
    retries: int = 2
    api_key: str | None = None


def settings_from_config(config: Config) -> LlmSettings:
    return LlmSettings(
        base_url=str(config.settings.llm.base_url or "").rstrip("/"),
        model=str(config.settings.llm.model or ""),
        max_tokens=int(config.settings.llm.max_tokens),
        timeout_s=float(config.settings.llm.timeout_s),
        retries=int(config.settings.llm.retries),
        api_key=load_api_key(config),
    )


def load_api_key(config: Config) -> str | None:
    """`llm-api-key` from the secret store (keyring or the owner-only file), if any."""
    try:
        from companion.credentials.store import open_store  # noqa: PLC0415 - optional

        key = open_store(config).get(API_KEY_NAME)
    except Exception:  # noqa: BLE001 - no store, no keyring, no key: local endpoints need none
        return None
    if key:
        register_secret(key)
    return key or None


@dataclass
class Unit:
    sid: str
    ref: Ref
    label: str
    text: str
    time: Any = None
    session: str | None = None
    day: Any = None


@dataclass
class LlmOutcome:
    candidates: list[Candidate] = field(default_factory=list)
    rejected: list[Skipped] = field(default_factory=list)
    failed: bool = False
    note: str = ""
    batches: int = 0
    batches_done: int = 0  # answered with a reply that fits the schema
    tokens: int = 0
    model: str = ""
    # per batch sent: {"batch", "units", "status": answered|failed, "why", "seconds",
    # "proposals", "kept", "rejected"}
    log: list[dict[str, Any]] = field(default_factory=list)
    schema_refused: bool = False

    @property
    def failed_batches(self) -> list[dict[str, Any]]:
        return [b for b in self.log if b["status"] == "failed"]

    def summary(self) -> dict[str, Any]:
        """The report's `llm` section."""
        return {
            "model": self.model,
            "status": "failed"
            if self.failed
            else "partial"
            if self.failed_batches or self.batches_done < self.batches
            else "ok",
            "note": self.note or None,
            "batches": self.batches,
            "answered": self.batches_done,
            "failed": [{"batch": b["batch"], "why": b["why"]} for b in self.failed_batches],
            "proposals": sum(b.get("proposals", 0) for b in self.log),
            "kept": len(self.candidates),
            "rejected": len(self.rejected),
            "tokens": self.tokens,
            "seconds": [b["seconds"] for b in self.log],
            "json_schema": not self.schema_refused,
        }

    def describe(self) -> str:
        """One line for the report's `distiller_note`."""
        s = self.summary()
        line = (
            f"llm: {s['answered']}/{s['batches']} batch(es) answered, {s['proposals']} "
            f"proposal(s), {s['kept']} kept, {s['rejected']} rejected, about {s['tokens']} tokens"
        )
        if s["failed"]:
            line += f"; {len(s['failed'])} batch(es) failed ({s['failed'][0]['why']})"
        if self.note and not (s["failed"] and self.note == s["failed"][0]["why"]):
            line += f"; {self.note}"
        return line


class LlmFailure(Exception):
    """The endpoint cannot be used (down, refusing, out of budget): the exchange ends."""


class BatchFailed(Exception):
    """One batch got no reply that fits the schema within its retries; the others go on."""


def _redact_lines(text: str, is_secret: Callable[[str], bool]) -> str:
    return "\n".join("[secret removed]" if is_secret(ln) else ln for ln in text.split("\n"))


def build_units(
    entries: Sequence[JournalEntry], messages: Sequence[Message], is_secret: Callable[[str], bool]
) -> list[Unit]:
    units: list[Unit] = []
    for e in entries:
        units.append(
            Unit(
                f"S{len(units) + 1}",
                e.ref(),
                f"{e.path}, {e.section or 'note'}",
                _redact_lines(e.text, is_secret),
                None,
                f"day:{e.day.isoformat()}",
                e.day,
            )
        )
    for m in messages:
        if m.role not in ("user", "assistant") or not m.text.strip():
            continue
        text = _redact_lines(m.text, is_secret)[:MAX_UNIT_CHARS]
        units.append(
            Unit(
                f"S{len(units) + 1}",
                m.ref(),
                f"{m.kind} session {m.session}, {m.role}",
                text,
                m.time,
                f"{m.source}#{m.session}",
                m.time.date(),
            )
        )
    return units


def _batches(units: Sequence[Unit]) -> list[list[Unit]]:
    out: list[list[Unit]] = []
    cur: list[Unit] = []
    size = 0
    for u in units:
        n = len(u.text) + len(u.label) + 16
        if cur and size + n > BATCH_CHARS:
            out.append(cur)
            cur, size = [], 0
        cur.append(u)
        size += n
    if cur:
        out.append(cur)
    return out


def _prompt(batch: Sequence[Unit]) -> str:
    return "\n\n".join(f"[{u.sid}] ({u.label})\n{u.text}" for u in batch)


PROPOSALS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "proposals": {
            "type": "array",
            "maxItems": 20,
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["knowledge", "decision", "status"]},
                    "text": {"type": "string", "minLength": 1},
                    "topic": {"type": "string"},
                    "source": {"type": "string", "pattern": "^S[0-9]+$"},
                    "quote": {"type": "string", "minLength": 1},
                },
                "required": ["kind", "text", "topic", "source", "quote"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["proposals"],
    "additionalProperties": False,
}
RESPONSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "dream_proposals", "strict": True, "schema": PROPOSALS_SCHEMA},
}
_REPLY = jsonschema.Draft202012Validator(
    {**PROPOSALS_SCHEMA, "properties": {"proposals": {"type": "array"}}}
)
_ITEM = jsonschema.Draft202012Validator(PROPOSALS_SCHEMA["properties"]["proposals"]["items"])


class OffSchema(ValueError):
    """A reply that is not the JSON object the schema asks for."""


def _parse_content(content: str) -> list[Any]:
    """The proposals of a reply; `OffSchema` unless it is an object with a proposals list
    (each item is checked on its own later: one bad item does not sink the batch)."""
    text = content.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.S)
    if fence:
        text = fence.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OffSchema(f"not JSON ({exc.msg})") from None
    err = next(iter(_REPLY.iter_errors(data)), None)
    if err is not None:
        where = "/".join(str(p) for p in err.absolute_path) or "the reply"
        raise OffSchema(f"{where}: {err.message[:120]}")
    return list(data["proposals"])


def item_problem(p: Any) -> str | None:
    """Why one proposal does not fit the schema, or None."""
    err = next(iter(_ITEM.iter_errors(p)), None)
    if err is None:
        return None
    where = "/".join(str(x) for x in err.absolute_path)
    return f"off-schema ({where + ': ' if where else ''}{err.message[:100]})"


class _Client:
    def __init__(self, s: LlmSettings, deadline: float, clock: Callable[[], float]) -> None:
        self.s = s
        self.deadline = deadline
        self.clock = clock
        headers = {"Content-Type": "application/json"}
        if s.api_key:
            headers["Authorization"] = f"Bearer {s.api_key}"
        self.http = httpx.Client(headers=headers, follow_redirects=False)
        self.response_format: dict[str, Any] = RESPONSE_FORMAT
        self.fallbacks: list[dict[str, Any]] = [
            {"type": "json_object", "schema": PROPOSALS_SCHEMA},
            {"type": "json_object"},
        ]
        self.schema_refused = False

    def close(self) -> None:
        self.http.close()

    def complete(self, prompt: str, max_completion: int) -> tuple[list[Any], int]:
        body = {
            "model": self.s.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt},
            ],
            "temperature": 0,
            "max_tokens": max_completion,
            "response_format": self.response_format,
        }
        last = "no attempt"
        for attempt in range(self.s.retries + 1):
            left = self.deadline - self.clock()
            if left <= 0:
                raise TimeoutError("time budget reached")
            try:
                r = self.http.post(
                    f"{self.s.base_url}/chat/completions", json=body, timeout=httpx.Timeout(left)
                )
                refused_format = self.fallbacks and (
                    r.status_code in (400, 422)
                    or (r.status_code == 500 and "response_format" in r.text[:2000])
                )  # llama-cpp-python's server answers 500 to a type it does not know
                if refused_format:
                    # an endpoint that takes no `json_schema`: the schema the older way
                    # (`json_object` with `schema`, as llama-cpp-python's server takes it),
                    # then a plain JSON object; every reply is validated here anyway
                    self.response_format = self.fallbacks.pop(0)
                    self.schema_refused = "schema" not in self.response_format
                    return self.complete(prompt, max_completion)
                if r.status_code == 429 or r.status_code >= 500:
                    last = f"HTTP {r.status_code}"
                elif r.status_code >= 400:
                    raise LlmFailure(f"the endpoint refused the request (HTTP {r.status_code})")
                else:
                    data = r.json()
                    content = data["choices"][0]["message"]["content"]
                    usage = data.get("usage") or {}
                    tokens = int(usage.get("total_tokens") or 0) or (
                        (len(SYSTEM_PROMPT) + len(prompt) + len(content)) // CHARS_PER_TOKEN
                    )
                    return _parse_content(content or ""), tokens
            except httpx.TimeoutException:
                last = "timed out"
            except httpx.TransportError as exc:
                last = f"cannot reach {self.s.base_url} ({type(exc).__name__})"
            except OffSchema as exc:
                last = f"off-schema reply ({exc})"
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                last = f"the reply is not the JSON asked for ({exc})"
            if attempt < self.s.retries:
                time.sleep(min(0.5 * 2**attempt, max(0.0, self.deadline - self.clock())))
        if last.startswith(("off-schema", "the reply is not")):
            raise BatchFailed(last)
        raise LlmFailure(last)


def _check(p: Any, units: dict[str, Unit]) -> tuple[Candidate | None, str | None, Unit | None]:
    unit = (
        units.get(str(p.get("source") or "").strip().strip("[]")) if isinstance(p, dict) else None
    )
    off = item_problem(p)
    if off is not None:
        return None, off, unit
    if unit is None:
        return None, "cites no excerpt it was given", None
    kind, text, quote = p["kind"], p["text"], p["quote"]
    if not text.strip():
        return None, "no text", unit
    if not contains_quote(unit.text, quote):
        return None, "its quote is not in the cited source", unit
    changed = grounding_problem(text, quote)
    if changed is not None:
        return None, f"its text changes what its quote says: {changed}", unit
    tw = words(text)
    if tw and len(tw & words(unit.text)) / len(tw) < GROUNDED_SHARE:
        return None, "its text says more than the cited source", unit
    topic = p.get("topic") or None
    if topic and not words(topic) <= words(unit.text):
        topic = None
    refused = guard.check_write(text, where="proposal")  # the one injection guard (issue 40)
    if refused is not None:
        return None, f"refused by the injection guard [rule {refused.rule}]", unit
    prov = Provenance(unit.ref, collapse(quote), unit.time, unit.session)
    cand = Candidate(kind, collapse(text), [prov], "llm", topic=topic, day=unit.day, time=unit.time)
    if unit.session:
        (cand.days if unit.session.startswith("day:") else cand.sessions).add(
            unit.session[4:] if unit.session.startswith("day:") else unit.session
        )
    if unit.day is not None:
        cand.days.add(unit.day.isoformat())
    return cand, None, unit


def _rejected(p: Any, why: str, unit: Unit | None) -> Skipped:
    text = p.get("text") if isinstance(p, dict) else None
    kind = p.get("kind") if isinstance(p, dict) else None
    refs = (
        [{"source": unit.ref.source, "line": unit.ref.line, "message_id": unit.ref.message_id}]
        if unit
        else []
    )
    return Skipped(
        "ungrounded",
        f"model proposal rejected: {why}",
        text if isinstance(text, str) else None,
        kind if isinstance(kind, str) else None,
        refs,
    )


def distill_llm(
    units: Sequence[Unit],
    settings: LlmSettings,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> LlmOutcome:
    out = LlmOutcome(model=settings.model)
    if not settings.base_url or not settings.model:
        out.failed, out.note = True, "no [llm] base_url and model configured"
        return out
    batches = _batches(units)
    out.batches = len(batches)
    by_id = {u.sid: u for u in units}
    deadline = clock() + settings.timeout_s
    client = _Client(settings, deadline, clock)
    try:
        for n, batch in enumerate(batches, 1):
            prompt = _prompt(batch)
            est = (len(SYSTEM_PROMPT) + len(prompt)) // CHARS_PER_TOKEN
            room = settings.max_tokens - out.tokens - est
            if room < 200:
                out.note = f"token budget reached after {n - 1}/{out.batches} batches"
                break
            if clock() >= deadline:
                out.note = f"time budget reached after {n - 1}/{out.batches} batches"
                break
            entry: dict[str, Any] = {"batch": n, "units": len(batch), "why": None}
            t0 = time.perf_counter()
            try:
                proposals, used = client.complete(prompt, min(COMPLETION_TOKENS, room))
            except TimeoutError:
                out.note = f"time budget reached after {n - 1}/{out.batches} batches"
                break
            except BatchFailed as exc:
                entry.update(status="failed", why=str(exc), proposals=0, kept=0, rejected=0)
                entry["seconds"] = round(time.perf_counter() - t0, 3)
                out.log.append(entry)
                log.warning("llm batch %d failed: %s", n, exc)
                continue
            entry["seconds"] = round(time.perf_counter() - t0, 3)
            out.tokens += used
            out.batches_done += 1
            kept = 0
            for p in proposals[:50]:
                cand, why, unit = _check(p, by_id)
                if cand is not None:
                    out.candidates.append(cand)
                    kept += 1
                else:
                    out.rejected.append(_rejected(p, why or "rejected", unit))
            entry.update(
                status="answered",
                proposals=len(proposals),
                kept=kept,
                rejected=min(len(proposals), 50) - kept,
            )
            out.log.append(entry)
    except LlmFailure as exc:
        out.failed = True
        out.note = str(exc)
        out.candidates = []
        log.warning("llm distiller failed: %s", exc)
    finally:
        out.schema_refused = client.schema_refused
        client.close()
    if not out.failed and out.batches and not out.batches_done:
        out.failed = True
        why = out.failed_batches[0]["why"] if out.failed_batches else out.note
        out.note = f"no answer within the budget: {out.note}" if not out.log else str(why)
    return out
