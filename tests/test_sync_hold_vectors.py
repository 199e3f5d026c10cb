"""One hold list and one matching rule for both human clients (issue 44, findings 1, 3, 4, 5).

`companion/sync/round/holds.py` decides what a person's device holds when an agent device changes
it; the Obsidian plugin's `src/sync/policy.ts` must decide the same. These vectors pin every
rule (the case-insensitive fold, the config-folder shape, the path rules, the executable bit,
the code a plugin runs in a note) as Python decides it; `obsidian-plugin/test/hold-vectors.test.ts`
replays them. Regenerate only on purpose:  python tests/test_sync_hold_vectors.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from companion.crypto import ChunkRef, FileMeta
from companion.sync.remote.vault import RemoteChange
from companion.sync.round.holds import HoldPolicy, config_folders, hold_fold, note_code

VECTORS = Path(__file__).parent / "vectors" / "holds_v1.json"

FOLDS = [
    "ABC",
    ".Obsidian",
    ".OBSIDIAN",
    ".ob\u017fidian",
    "\u212aey.md",
    "Stra\u00dfe",
    "caf\u00e9",
]

SHAPES: list[list[str]] = [
    [],
    [".obsidian-mobile/plugins/x/manifest.json"],
    [".Phone/Community-Plugins.json"],
    [".mine/app.json", ".other/hotkeys.json", ".t/themes/Minimal/manifest.json"],
    [".x/plugins/manifest.json", ".y/plugins/a/b/manifest.json", ".z/sub/app.json"],
    ["notes/app.json", "app.json", ".companion/app.json", ".cfg/core-plugins-migration.json"],
    [".a/appearance.json", ".b/core-plugins.json", ".c/plugins/p/main.js"],
]

# (path, known paths) for an agent's change on a human device
PATHS: list[tuple[str, list[str]]] = [
    # finding 1: what changes sync and the companion
    (".companionignore", []),
    (".CompanionIgnore", []),
    ("notes/.companionignore", []),
    (".companion/settings.json", []),
    (".companion/review.toml", []),
    (".COMPANION/Dreams/2026-01-01.json", []),
    (".companion/dreams/2026-01-01.json", []),
    (".companion/dreams/ledger.json", []),
    (".companion/dreams/proposals.json", []),
    (".companion/agent/2026-01-01.server.jsonl", []),
    # docs/trust.md: announcements are claims anyone may write; the roster is the person's
    (".companion/keys/c3c3c3c3c3c3c3c3.json", []),
    (".Companion/Keys/c3c3c3c3c3c3c3c3.json", []),
    (".companion/roster/c3c3c3c3c3c3c3c3.json", []),
    (".companion/keysx/a.json", []),
    # finding 3: Obsidian's own folder, every case, every file in it
    (".Obsidian/plugins/x/main.js", []),
    (".OBSIDIAN/community-plugins.json", []),
    (".obsidian/appearance.json", []),
    (".obsidian/core-plugins.json", []),
    (".obsidian/core-plugins-migration.json", []),
    (".obsidian/hotkeys.json", []),
    (".obsidian/app.json", []),
    (".obsidian/snippets/x.css", []),
    (".obsidian/themes/T/theme.css", []),
    (".obsidian/bookmarks.json", []),
    (".ob\u017fidian/plugins/x/main.js", []),
    # finding 5: the settings that name a template, and scripts anywhere
    (".obsidian/daily-notes.json", []),
    (".obsidian/templates.json", []),
    (".obsidian/plugins/templater-obsidian/data.json", []),
    (".obsidian/plugins/periodic-notes/data.json", []),
    ("scripts/user.js", []),
    ("scripts/View.JS", []),
    ("scripts/helper.mjs", []),
    ("views/x.tsx", []),
    # finding 4: any folder with Obsidian's shape
    (".obsidian-mobile/plugins/x/main.js", [".obsidian-mobile/plugins/x/manifest.json"]),
    (".obsidian-mobile/community-plugins.json", []),
    (".obsidian-mobile/app.json", []),
    (".obsidian-mobile/daily-notes.json", [".obsidian-mobile/app.json"]),
    (".obsidian-mobile/daily-notes.json", []),
    (".Mobile/snippets/a.css", [".mobile/appearance.json"]),
    (".mobile/themes/T/manifest.json", []),
    ("notes/plugins/x/main.md", ["notes/app.json"]),
    ("projects/app.json", []),
    # ordinary files
    ("knowledge/git.md", []),
    ("attachments/photo.jpg", []),
    (".trash/x.md", []),
    ("Home.md", []),
]

NOTES: list[str] = [
    "a normal note\n",
    "<%* const x = await tp.system.prompt('x') %>\n",
    "Today: <% tp.date.now() %>\n",
    "<%+ tp.file.last_modified_date() %>",
    "a < b and c % d, 50%> done\n",
    "<% only an opening\n",
    "```dataviewjs\ndv.paragraph('x')\n```\n",
    "> [!note]\n> ```DataviewJS\n> dv.list([1])\n> ```\n",
    "~~~dataviewjs\nx\n~~~\n",
    "```dataview\nLIST FROM #x\n```\n",
    "```js\nconsole.log(1)\n```\n",
    "```js-engine\nreturn 1\n```\n",
    "```datacorejsx\nreturn <p/>\n```\n",
    "```meta-bind-button\nlabel: x\n```\n",
    "```button\nname x\ntype command\n```\n",
    "```buttons-list\nx\n```\n",
    "```run-python\nprint(1)\n```\n",
    "```pre-python\nimport os; os.system('x')\n```\n",
    '```js RunJS:"Test/Hello"\nnew Notice(1)\n```\n',
    "```js\n// RunJS is a plugin\n```\n",
    "```python\nprint(1)\n```\n",
    "Title: `$= dv.current().file.name`\n",
    "`= this.file.name`\n",
    "[run](obsidian://advanced-uri?vault=v&commandid=editor%3Asave-file)\n",
    "<a href='OBSIDIAN://Advanced-URI?eval=1'>x</a>\n",
    "[x](obsidian:%2F%2Fadvanced%2Duri?commandname=x)\n",
    "[x](obsidian&#58;//advanced&#45;uri?commandid=x)\n",
    "[x](obsidian://shell-commands/?execute=abc)\n",
    "[x](obsidian://quickadd?choice=daily)\n",
    "[x](obsidian://actions-uri/command/execute?commands=x)\n",
    "[x](obsidian://open?vault=v&file=n)\n",
    "[x](obsidian://advanced-urix)\n",
]


def _change(path: str, *, author: str = "agent", content: str | None = "",
            rename_from: str | None = None, executable: bool = False) -> RemoteChange:  # fmt: skip
    deleted = content is None
    data = b"" if content is None else content.encode()
    meta = FileMeta(
        path=path, size=len(data), sha256="" if deleted else hashlib.sha256(data).hexdigest(),
        chunks=() if deleted or not data else (ChunkRef("0" * 64, len(data)),),
        deleted=deleted, device_name="server", device_kind=author, rename_from=rename_from,
        executable=executable,
    )  # fmt: skip
    return RemoteChange(path, "f", 1, 0, meta, b"", relay_kind=author, relay_name="server")


def _decide(case: dict) -> str | None:
    """What `HoldPolicy` answers for one case (the TypeScript test asks `holdReason`)."""
    policy = HoldPolicy(case["device"], patterns=tuple(case.get("patterns", ())))
    ch = _change(
        case["path"],
        author=case["author"],
        content=None if case["deleted"] else "",
        rename_from=case["rename_from"],
        executable=case["executable"],
    )
    content = None if case["content"] is None else case["content"].encode()
    dirs = config_folders([*case["known"], case["path"]])
    return policy.reason(ch, dirs, content, unchanged=case["unchanged"])


def _case(path: str, known: list[str] | None = None, **kw: object) -> dict:
    case: dict[str, object] = {
        "device": "human", "author": "agent", "path": path, "rename_from": None,
        "deleted": False, "executable": False, "content": "", "unchanged": False,
        "known": known or [],
    }  # fmt: skip
    case.update(kw)
    return case


def cases() -> list[dict]:
    out = [_case(p, k) for p, k in PATHS]
    out += [_case(f"notes/n{i}.md", content=t) for i, t in enumerate(NOTES)]
    code = "<%* tp.user.x() %>\n"
    out += [
        # a note is read only when it is a note
        _case("notes/n.canvas", content='{"nodes":[{"text":"```dataviewjs\\nx\\n```"}]}'),
        _case("notes/n.txt", content=code),
        _case("notes/N.MD", content=code),
        # content unknown (not fetched, too large): held, unread
        _case("notes/unread.md", content=None),
        _case("notes/unread.png", content=None),
        # bytes this device already has (a rename): nothing new to read
        _case("notes/b.md", content=code, unchanged=True, rename_from="notes/a.md"),
        # a rename out of, or into, a held place
        _case("notes/x.md", rename_from=".obsidian/snippets/x.css"),
        _case(".obsidian/snippets/x.css", rename_from="notes/x.md"),
        # deletions: by path only
        _case(".obsidian/app.json", deleted=True),
        _case(".companionignore", deleted=True),
        _case("notes/n.md", deleted=True, content=None),
        # the executable bit: any live revision that has it
        _case("scripts/run.sh", executable=True),
        _case("scripts/run.sh", executable=True, deleted=True),
        _case("notes/n.md", executable=True, content="x"),
        # a person's change, or an agent device: never held
        _case(".obsidian/plugins/x/main.js", author="human"),
        _case("notes/t.md", author="human", content=code),
        _case(".companionignore", author="human"),
        _case(".obsidian/plugins/x/main.js", device="agent"),
        _case("notes/t.md", device="agent", content=code),
    ]
    # the person's extra held paths (sync.hold_patterns; the plugin's holdPatterns)
    out += [
        _case("private/x.md", patterns=["private/"]),
        _case("Private/Deep/X.md", patterns=["private/"]),
        _case("docs/a.PDF", patterns=["*.pdf"]),
        _case("docs/a.md", patterns=["*.pdf"]),
        _case("keep/a.md", patterns=["keep/*", "!keep/a.md"]),
        _case("keep/b.md", patterns=["keep/*", "!keep/a.md"]),
        _case("open/x.md", patterns=["private/"], rename_from="private/x.md"),
        _case("notes/plan.md", patterns=["/plan.md"]),
        _case("plan.md", patterns=["/plan.md"]),
        _case("private/x.md", patterns=["private/"], author="human"),
        _case("private/x.md", patterns=["private/"], device="agent"),
        _case("private/x.md", patterns=["private/"], deleted=True, content=None),
    ]
    return out


def build_vectors() -> dict:
    return {
        "format": "vault-companion hold vectors v1",
        "fold": [{"in": s, "out": hold_fold(s)} for s in FOLDS],
        "config_folders": [{"known": k, "folders": sorted(config_folders(k))} for k in SHAPES],
        "note_code": [{"text": t, "what": note_code(t)} for t in NOTES],
        "cases": [{**c, "reason": _decide(c)} for c in cases()],
    }


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(VECTORS.read_text(encoding="utf-8"))


def test_hold_vectors_are_what_the_python_code_decides(committed) -> None:
    built = build_vectors()
    for name in built:
        assert built[name] == committed[name], name


def test_the_plugins_missing_holds_are_held(committed) -> None:
    """Finding 3: what landed unheld through the plugin is held by the shared rule."""
    held = {c["path"]: c["reason"] for c in committed["cases"] if c["reason"]}
    for p in (
        ".Obsidian/plugins/x/main.js", ".OBSIDIAN/community-plugins.json",
        ".obsidian/appearance.json", ".obsidian/core-plugins.json",
    ):  # fmt: skip
        assert held[p] == "changes Obsidian's plugins, themes or settings", p


def test_every_rule_has_a_held_and_a_free_case(committed) -> None:
    reasons = {c["reason"].split(":")[0] for c in committed["cases"] if c["reason"]}
    assert reasons == {
        "changes what sync leaves out (.companionignore)",
        "changes the companion's settings in the vault",
        "changes Obsidian's plugins, themes or settings",
        "is a script that Obsidian plugins run",
        "sets the executable bit",
        "holds code a plugin runs",
        "is a note whose content could not be checked for code",
        "is on this device's list of held paths (sync.hold_patterns)",
    }
    assert sum(c["reason"] is None for c in committed["cases"]) >= 20


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_sync_hold_vectors.py --write")
    VECTORS.write_text(
        json.dumps(build_vectors(), indent=2, ensure_ascii=True) + "\n", encoding="utf-8"
    )
    print(f"wrote {VECTORS}")
