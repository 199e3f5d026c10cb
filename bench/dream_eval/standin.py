"""A STAND-IN for an OpenAI-compatible chat endpoint (127.0.0.1 only), for the scorer: no model
runs here. For every sentence of every excerpt the dream sends, it proposes the sentence as it
is (a faithful proposal) and, where it can, the same sentence with one thing changed that a
careless or small model changes -- a number, a negation, a hedge -- while quoting the real
sentence. The dream must keep none of the changed ones.

`mutate` is the one place that decides what "changed" means here; the scorer counts a changed
proposal as kept when its text appears in a note after the dream.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_EXCERPT = re.compile(r"\[(S\d+)\] \([^)]*\)\n(.*?)(?=\n\n\[S\d+\] |\Z)", re.S)
_SENTENCE = re.compile(r"[^.;\n]+(?:[.;]|$)")
_DIGIT = re.compile(r"\d")
_NEG = re.compile(r"\b(no|not|never|sin|nunca|without)\b ?", re.I)
_HEDGE = re.compile(r"\b(usually|sometimes|often|probably|suele|a veces|normalmente)\b ?", re.I)
_MARKER = re.compile(r"^[^\W\d_][\w ]{0,15}:\s+")  # "remember: ", "Lección: "
_VERB = re.compile(r"\b(is|are|needs|need|runs|run|keeps|se|es|necesita|está)\b", re.I)


def mutate(sentence: str) -> list[tuple[str, str]]:
    """Every (what was changed, the changed sentence) this sentence allows: its first number
    moved by one, its negation dropped (or one added), its hedge dropped."""
    out: list[tuple[str, str]] = []
    m = _DIGIT.search(sentence)
    if m:
        d = int(m.group(0))
        out.append(("number", sentence[: m.start()] + str((d + 1) % 10) + sentence[m.end() :]))
    m = _NEG.search(sentence)
    if m:
        out.append(("negation", sentence[: m.start()] + sentence[m.end() :]))
    else:
        v = _VERB.search(sentence)
        if v:
            spanish = v.group(1).casefold() in ("se", "es", "necesita", "está")
            changed = (
                sentence[: v.start()] + "no " + sentence[v.start() :]
                if spanish
                else sentence[: v.end()] + " not" + sentence[v.end() :]
            )
            out.append(("negation", changed))
    m = _HEDGE.search(sentence)
    if m:
        out.append(("hedge", sentence[: m.start()] + sentence[m.end() :]))
    return out


class StandIn:
    """Serves `POST /v1/chat/completions` on 127.0.0.1 (`port` 0: any free port)."""

    def __init__(self, port: int = 0) -> None:
        self.requests = 0
        self.faithful: list[str] = []
        self.changed: list[tuple[str, str, str]] = []  # (kind, quote, changed text)
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n))
                stand_in.requests += 1
                content = json.dumps({"proposals": stand_in.propose(body)}, ensure_ascii=False)
                data = json.dumps(
                    {
                        "object": "chat.completion",
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": content}}
                        ],
                        "usage": {"total_tokens": 400},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

        self.server = Server(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def propose(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        prompt = body["messages"][-1]["content"]
        picked: list[tuple[str, str, str, str | None]] = []  # (sid, text, quote, change)
        for m in _EXCERPT.finditer(prompt):
            sid, text = m.group(1), m.group(2)
            for raw in _SENTENCE.findall(text):
                sentence = _MARKER.sub("", raw.strip().lstrip("-* ").strip())
                if len(sentence.split()) < 4:
                    continue
                picked.append((sid, sentence, sentence, None))
                picked += [(sid, text, sentence, kind) for kind, text in mutate(sentence)]
        out = []
        # more than the schema's 20, so every change is tried: the dream reads at most 50
        for sid, text, quote, change in picked[:50]:
            out.append(self._item(sid, text, quote))
            if change is None:
                self.faithful.append(text)
            else:
                self.changed.append((change, quote, text))
        return out

    @staticmethod
    def _item(sid: str, text: str, quote: str) -> dict[str, Any]:
        return {"kind": "knowledge", "text": text, "topic": "", "source": sid, "quote": quote}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
