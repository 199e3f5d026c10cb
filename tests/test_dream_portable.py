"""Issue 40, finding 7: provenance never embeds an absolute path of a source, not even of one
outside the home folder and the Hermes home (`[dream] sources` at /srv/...): such a source is
named by a stable label -- its configured `name`, or its own file or folder name -- and the
path inside it (`jsonl:@lab`, `claude:@projects/app/s1.jsonl`), and `--verify` maps the label
back through `[dream] sources`."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from click.testing import CliRunner

from companion.cli import cli
from companion.dream.read import SourceSpec, find_messages, source_labels
from companion.dream.verify import verify_vault
from tests.fixtures.dream import NOW
from tests.fixtures.mini import Mini, journal

AT = NOW - dt.timedelta(hours=3)


def _provenance(w: Mini) -> list[str]:
    out = []
    for rel in w.files():
        out += [ln for ln in w.read(rel).split("\n") if "<!-- src:" in ln]
    report = json.loads((w.vault / ".companion/dreams/2026-11-28.json").read_text("utf-8"))
    out += [p["source"] for c in report["changes"] for p in c["provenance"]]
    return out


def _verify_cli(w: Mini) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["dream", str(w.vault), "--verify"])
    return res.exit_code, res.output


def _outside_home(tmp_path: Path, monkeypatch) -> Path:
    home = tmp_path / "person"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # the sources are not under ~
    monkeypatch.delenv("HERMES_HOME", raising=False)
    return tmp_path / "srv"


def test_a_source_outside_the_home_folder_is_named_by_its_label(tmp_path, monkeypatch):
    srv = _outside_home(tmp_path, monkeypatch)
    w = Mini(tmp_path, transcript_dir=srv / "lab-logs")
    w.note("knowledge/NAS.md", "# NAS\n\nThe Synology NAS in the hall closet.\n")
    w.say("user", "remember: the NAS scrub runs on Sundays at 02:00.", AT)
    w.dream(dream_config={"sources": [{"kind": "jsonl", "path": str(w.transcript), "name": "lab"}]})
    prov = _provenance(w)
    assert prov and not [p for p in prov if str(tmp_path) in p], prov
    assert any("jsonl:@lab#" in p for p in prov), prov
    result = verify_vault(w.vault, labels={"lab": w.transcript})
    assert result.ok and result.counts["ok"] >= 1, result.to_dict()
    code, out = _verify_cli(w)  # the CLI reads the labels from [dream] sources
    assert code == 0, out
    assert "0 with an unreachable source" in out, out


def test_without_a_name_the_label_is_the_sources_own_folder(tmp_path, monkeypatch):
    srv = _outside_home(tmp_path, monkeypatch)
    w = Mini(tmp_path, transcript_dir=srv / "agent-logs" / "box1")
    w.note("knowledge/NAS.md", "# NAS\n\nThe Synology NAS in the hall closet.\n")
    w.say("user", "remember: the NAS scrub runs on Sundays at 02:00.", AT)
    folder = w.transcript.parent.parent
    w.dream(dream_config={"sources": [{"kind": "jsonl", "path": str(folder)}]})
    prov = _provenance(w)
    assert not [p for p in prov if str(tmp_path) in p], prov
    assert any("jsonl:@agent-logs/box1/agent.jsonl#" in p for p in prov), prov
    code, out = _verify_cli(w)
    assert code == 0 and "0 with an unreachable source" in out, out


def test_labels_are_unique_and_stable():
    specs = [
        SourceSpec("jsonl", "/srv/a/logs"),
        SourceSpec("jsonl", "/srv/b/logs"),
        SourceSpec("claude", "/srv/c/projects", "work"),
        SourceSpec("jsonl", "~/logs/agent.jsonl"),  # under ~: named from ~, no label
    ]
    labels = source_labels(specs)
    assert labels == source_labels(list(reversed(specs)))  # not by the order of the config
    assert len(set(labels)) == 3 and "work" in labels
    assert sorted(str(p) for p in labels.values()) == [
        "/srv/a/logs",
        "/srv/b/logs",
        "/srv/c/projects",
    ]
    assert all("/" not in label for label in labels)


def test_an_unknown_label_is_unreachable_not_an_error(tmp_path):
    assert find_messages("jsonl:@nowhere", {"m1"}, labels={}) is None


def test_the_journal_and_hermes_names_are_unchanged(tmp_path, monkeypatch):
    """Vault-relative and `~` names stay as they were: only absolute paths get a label."""
    monkeypatch.setenv("HOME", str(tmp_path))
    w = Mini(tmp_path)
    w.note("knowledge/NAS.md", "# NAS\n\nThe Synology NAS in the hall closet.\n")
    w.note(
        "journal/2026-11-27.md",
        journal("2026-11-27", {"Learned": ["The NAS scrub runs on Sundays at 02:00."]}),
    )
    w.dream()
    prov = _provenance(w)
    assert any(p.startswith("journal/") or "src: journal/" in p for p in prov), prov
    assert not [p for p in prov if "@" in p.split("#")[0].split("src: ")[-1]], prov
