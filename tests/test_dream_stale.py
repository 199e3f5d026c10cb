"""Issue 16, item 4: stale entries are replaced or removed as the agent asked, contradictions in
a note are flagged, and an entry the person deleted by hand is not added back."""

from __future__ import annotations

import datetime as dt

from companion.dream import blocks
from tests.fixtures.dream import NOW
from tests.fixtures.mini import Mini, journal

AGO = NOW - dt.timedelta(hours=6)


def test_the_agents_replace_replaces_and_its_remove_removes(tmp_path):
    w = Mini(tmp_path)
    w.set_entries("user", ["Lucía vive en Valencia.", "Lucía tiene un gato."])
    w.set_entries("memory", ["El servidor de pruebas se llama kestrel.", "Copias con restic."])
    w.say(
        "assistant",
        "",
        AGO,
        calls=[
            {
                "action": "replace",
                "target": "user",
                "old_text": "vive en Valencia",
                "content": "Lucía vive en Bilbao.",
            },
            {"action": "remove", "target": "memory", "old_text": "kestrel"},
        ],
    )
    rep = w.dream(dream_config={"apply": "auto"})  # by default both wait as proposals
    assert w.entries("user") == ["Lucía vive en Bilbao.", "Lucía tiene un gato."]
    assert w.entries("memory") == ["Copias con restic."]
    promoted = {c.note: c for c in rep.run_changes if c.kind == "promoted"}
    assert promoted["USER.md"].removed == 1 and promoted["MEMORY.md"].removed == 1


def test_a_replace_the_file_already_reflects_is_left_alone(tmp_path):
    """Hermes applied the replace itself (the file changed after the call): nothing to do,
    and an entry a person wrote back afterwards is theirs."""
    w = Mini(tmp_path)
    w.say(
        "assistant",
        "",
        AGO,
        calls=[{"action": "remove", "target": "memory", "old_text": "kestrel"}],
    )
    w.set_entries("memory", ["El servidor de pruebas se llama kestrel."])
    p = w.memory("memory")
    later = (AGO + dt.timedelta(hours=1)).timestamp()
    import os

    os.utime(p, (later, later))
    w.dream()
    assert w.entries("memory") == ["El servidor de pruebas se llama kestrel."]


def test_a_contradiction_with_the_persons_line_is_flagged(tmp_path):
    w = Mini(tmp_path)
    w.note("knowledge/Copias.md", "# Copias\n\n- Las copias del NAS empiezan a las 03:00.\n")
    w.note(
        "journal/2026-11-27.md",
        journal("2026-11-27", {"Aprendido": ["Las copias del NAS empiezan a las 04:30."]}),
    )
    rep = w.dream()
    flags = [f for f in rep.contradictions if f["note"] == "knowledge/Copias.md"]
    assert flags and "03:00" in flags[0]["existing"] and "04:30" in flags[0]["new"]
    today = w.read("journal/2026-11-28.md")
    assert "[[Copias]]" in today and ("contradic" in today.casefold())


def test_the_dreams_own_stale_line_is_corrected(tmp_path):
    """The line is the dream's own: a dream wrote it (the ledger holds it) and nobody changed
    it since (issue 40: a line the person wrote or changed is never replaced)."""
    w = Mini(tmp_path)
    w.note("knowledge/Copias.md", "# Copias\n")
    w.note(
        "journal/2026-11-20.md",
        journal("2026-11-20", {"Aprendido": ["Las copias del NAS empiezan a las 03:00."]}),
    )
    w.dream(now=NOW - dt.timedelta(days=7))
    assert "03:00" in w.read("knowledge/Copias.md")
    w.note(
        "journal/2026-11-27.md",
        journal("2026-11-27", {"Aprendido": ["Las copias del NAS empiezan a las 04:30."]}),
    )
    rep = w.dream()
    lines = [dl.text for dl in blocks.dream_lines(w.read("knowledge/Copias.md"))]
    assert lines == ["- Las copias del NAS empiezan a las 04:30."]
    change = next(c for c in rep.run_changes if c.note == "knowledge/Copias.md")
    assert change.removed == 1


def test_an_entry_deleted_by_hand_is_not_added_back(tmp_path):
    w = Mini(tmp_path)
    w.note(
        "journal/2026-11-27.md",
        journal(
            "2026-11-27", {"Aprendido": ["siempre: responde en español aunque escriba en inglés."]}
        ),
    )
    w.dream()
    assert w.entries("memory") == ["Responde en español aunque escriba en inglés."]
    w.set_entries("memory", [])  # the person deletes it the next morning
    w.dream(now=NOW + dt.timedelta(days=1))  # the journal day is still in the window
    assert w.entries("memory") == []
