"""The `llm` distiller's protocol, against a local STAND-IN for an OpenAI-compatible endpoint
(a tiny HTTP server on 127.0.0.1 in this test; no real model is involved).

The stand-in reads the numbered excerpts the dream sends and answers with canned proposals: one
grounded (its quote is in the cited excerpt), one whose quote is not in its source, one whose
text says more than its source. It can also fail, hang or answer garbage.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from companion.config import NotifySettings, load_config
from companion.dream.blocks import Ref
from companion.dream.distill_llm import (
    PROPOSALS_SCHEMA,
    RESPONSE_FORMAT,
    LlmSettings,
    Unit,
    distill_llm,
)
from companion.dream.engine import run_dream
from companion.dream.ledger import Ledger
from companion.dream.verify import verify_vault
from companion.paths import device_paths
from tests.fixtures.dream import NOW, SECRET, build, config_dict

# (a quote found in the fixture's excerpts, a restatement that changes what it says)
CHANGED_MEANING = [
    ("the BME280 answers on I2C address 0x76", "The BME280 answers on I2C address 0x77."),
    ("nightly backups run with restic at 03:00", "Nightly backups run with restic at 04:00."),
    ("run the test suite before pushing to main", "Never run the test suite before pushing."),
    (
        "The official 5.1 V supply stops the brown-outs",
        "The official 5 V supply stops the brown-outs.",
    ),
    (
        "containers on the same user-defined network resolve each other by name",
        "Containers on the same user-defined network sometimes resolve each other by name.",
    ),
]


class StandIn:
    """A stand-in OpenAI-compatible chat endpoint with canned answers."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n))
                stand_in.requests.append(body)
                stand_in.headers.append(dict(self.headers))
                if stand_in.mode == "error":
                    self.send_response(500)
                    self.end_headers()
                    return
                if stand_in.mode == "slow":
                    time.sleep(3)
                if stand_in.mode == "schema400" and (
                    body["response_format"]["type"] != "json_object"
                    or "schema" in body["response_format"]
                ):
                    # as llama-cpp-python's server answers an unknown type, then a 422
                    first = len(stand_in.requests) == 1
                    err = b'{"error": {"message": "response_format: type json_schema"}}'
                    self.send_response(500 if first else 422)
                    self.send_header("Content-Length", str(len(err)))
                    self.end_headers()
                    self.wfile.write(err)
                    return
                if stand_in.mode == "garbage":
                    content = "Sure! Here are some thoughts, not JSON."
                elif stand_in.mode == "offschema" or (
                    stand_in.mode == "first-offschema" and len(stand_in.requests) == 1
                ):
                    content = json.dumps({"answer": "the weather is nice", "score": 3})
                else:
                    content = json.dumps({"proposals": stand_in.proposals(body)})
                data = json.dumps(
                    {
                        "id": "stand-in",
                        "object": "chat.completion",
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": content}}
                        ],
                        "usage": {"total_tokens": 500},
                    }
                ).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @staticmethod
    def excerpts(body: dict[str, Any]) -> dict[str, str]:
        prompt = body["messages"][-1]["content"]
        out = {}
        for m in re.finditer(r"\[(S\d+)\] \([^)]*\)\n(.*?)(?=\n\n\[S\d+\] |\Z)", prompt, re.S):
            out[m.group(1)] = m.group(2)
        return out

    def proposals(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for sid, text in self.excerpts(body).items():
            if "Restic backups need a prune policy" in text:
                out.append(
                    {
                        "kind": "knowledge",
                        "source": sid,
                        "topic": "Backups",
                        "text": "Restic backups need a prune policy on the NAS.",
                        "quote": "Restic backups need a prune policy",
                    }
                )
                out.append(
                    {
                        "kind": "knowledge",
                        "source": sid,
                        "topic": "Backups",
                        "text": "Restic backups are encrypted with AES-256.",
                        "quote": "restic encrypts everything with AES-256",
                    }
                )
            if "Fixed the brown-outs" in text:
                out.append(
                    {
                        "kind": "knowledge",
                        "source": sid,
                        "topic": "",
                        "text": "Brown-outs were caused by a cheap charger bought online "
                        "from a shady vendor in 2019.",
                        "quote": "Fixed the brown-outs",
                    }
                )
                out.append(
                    {
                        "kind": "knowledge",
                        "source": sid,
                        "topic": "",
                        "text": "Brown-outs were caused by a cheap charger bought online "
                        "from a shady vendor.",
                        "quote": "Fixed the brown-outs",
                    }
                )
            out.extend(self.changed_meaning(sid, text))
        return [{"topic": "", **p} for p in out]

    @staticmethod
    def changed_meaning(sid: str, text: str) -> list[dict[str, Any]]:
        """Proposals whose quote is real but whose text changes a value, a negation or a
        hedge of it (what a small model does)."""
        out = []
        for quote, wrong in CHANGED_MEANING:
            if quote in text:
                out.append({"kind": "knowledge", "source": sid, "text": wrong, "quote": quote})
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in():
    s = StandIn()
    yield s
    s.close()


def _setup(tmp_path: Path, url: str, **llm: Any):
    fx = build(tmp_path / "fx")
    paths = device_paths()
    cfg = config_dict(fx, distiller="llm")
    cfg["llm"] = {"base_url": url, "model": "stand-in", "timeout_s": 5, "retries": 1, **llm}
    cfg["secrets"] = {"backend": "file"}
    paths.config_file.parent.mkdir(parents=True, exist_ok=True)
    paths.config_file.write_text(tomlkit.dumps(cfg), encoding="utf-8")
    return fx, paths, load_config(paths)


def test_grounded_proposal_kept_ungrounded_rejected(tmp_path, stand_in):
    fx, paths, config = _setup(tmp_path, stand_in.url)
    rep = run_dream(fx.vault, config, NOW, paths=paths)
    assert rep.distiller == "llm" and stand_in.requests
    backups = (fx.vault / "knowledge/Backups.md").read_text(encoding="utf-8")
    assert "Restic backups need a prune policy on the NAS." in backups
    assert "AES-256" not in backups
    assert "shady vendor" not in json.dumps([c.to_dict() for c in rep.changes])
    rejected = {s.text: s.reason for s in rep.skipped if s.code == "ungrounded"}
    assert (
        "its quote is not in the cited source"
        in rejected["Restic backups are encrypted with AES-256."]
    )
    assert any("says more than the cited source" in r for r in rejected.values())
    assert (
        "'2019' is not in its quote"
        in rejected[
            "Brown-outs were caused by a cheap charger bought online from a shady vendor in 2019."
        ]
    )
    # a changed number, negation or hedge is never kept, whatever the word overlap (item 9)
    for _quote, wrong in CHANGED_MEANING:
        assert "changes what its quote says" in rejected[wrong], wrong
    written = json.dumps([c.to_dict() for c in rep.changes])
    assert not any(wrong in written for _q, wrong in CHANGED_MEANING)
    # rules still ran: explicit markers are consolidated whatever the model says
    assert "0x76" in (fx.vault / "knowledge/Raspberry Pi setup.md").read_text(encoding="utf-8")
    assert verify_vault(fx.vault).ok  # the model's line resolves through its recorded quote
    note = fx.vault / "knowledge/Backups.md"
    altered = backups.replace("policy on the NAS.", "policy in the cloud.")
    note.write_text(altered, "utf-8")
    result = verify_vault(fx.vault)  # a person changed it: theirs (issue 40), not a failure
    assert result.ok and [c.status for c in result.checks if "cloud" in c.text] == ["edited"]
    ledger = Ledger.load(fx.vault)  # had the dream written it so, it would resolve only...
    ledger.wrote("knowledge/Backups.md", backups, altered, "2026-11-28")
    ledger.save()
    assert not verify_vault(fx.vault).ok  # ...through that exact line, not any text citing it
    note.write_text(backups, "utf-8")
    sent = json.dumps(stand_in.requests)
    assert SECRET not in sent and "[secret removed]" in sent
    assert stand_in.requests[0]["model"] == "stand-in"
    fmt = stand_in.requests[0]["response_format"]  # structured output (item 10)
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == PROPOSALS_SCHEMA
    assert rep.llm is not None and rep.llm["status"] == "ok" and rep.llm["json_schema"]
    assert rep.llm["kept"] >= 1 and rep.llm["rejected"] >= 8


def test_api_key_comes_from_the_secret_store(tmp_path, stand_in):
    from companion.credentials.store import FileStore

    fx, paths, config = _setup(tmp_path, stand_in.url)
    FileStore(paths.secrets_file).set("llm-api-key", "sk-standin-0123456789abcdefghij")
    run_dream(fx.vault, config, NOW, paths=paths)
    assert stand_in.headers[0].get("Authorization") == "Bearer sk-standin-0123456789abcdefghij"


@pytest.mark.parametrize("mode", ["down", "error", "garbage", "slow"])
def test_failures_fall_back_to_rules_and_say_so(tmp_path, mode):
    s = StandIn("ok" if mode == "down" else mode)
    url = s.url
    if mode == "down":
        s.close()  # nothing listens there any more
    try:
        fx, paths, config = _setup(tmp_path, url, timeout_s=1, retries=1)
        t0 = time.monotonic()
        rep = run_dream(fx.vault, config, NOW, paths=paths)
        assert time.monotonic() - t0 < 10
    finally:
        if mode != "down":
            s.close()
    assert rep.distiller == "rules"
    assert "llm distiller failed" in (rep.distiller_note or "")
    assert any(c.kind == "consolidated" for c in rep.run_changes)  # the dream went on
    assert "prune policy on the NAS" not in (fx.vault / "knowledge/Backups.md").read_text("utf-8")
    if mode == "error":
        assert len(s.requests) == 2  # one retry, then give up


def test_token_budget_bounds_the_exchange(tmp_path, stand_in):
    fx, paths, config = _setup(tmp_path, stand_in.url, max_tokens=50)
    rep = run_dream(fx.vault, config, NOW, paths=paths)
    assert stand_in.requests == []
    assert rep.distiller == "rules" and "token budget reached" in (rep.distiller_note or "")


def test_batches_stop_at_the_token_budget():
    units = [
        Unit(f"S{i}", Ref("journal/x.md", i), "journal", "lesson text " * 200) for i in range(1, 30)
    ]
    s = StandIn()
    try:
        out = distill_llm(units, LlmSettings(s.url, "stand-in", max_tokens=3000, timeout_s=5))
    finally:
        s.close()
    assert not out.failed and out.batches > out.batches_done >= 1
    assert "token budget" in out.note and len(s.requests) == out.batches_done


def test_an_off_schema_reply_is_a_failure_in_the_report_and_the_notification(tmp_path):
    """Item 10: unrelated JSON is not "1 batch" of success: the batch failed, the report says
    so, and so does the morning notification."""
    from companion.gui.events import DreamLanded
    from companion.gui.notify_policy import notifications_for

    s = StandIn("offschema")
    try:
        fx, paths, config = _setup(tmp_path, s.url, retries=1)
        rep = run_dream(fx.vault, config, NOW, paths=paths)
    finally:
        s.close()
    assert len(s.requests) == 2  # one retry
    assert rep.distiller == "rules" and "off-schema" in (rep.distiller_note or "")
    assert rep.llm is not None and rep.llm["status"] == "failed"
    assert rep.llm["failed"] and "proposals" in rep.llm["failed"][0]["why"]
    data = json.loads(rep.path.read_text(encoding="utf-8"))
    assert data["counts"]["llm_failed"] == 1 and data["llm"]["answered"] == 0
    event = DreamLanded(rep.path, data["date"], data["ran_on"], dict(data["counts"]))
    (note,) = notifications_for([event], NotifySettings(morning_time="00:00"), dt.datetime.now())
    assert "model" in note.body and "failed" in note.body


def test_one_off_schema_batch_is_reported_and_the_others_kept():
    units = [
        Unit(f"S{i}", Ref("journal/x.md", i), "journal", f"Lesson {i}: " + "word " * 2900)
        for i in range(1, 4)
    ]
    s = StandIn("first-offschema")
    try:
        out = distill_llm(
            units, LlmSettings(s.url, "stand-in", max_tokens=100_000, timeout_s=10, retries=0)
        )
    finally:
        s.close()
    assert not out.failed and out.batches == 3 and out.batches_done == 2
    summary = out.summary()
    assert summary["status"] == "partial" and [f["batch"] for f in summary["failed"]] == [1]
    assert "1 batch(es) failed (off-schema" in out.describe()


def test_an_item_off_schema_is_rejected_alone(tmp_path, stand_in):
    fx, paths, config = _setup(tmp_path, stand_in.url)
    original = stand_in.proposals

    def with_bad_item(body):
        out = original(body)
        if out:
            out.append(
                {"kind": "knowledge", "source": out[0]["source"], "topic": "", "text": "No quote."}
            )
        return out

    stand_in.proposals = with_bad_item  # type: ignore[method-assign]
    rep = run_dream(fx.vault, config, NOW, paths=paths)
    reasons = [s.reason for s in rep.skipped if s.text == "No quote."]
    assert reasons and "off-schema" in reasons[0] and "'quote' is a required property" in reasons[0]
    assert "Restic backups need a prune policy on the NAS." in (
        fx.vault / "knowledge/Backups.md"
    ).read_text(encoding="utf-8")


def test_an_endpoint_without_json_schema_gets_a_json_object_request(tmp_path):
    s = StandIn("schema400")
    try:
        fx, paths, config = _setup(tmp_path, s.url)
        rep = run_dream(fx.vault, config, NOW, paths=paths)
    finally:
        s.close()
    assert [r["response_format"] for r in s.requests[:3]] == [
        RESPONSE_FORMAT,
        {"type": "json_object", "schema": PROPOSALS_SCHEMA},
        {"type": "json_object"},
    ]
    assert rep.distiller == "llm" and rep.llm is not None and rep.llm["json_schema"] is False
    assert "Restic backups need a prune policy on the NAS." in (
        fx.vault / "knowledge/Backups.md"
    ).read_text(encoding="utf-8")


def test_verify_rechecks_the_meaning_of_a_model_line(tmp_path):
    """Item 9: a model-written line whose number differs from its recorded quote is
    unresolved, even though the quote is in the source."""
    vault = tmp_path / "v"
    (vault / "journal").mkdir(parents=True)
    (vault / "knowledge").mkdir()
    (vault / "journal/2026-11-27.md").write_text(
        "# 2026-11-27\n\n## Learned\n- The server publishes on 127.0.0.1 by default.\n", "utf-8"
    )
    server = (
        "# Server\n\n<!-- dream:begin -->\n- The server publishes on 0.0.0.0 by default. "
        "<!-- src: journal/2026-11-27.md#L4 -->\n<!-- dream:end -->\n"
    )
    (vault / "knowledge/Server.md").write_text(server, "utf-8")
    report = {
        "version": 1,
        "date": "2026-11-28",
        "changes": [
            {
                "id": "c1",
                "kind": "consolidated",
                "note": "knowledge/Server.md",
                "before": None,
                "after": server,  # the dream wrote the line (the ledger is rebuilt from this)
                "provenance": [
                    {
                        "source": "journal/2026-11-27.md",
                        "line": 4,
                        "message_id": None,
                        "quote": "The server publishes on 127.0.0.1 by default.",
                        "written": "The server publishes on 0.0.0.0 by default.",
                    }
                ],
            }
        ],
    }
    (vault / ".companion/dreams").mkdir(parents=True)
    (vault / ".companion/dreams/2026-11-28.json").write_text(json.dumps(report), "utf-8")
    result = verify_vault(vault)
    assert not result.ok
    (problem,) = [c for c in result.checks if c.status == "unresolved"]
    assert "0.0.0.0" in problem.detail
