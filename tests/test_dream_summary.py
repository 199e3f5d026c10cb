"""What each dream change did is stored as facts (kind, counts, names), never as English
prose, and worded in the reader's language: the review window and `companion dream` speak
Spanish when the interface does (#13, item 9)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import tomlkit

from companion.config import load_config
from companion.dream.engine import run_dream
from companion.dream.report import read_report
from companion.dream.summary import fact, merge, render
from companion.paths import device_paths
from tests.conftest import run_companion
from tests.fixtures.dream import NOW, build, config_dict

ENGLISH_WORDS = re.compile(r"\b(added|lesson|lessons|replaced|removed|listed|journal|note)\b")


@pytest.fixture
def dreamt(tmp_path: Path):
    fx = build(tmp_path / "fx", "en")
    paths = device_paths()
    paths.config_file.parent.mkdir(parents=True, exist_ok=True)
    data = config_dict(fx)
    data["gui"] = {"language": "es"}
    paths.config_file.write_text(tomlkit.dumps(data), encoding="utf-8")
    return fx, paths, load_config(paths)


def test_changes_are_stored_as_facts_and_read_back(dreamt) -> None:
    fx, paths, config = dreamt
    rep = run_dream(fx.vault, config, NOW, paths=paths)
    assert rep.path is not None
    stored = json.loads(rep.path.read_text(encoding="utf-8"))
    kinds = set()
    for change in stored["changes"]:
        assert change["facts"], change["note"]  # every change says what it did, as data
        for f in change["facts"]:
            kinds.add(f["fact"])
            assert all(isinstance(v, (int, str)) for v in f.values())
        assert change["summary"] == render(change["facts"], "en")  # English for the JSON reader
    assert {"lessons_added", "facts_added", "journal_logged"} <= kinds
    loaded = read_report(rep.path)
    assert [c.facts for c in loaded.changes] == [c["facts"] for c in stored["changes"]]
    for change in loaded.changes:
        spanish = render(change.facts, "es")
        assert spanish and not ENGLISH_WORDS.search(spanish), spanish


def test_the_review_window_words_the_facts_in_the_interface_language(qtbot, dreamt) -> None:
    from companion.dream.undo import NoteLocator
    from companion.gui import i18n
    from companion.gui.review import ReviewWindow

    fx, paths, config = dreamt
    rep = run_dream(fx.vault, config, NOW, paths=paths)
    assert rep.path is not None
    i18n.set_language("es")
    try:
        w = ReviewWindow(rep.path, NoteLocator(fx.vault, fx.hermes_home / "memories"))
        qtbot.addWidget(w)
        seen = []
        for i in range(w.changes.topLevelItemCount()):
            item = w.changes.topLevelItem(i)
            assert item is not None
            w.changes.setCurrentItem(item)
            seen.append(w.summary.text())
        assert any("lecciones añadidas" in s or "lección añadida" in s for s in seen), seen
        assert not any(ENGLISH_WORDS.search(s) for s in seen), seen
    finally:
        i18n.set_language("en")


def test_companion_dream_prints_the_summaries_in_the_interface_language(dreamt) -> None:
    fx, _paths, _config = dreamt
    res = run_companion("dream", str(fx.vault), "--now", NOW.isoformat())
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("  consolidated")]
    assert lines and all("añadid" in ln for ln in lines), res.stdout


def test_merging_facts_adds_counts() -> None:
    facts = [fact("lessons_added", n=1)]
    merge(facts, [fact("lessons_added", n=2), fact("appended_recent")])
    assert (
        render(facts) == "3 lessons added; appended at the end: a person edited the note recently"
    )
    assert render(facts, "es").startswith("3 lecciones añadidas; añadido al final")
    assert render([{"fact": "from_the_future", "n": 1}]) == "from_the_future"
