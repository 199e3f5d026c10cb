"""One scope rule for both human clients (issue 44, "agents with scopes").

`companion/sync/round/scopes.py` (with `holds.HoldPolicy`) decides which of an agent's changes are
outside the scope the person granted it in `.companion/scopes.json`; the Obsidian plugin's
`src/sync/scopes.ts` (with `policy.ts`) must decide the same. These vectors pin the file's
reading (defaults, inheritance, a file that does not parse), the matching (folders and files,
case and NFC, renames) and the order with the other hold rules, as Python decides them;
`obsidian-plugin/test/scope-vectors.test.ts` replays them.
Regenerate only on purpose:  python tests/test_sync_scope_vectors.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from companion.crypto import ChunkRef, FileMeta
from companion.sync.remote.vault import RemoteChange
from companion.sync.round.holds import HoldPolicy, config_folders
from companion.sync.round.scopes import (
    DEFAULT_WRITE,
    Scope,
    default_document,
    load_scopes,
    parse_scopes,
    read_scopes,
    render,
    set_agent,
    write_default,
)

VECTORS = Path(__file__).parent / "vectors" / "scopes_v1.json"

HERMES = "dev-hermes"
CLAUDE = "dev-claude"
OTHER = "dev-other"

FILES: list[str] = [
    # 0: the default a new vault gets
    render(default_document()).decode(),
    # 1: hermes may write knowledge/ only, claude inherits default's write, has no_read
    json.dumps(
        {
            "v": 1,
            "default": {"write": ["knowledge/", "projects/", "journal/"], "no_read": ["private/"]},
            "agents": {
                HERMES: {"name": "Hermes", "write": ["knowledge/"]},
                CLAUDE: {"name": "Claude Code", "no_read": []},
            },
        }
    ),
    # 2: no default: the built-in one; entries without slashes, a file, the whole vault
    json.dumps(
        {
            "v": 1,
            "agents": {
                HERMES: {"write": ["Knowledge", "/projects/Alpha/", "Home.md"]},
                CLAUDE: {"name": "claude", "write": ["/"]},
            },
        }
    ),
    # 3: an agent that may write nothing; a broken `mcp` part changes nothing for the holds
    json.dumps({"v": 1, "default": {"write": []}, "mcp": {"claude": {"write": "x"}}}),
    # 4..: files that do not parse: every agent's change outside the agent areas is held
    "{not json",
    json.dumps({"v": 2, "default": {"write": ["knowledge/"]}}),
    json.dumps({"v": 1, "default": {"write": "knowledge/"}}),
    json.dumps({"v": 1, "agents": {HERMES: {"write": ["knowledge/", 3]}}}),
    json.dumps({"v": 1, "agents": []}),
    json.dumps([1]),
    json.dumps({"v": True}),
    json.dumps({"v": 1, "agents": {HERMES: {"name": None}}}),
    json.dumps({"v": 1, "default": None}),
]

PATHS = [
    "knowledge/z.md",
    "Knowledge/Z.md",
    "knowledge",
    "knowledgebase/z.md",
    "projects/x.md",
    "projects/Alpha/plan.md",
    "projects/alphabet.md",
    "journal/2026-12-06.md",
    "Notes/y.md",
    "Home.md",
    "home.md",
    "Home.md.bak",
    "review/2026-12-06.md",
    "private/diary.md",
    "caf\u00e9/n.md",
    "image.png",
    ".companion/agent/2026-12-06.server.jsonl",
    ".companion/dreams/2026-12-06.json",
    ".companion/scopes.json",
    ".companion/keys/dev.json",
    ".obsidian/app.json",
    "scripts/x.js",
]


def _change(path: str, *, device: str, author: str = "agent", deleted: bool = False,
            rename_from: str | None = None) -> RemoteChange:  # fmt: skip
    data = b"" if deleted else b"x\n"
    meta = FileMeta(
        path=path, size=len(data), sha256="" if deleted else hashlib.sha256(data).hexdigest(),
        chunks=() if deleted else (ChunkRef("0" * 64, len(data)),), deleted=deleted,
        device_name="server", device_kind=author, rename_from=rename_from,
    )  # fmt: skip
    return RemoteChange(path, "f", 1, 0, meta, b"", device_id=device, relay_kind=author,
                        relay_name="server")  # fmt: skip


def _decide(case: dict) -> str | None:
    text = None if case["file"] is None else FILES[case["file"]]
    policy = HoldPolicy("human", scopes=None if text is None else read_scopes(text))
    ch = _change(case["path"], device=case["device_id"], author=case["author"],
                 deleted=case["deleted"], rename_from=case["rename_from"])  # fmt: skip
    return policy.reason(ch, config_folders([case["path"]]), b"", unchanged=False)


def _case(file: int | None, device: str, path: str, **kw: object) -> dict:
    case: dict[str, object] = {
        "file": file, "device_id": device, "author": "agent",
        "path": path, "rename_from": None, "deleted": False,
    }  # fmt: skip
    case.update(kw)
    return case


def cases() -> list[dict]:
    out = []
    for f in range(len(FILES)):
        for dev in (HERMES, CLAUDE, OTHER) if f < 4 else (HERMES,):
            out += [_case(f, dev, p) for p in PATHS]
    out += [
        # no scopes file: no scope rule
        _case(None, HERMES, "Notes/y.md"),
        # a person's change is never held for scope
        _case(1, HERMES, "Notes/y.md", author="human"),
        # deletions and renames: every path must be inside
        _case(1, HERMES, "Notes/y.md", deleted=True),
        _case(1, HERMES, "knowledge/z.md", deleted=True),
        _case(1, HERMES, "knowledge/z.md", rename_from="Notes/y.md"),
        _case(1, HERMES, "Notes/y.md", rename_from="knowledge/z.md"),
        _case(1, HERMES, "knowledge/b.md", rename_from="knowledge/a.md"),
        # an unknown device id (an older record without one) takes the default
        _case(1, "", "projects/x.md"),
        _case(1, "", "Notes/y.md"),
    ]
    return out


def build_vectors() -> dict:
    return {
        "format": "vault-companion scope vectors v1",
        "files": FILES,
        "cases": [{**c, "reason": _decide(c)} for c in cases()],
    }


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(VECTORS.read_text(encoding="utf-8"))


def test_scope_vectors_are_what_the_python_code_decides(committed) -> None:
    built = build_vectors()
    for name in built:
        assert built[name] == committed[name], name


def test_the_issues_example(committed) -> None:
    """Hermes may write knowledge/ only: projects/ and Notes/ are held, knowledge/ lands;
    Claude Code keeps the default; the scopes file itself is held as a setting."""
    by = {(c["file"], c["device_id"], c["path"], c["author"], c["deleted"], c["rename_from"]):
          c["reason"] for c in committed["cases"]}  # fmt: skip

    def r(dev: str, path: str, f: int = 1) -> str | None:
        return by[(f, dev, path, "agent", False, None)]

    assert r(HERMES, "knowledge/z.md") is None
    assert r(HERMES, "projects/x.md") == "is outside Hermes's scope"
    assert r(HERMES, "Notes/y.md") == "is outside Hermes's scope"
    assert r(CLAUDE, "projects/x.md") is None
    assert r(CLAUDE, "Notes/y.md") == "is outside Claude Code's scope"
    assert r(OTHER, "Notes/y.md") == "is outside server's scope"
    assert r(HERMES, ".companion/scopes.json") == "changes the companion's settings in the vault"
    assert r(HERMES, ".companion/agent/2026-12-06.server.jsonl") is None
    assert r(HERMES, "review/2026-12-06.md") is None
    # the default a new vault gets: the dream's places, Home.md's index included
    for p in ("knowledge/z.md", "projects/x.md", "journal/2026-12-06.md", "Home.md"):
        assert r(OTHER, p, 0) is None, p
    assert r(OTHER, "Notes/y.md", 0) == "is outside server's scope"


def test_a_file_that_does_not_parse_holds_everything_outside_the_agent_areas(committed) -> None:
    bad = [c for c in committed["cases"] if c["file"] is not None and c["file"] >= 4]
    assert bad
    for c in bad:
        if c["path"].startswith(
            (".companion/agent/", ".companion/dreams/", ".companion/keys/", "review/")
        ):
            assert c["reason"] is None, c
        else:
            assert c["reason"] is not None, c
    assert any("(.companion/scopes.json is not valid: " in (c["reason"] or "") for c in bad)


def test_every_verdict_has_cases(committed) -> None:
    reasons = [c["reason"] for c in committed["cases"]]
    assert sum(r is None for r in reasons) >= 40
    assert sum(bool(r) and "scope" in r for r in reasons) >= 40


# ------------------------------------------------------------------ the file, read and written


def test_no_file_no_rule_and_the_default_is_written_once(tmp_path: Path) -> None:
    assert load_scopes(tmp_path) is None
    assert write_default(tmp_path)
    assert not write_default(tmp_path)
    s = load_scopes(tmp_path)
    assert s is not None and s.invalid is None
    assert s.for_device("x") == Scope(write=DEFAULT_WRITE)


def test_set_agent_keeps_the_rest_and_refuses_a_broken_file(tmp_path: Path) -> None:
    set_agent(tmp_path, "d1", name="hermes", write=["knowledge/"])
    set_agent(tmp_path, "d1", no_read=["private/"])
    set_agent(tmp_path, "d2", write=[])
    s = parse_scopes((tmp_path / ".companion/scopes.json").read_text(encoding="utf-8"))
    assert s.agents["d1"] == Scope(write=("knowledge/",), no_read=("private/",), name="hermes")
    assert s.agents["d2"].write == ()
    assert not s.agents["d1"].may_read("Private/x.md")
    (tmp_path / ".companion/scopes.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(ValueError):
        set_agent(tmp_path, "d1", write=["x/"])
    assert (tmp_path / ".companion/scopes.json").read_text(encoding="utf-8") == "{oops"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_sync_scope_vectors.py --write")
    VECTORS.write_text(
        json.dumps(build_vectors(), indent=2, ensure_ascii=True) + "\n", encoding="utf-8"
    )
    print(f"wrote {VECTORS}")


def test_an_mcp_entry_limits_one_server_and_never_changes_the_hold_rule() -> None:
    s = parse_scopes(json.dumps({
        "v": 1, "default": {"write": ["knowledge/"]},
        "mcp": {"claude": {"no_read": ["private/"]}, "hermes": {"write": []}},
    }))  # fmt: skip
    assert s.for_mcp("claude") == Scope(write=("",), no_read=("private/",))
    assert s.for_mcp("claude").may_write("anything/at/all.md")
    assert not s.for_mcp("hermes").may_write("knowledge/a.md")
    assert s.for_mcp("other") is None
    broken = parse_scopes(json.dumps({"v": 1, "mcp": {"claude": {"write": "x"}}}))
    assert (
        broken.invalid is None and broken.mcp_invalid == "mcp.claude.write is not a list of folders"
    )
    assert broken.for_device("d") == Scope()  # the hold rule reads the rest as before
    assert broken.for_mcp("claude") == Scope(write=(), no_read=(), name="claude")


def test_set_agent_writes_an_mcp_entry_and_keeps_a_broken_mcp_part(tmp_path: Path) -> None:
    set_agent(tmp_path, "claude", write=["knowledge/"], no_read=["private/"], section="mcp")
    s = load_scopes(tmp_path)
    assert s is not None and s.for_mcp("claude") == Scope(("knowledge/",), ("private/",))
    assert s.agents == {}
    f = tmp_path / ".companion/scopes.json"
    f.write_text(json.dumps({"v": 1, "mcp": []}), encoding="utf-8")
    with pytest.raises(ValueError, match="mcp is not an object"):
        set_agent(tmp_path, "d1", write=["x/"])
    assert json.loads(f.read_text(encoding="utf-8")) == {"v": 1, "mcp": []}
