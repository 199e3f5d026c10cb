"""How a person's Python device reads an agent's notes for the hold rules (issue 44, finding 5),
and what it remembers between rounds for the config-folder rule (finding 4).

The content rule needs the note's content before the note is admitted (the executable bit
travels in the sealed record; code in a note does not). The laptop reads it once, through the
relay, and the apply reuses it; a note whose content does not verify costs its own file only.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.syncharness import (
    Device,
    Exchange,
    SyncCluster,
    WireProxy,
    encode_blob_frames,
    parse_frames,
)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[SyncCluster, WireProxy, Device, Device]]:
    with SyncCluster(tmp_path) as c:
        proxy = WireProxy(c.relay.url)
        laptop = c.add_device("laptop", "human", relay_url=proxy.url)
        server = c.add_device("server", "agent")
        try:
            yield c, proxy, laptop, server
        finally:
            proxy.close()


def _blob_requests(proxy: WireProxy) -> Counter[str]:
    """How many times each blob id was asked of the relay."""
    asked: Counter[str] = Counter()
    for ex in proxy.exchanges:
        if ex.method == "POST" and ex.path.endswith("/blobs-download"):
            asked.update(json.loads(ex.request_body)["ids"])
        elif ex.method == "GET" and "/blobs/" in ex.path:
            asked[ex.path.rsplit("/", 1)[1]] += 1
    return asked


NOTES = {
    "knowledge/plain.md": "a note about `<code>` and 50 % of it\n",
    "knowledge/dv.md": "```dataviewjs\ndv.paragraph(1)\n```\n",
    "journal/2026-01-01.md": "- wrote the plan\n",
}


def test_an_agents_notes_are_downloaded_once_and_read_for_code(world) -> None:
    c, proxy, laptop, server = world
    for p, text in NOTES.items():
        server.write(p, text)
    server.sync()
    proxy.exchanges.clear()
    report = laptop.sync()
    assert report.held == ["knowledge/dv.md"]
    assert sorted(report.downloaded) == ["journal/2026-01-01.md", "knowledge/plain.md"]
    asked = _blob_requests(proxy)
    assert len(asked) == len(NOTES) and set(asked.values()) == {1}, asked
    (row,) = laptop.engine().held_changes()
    assert row.reason == "holds code a plugin runs: a dataviewjs code block"


def test_a_note_whose_content_does_not_verify_costs_its_own_file(world) -> None:
    c, proxy, laptop, server = world
    server.write("knowledge/a.md", "first\n")
    server.write("knowledge/b.md", "second\n")
    server.sync()
    bad = server.engine().core.remote.blob_id(b"second\n")

    def garble(ex: Exchange) -> Exchange:
        if ex.method == "POST" and ex.path.endswith("/blobs-download") and ex.status == 200:
            frames = [(i, d if i != bad else d[:-1] + bytes([d[-1] ^ 1])) for i, d in
                      parse_frames(ex.response_body)]  # fmt: skip
            ex.response_body = encode_blob_frames(frames)
        elif ex.method == "GET" and ex.path.endswith("/blobs/" + bad) and ex.status == 200:
            ex.response_body = ex.response_body[:-1] + bytes([ex.response_body[-1] ^ 1])
        return ex

    proxy.tamper = garble
    report = laptop.sync()
    assert report.quarantined == ["knowledge/b.md"]
    assert laptop.read("knowledge/a.md") == b"first\n"
    assert laptop.read("knowledge/b.md") is None
    proxy.tamper = None
    server.write("knowledge/b.md", "second, again\n")  # a newer revision heals it
    server.sync()
    laptop.sync()
    assert laptop.read("knowledge/b.md") == b"second, again\n"


def test_a_config_folder_held_yesterday_still_counts_today(world) -> None:
    """The agent's `.x/app.json` is held (not applied, so not in the index); its later
    `.x/snippets/evil.css` alone is held too: held files count among the known paths."""
    c, proxy, laptop, server = world
    server.write(".x/app.json", "{}\n")
    server.sync()
    assert laptop.sync().held == [".x/app.json"]
    server.write(".x/snippets/evil.css", "body { display: none }\n")
    server.sync()
    assert laptop.sync().held == [".x/snippets/evil.css"]
    assert laptop.read(".x/snippets/evil.css") is None
