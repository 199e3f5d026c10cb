"""Issue 40, finding 5: session-scoped and in-progress remarks never become notes or memory
(`companion.dream.durability`, one table per language)."""

from __future__ import annotations

import datetime as dt

import pytest

from companion.dream.durability import LANGUAGES, is_transient
from tests.fixtures.dream import NOW
from tests.fixtures.mini import Mini, journal

SESSION_EN = [
    "For this session only, test with the staging bucket.",
    "While we debug the uploader, use bucket Y.",
]

TRANSIENT = [
    ("en", "For this session only, test with the staging bucket."),
    ("en", "While we debug the uploader, use bucket Y."),
    ("en", "For now the relay runs on port 8443."),
    ("en", "Until tomorrow, push to the mirror instead."),
    ("en", "This time, skip the integration tests."),
    ("en", "Temporarily, the NAS is mounted read-only."),
    ("en", "We are still debugging the uploader, so use bucket Y."),
    ("es", "Solo para esta sesión, prueba con el bucket de staging."),
    ("es", "Mientras depuramos el cargador, usa el bucket Y."),
    ("es", "Por ahora el relay usa el puerto 8443."),
    ("es", "Hasta mañana, sube al espejo."),
    ("es", "Esta vez, sáltate los tests de integración."),
    ("es", "Temporalmente el NAS está montado en solo lectura."),
    ("fr", "Pour cette session seulement, teste avec le bucket de staging."),
    ("fr", "Pendant qu'on débogue le téléversement, utilise le bucket Y."),
    ("fr", "Pour l'instant le relais tourne sur le port 8443."),
    ("fr", "Temporairement, le NAS est en lecture seule."),
    ("de", "Nur für diese Sitzung mit dem Staging-Bucket testen."),
    ("de", "Während wir den Uploader debuggen, Bucket Y verwenden."),
    ("de", "Vorerst läuft das Relay auf Port 8443."),
    ("de", "Bis morgen auf den Spiegel pushen."),
    ("pt", "Só para esta sessão, testa com o bucket de staging."),
    ("pt", "Enquanto depuramos o uploader, usa o bucket Y."),
    ("pt", "Por enquanto o relay usa a porta 8443."),
    ("it", "Solo per questa sessione, prova con il bucket di staging."),
    ("it", "Mentre facciamo il debug dell'uploader, usa il bucket Y."),
    ("it", "Per ora il relay usa la porta 8443."),
    ("it", "Temporaneamente il NAS è in sola lettura."),
]

DURABLE = [
    "The backup job runs every night at 03:00.",
    "At this time of night the NAS is asleep.",
    "SQLite WAL mode needs shared memory, so it fails on NFS shares.",
    "El NAS se apaga a las 01:30 para ahorrar energía.",
    "Restic needs --limit-upload on the uplink, above all in the evening.",
    "Die Sitzung des Vereins ist immer dienstags.",
    "Le NAS se met en veille à 01:30.",
    "Una sesión de Hermes guarda los mensajes en state.db.",
]


def test_every_language_has_a_table() -> None:
    assert {"en", "es", "fr", "de", "pt", "it"} <= set(LANGUAGES)


@pytest.mark.parametrize(("lang", "text"), TRANSIENT)
def test_session_scoped_and_in_progress_remarks_are_transient(lang: str, text: str) -> None:
    assert is_transient(text, lang)
    assert is_transient(text)  # any language: a vault in one language quotes sessions in others


@pytest.mark.parametrize("text", DURABLE)
def test_durable_statements_are_not_transient(text: str) -> None:
    assert not is_transient(text)


def test_session_scoped_remarks_never_reach_a_note_or_memory(tmp_path):
    w = Mini(tmp_path)
    w.note("Home.md", "# Home\n")
    w.note("journal/2026-11-27.md", journal("2026-11-27", {"Learned": SESSION_EN}))
    at = NOW - dt.timedelta(hours=3)
    w.say("user", "remember: for this session only, test with the staging bucket.", at)
    w.say("assistant", "always: while we debug the uploader, use bucket Y.", at)
    w.say(
        "assistant",
        "Saved.",
        at,
        calls=[{"action": "add", "target": "memory", "content": SESSION_EN[1]}],
    )
    before = w.files()
    rep = w.dream()
    assert not [p for p in w.new_notes(before) if p.startswith("knowledge/")]
    assert w.entries("memory") == [] and w.entries("user") == []
    # nowhere but the journal line it was said in (files() is a set: no order to lean on)
    elsewhere = [p for p in sorted(w.files()) if p != "journal/2026-11-27.md"]
    assert [p for p in elsewhere if "staging bucket" in w.read(p)] == []
    assert "bucket Y" not in w.read("Home.md")
    codes = {s.code for s in rep.skipped if s.text and "bucket" in s.text}
    assert codes == {"transient"}, [s.to_dict() for s in rep.skipped]
