"""The `llm` distiller's protocol, against a local STAND-IN for an OpenAI-compatible endpoint
(a tiny HTTP server on 127.0.0.1 in this test; no real model is involved).

The stand-in reads the numbered excerpts the dream sends and answers with canned proposals: one
grounded (its quote is in the cited excerpt), one whose quote is not in its source, one whose
text says more than its source. It can also fail, hang or answer garbage.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from companion.config import load_config
from companion.dream.blocks import Ref
from companion.dream.distill_llm import LlmSettings, Unit, distill_llm
from companion.dream.engine import run_dream
from companion.dream.verify import verify_vault
from companion.paths import device_paths
from tests.fixtures.dream import NOW, SECRET, build, config_dict


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
                if stand_in.mode == "garbage":
                    content = "Sure! Here are some thoughts, not JSON."
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
                        "text": "Brown-outs were caused by a cheap charger bought online "
                        "from a shady vendor in 2019.",
                        "quote": "Fixed the brown-outs",
                    }
                )
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
    paths.config_file.write_text(tomli_w.dumps(cfg), encoding="utf-8")
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
    # rules still ran: explicit markers are consolidated whatever the model says
    assert "0x76" in (fx.vault / "knowledge/Raspberry Pi setup.md").read_text(encoding="utf-8")
    assert verify_vault(fx.vault).ok  # the model's line resolves through its recorded quote
    note = fx.vault / "knowledge/Backups.md"
    note.write_text(backups.replace("policy on the NAS.", "policy in the cloud."), "utf-8")
    assert not verify_vault(fx.vault).ok  # ...that exact line, not any text citing the source
    note.write_text(backups, "utf-8")
    sent = json.dumps(stand_in.requests)
    assert SECRET not in sent and "[secret removed]" in sent
    assert stand_in.requests[0]["model"] == "stand-in"
    assert stand_in.requests[0]["response_format"] == {"type": "json_object"}


def test_api_key_comes_from_the_secret_store(tmp_path, stand_in):
    from companion.secrets.store import FileStore

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
