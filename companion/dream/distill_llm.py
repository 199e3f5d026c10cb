"""The `llm` distiller: an OpenAI-compatible chat endpoint proposes, a deterministic check
disposes.

The dream sends numbered excerpts (journal items, user and assistant messages; lines the secret
gate flags are replaced by `[secret removed]` before anything leaves the machine) to
`{base_url}/chat/completions` and asks for JSON proposals, each citing one excerpt id and
quoting it verbatim. A proposal is kept only if:
- its quote (compared with whitespace collapsed and case folded) occurs in the cited excerpt;
- at least `GROUNDED_SHARE` of the informative words of its text occur in that excerpt (the
  model may shorten and tidy, not add facts);
- its kind is knowledge, decision or status.
Everything else is rejected and reported with the reason. Proposals are never promoted to the
injected memory on the model's word: only the rules (memory-tool adds, always/siempre markers,
recurrence) promote.

Budgets per dream, from `[llm]`: `max_tokens` (prompt and completion, from the server's
`usage` or estimated at 4 characters a token), `timeout_s` (wall time of the whole exchange)
and `retries` per request. Reaching a budget ends the exchange and keeps what came back; any
failure (endpoint down, HTTP error, bad JSON after the retries) drops the model's proposals
and the dream goes on with the `rules` distiller alone, saying so in its report. The rules
distiller always runs too: explicit markers and memory-tool calls never depend on a model.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from companion.dream.blocks import Ref
from companion.dream.model import Candidate, JournalEntry, Message, Provenance
from companion.dream.report import Skipped
from companion.dream.text import collapse, contains_quote, words
from companion.logs import get_logger, register_secret

log = get_logger("dream.llm")

GROUNDED_SHARE = 0.7
CHARS_PER_TOKEN = 4
BATCH_CHARS = 12_000
MAX_UNIT_CHARS = 2_000
COMPLETION_TOKENS = 1_500
API_KEY_NAME = "llm-api-key"
SYSTEM_PROMPT = """\
You read excerpts from an AI agent's daily journal and conversations, and pick out what is \
worth keeping in its long-term notes. Reply with one JSON object and nothing else:
{"proposals": [{"kind": "knowledge|decision|status", "text": "one self-contained sentence", \
"topic": "short topic or project name", "source": "S3", "quote": "words copied exactly from S3"}]}
Rules:
- knowledge: a lasting lesson or fact; decision: a decision about a named project; status: a \
project's current state.
- Every proposal cites exactly one excerpt id in "source" and copies a passage of that excerpt \
word for word in "quote". Never paraphrase the quote.
- "text" restates the quote; add nothing that the excerpt does not say.
- Never propose code, commands, credentials or personal data.
- At most 20 proposals. If nothing qualifies, reply {"proposals": []}.
"""


@dataclass(frozen=True)
class LlmSettings:
    base_url: str
    model: str
    max_tokens: int = 20_000
    timeout_s: float = 60.0
    retries: int = 2
    api_key: str | None = None


def settings_from_config(config: Any) -> LlmSettings:
    return LlmSettings(
        base_url=str(config.get("llm", "base_url") or "").rstrip("/"),
        model=str(config.get("llm", "model") or ""),
        max_tokens=int(config.get("llm", "max_tokens")),
        timeout_s=float(config.get("llm", "timeout_s")),
        retries=int(config.get("llm", "retries")),
        api_key=load_api_key(config),
    )


def load_api_key(config: Any) -> str | None:
    """`llm-api-key` from the secret store (keyring or the owner-only file), if any."""
    try:
        from companion.secrets.store import open_store  # noqa: PLC0415 - optional

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
    batches_done: int = 0
    tokens: int = 0


class LlmFailure(Exception):
    pass


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


def _parse_content(content: str) -> list[Any]:
    text = content.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.S)
    if fence:
        text = fence.group(1)
    data = json.loads(text)
    if isinstance(data, dict):
        data = data.get("proposals", [])
    if not isinstance(data, list):
        raise ValueError("the reply is not a list of proposals")
    return data


class _Client:
    def __init__(self, s: LlmSettings, deadline: float, clock: Callable[[], float]) -> None:
        self.s = s
        self.deadline = deadline
        self.clock = clock
        headers = {"Content-Type": "application/json"}
        if s.api_key:
            headers["Authorization"] = f"Bearer {s.api_key}"
        self.http = httpx.Client(headers=headers, follow_redirects=False)

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
            "response_format": {"type": "json_object"},
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
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                last = f"the reply is not the JSON asked for ({exc})"
            if attempt < self.s.retries:
                time.sleep(min(0.5 * 2**attempt, max(0.0, self.deadline - self.clock())))
        raise LlmFailure(last)


def _check(p: Any, units: dict[str, Unit]) -> tuple[Candidate | None, str | None, Unit | None]:
    if not isinstance(p, dict):
        return None, "not an object", None
    unit = units.get(str(p.get("source") or "").strip().strip("[]"))
    if unit is None:
        return None, "cites no excerpt it was given", None
    kind, text, quote = p.get("kind"), p.get("text"), p.get("quote")
    if kind not in ("knowledge", "decision", "status"):
        return None, f"unknown kind {kind!r}", unit
    if not isinstance(text, str) or not text.strip():
        return None, "no text", unit
    if not isinstance(quote, str) or not contains_quote(unit.text, quote):
        return None, "its quote is not in the cited source", unit
    tw = words(text)
    if tw and len(tw & words(unit.text)) / len(tw) < GROUNDED_SHARE:
        return None, "its text says more than the cited source", unit
    topic = p.get("topic") if isinstance(p.get("topic"), str) else None
    if topic and not words(topic) <= words(unit.text):
        topic = None
    prov = Provenance(unit.ref, collapse(quote), unit.time, unit.session)
    cand = Candidate(kind, collapse(text), [prov], "llm", topic=topic, day=unit.day, time=unit.time)
    if unit.session:
        (cand.days if unit.session.startswith("day:") else cand.sessions).add(
            unit.session[4:] if unit.session.startswith("day:") else unit.session
        )
    if unit.day is not None:
        cand.days.add(unit.day.isoformat())
    return cand, None, unit


def distill_llm(
    units: Sequence[Unit],
    settings: LlmSettings,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> LlmOutcome:
    out = LlmOutcome()
    if not settings.base_url or not settings.model:
        out.failed, out.note = True, "no [llm] base_url and model configured"
        return out
    batches = _batches(units)
    out.batches = len(batches)
    by_id = {u.sid: u for u in units}
    deadline = clock() + settings.timeout_s
    client = _Client(settings, deadline, clock)
    try:
        for batch in batches:
            prompt = _prompt(batch)
            est = (len(SYSTEM_PROMPT) + len(prompt)) // CHARS_PER_TOKEN
            room = settings.max_tokens - out.tokens - est
            if room < 200:
                out.note = f"token budget reached after {out.batches_done}/{out.batches} batches"
                break
            if clock() >= deadline:
                out.note = f"time budget reached after {out.batches_done}/{out.batches} batches"
                break
            try:
                proposals, used = client.complete(prompt, min(COMPLETION_TOKENS, room))
            except TimeoutError:
                out.note = f"time budget reached after {out.batches_done}/{out.batches} batches"
                break
            out.tokens += used
            out.batches_done += 1
            for p in proposals[:50]:
                cand, why, unit = _check(p, by_id)
                if cand is not None:
                    out.candidates.append(cand)
                    continue
                text = p.get("text") if isinstance(p, dict) else None
                refs = (
                    [
                        {
                            "source": unit.ref.source,
                            "line": unit.ref.line,
                            "message_id": unit.ref.message_id,
                        }
                    ]
                    if unit
                    else []
                )
                out.rejected.append(
                    Skipped(
                        "ungrounded",
                        f"model proposal rejected: {why}",
                        text if isinstance(text, str) else None,
                        p.get("kind") if isinstance(p, dict) else None,
                        refs,
                    )
                )
    except LlmFailure as exc:
        out.failed = True
        out.note = str(exc)
        out.candidates = []
        log.warning("llm distiller failed: %s", exc)
    finally:
        client.close()
    if not out.failed and out.batches and not out.batches_done:
        out.failed = True
        out.note = f"no answer within the budget: {out.note}"
    return out
