"""The configuration file: defaults, validation errors naming file/key/problem, exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from companion.config import SCHEMA, defaults, load_config
from companion.errors import ConfigError
from companion.paths import device_paths
from tests.conftest import run_companion


def write_config(home: Path, text: str) -> Path:
    f = home / "config" / "config.toml"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text, encoding="utf-8")
    return f


def test_missing_file_means_defaults(companion_home: Path) -> None:
    cfg = load_config(device_paths())
    assert cfg.values == defaults()
    assert cfg.get("dream", "time") == "02:00"
    assert cfg.get("dream", "timezone") == "Europe/Madrid"
    assert cfg.get("memory", "memory_char_limit") == 2200
    assert cfg.get("memory", "user_char_limit") == 1375


def test_companion_home_moves_every_directory(companion_home: Path) -> None:
    p = device_paths()
    for d in (p.config_dir, p.data_dir, p.log_dir, p.state_dir):
        assert companion_home in d.parents


def test_values_override_defaults(companion_home: Path, tmp_path: Path) -> None:
    write_config(companion_home, f'[vault]\npath = "{tmp_path}"\n[dream]\nwindow_hours = 24\n')
    cfg = load_config(device_paths())
    assert cfg.get("vault", "path") == str(tmp_path)
    assert cfg.get("dream", "window_hours") == 24


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("[sync\nkind=1", ["not valid TOML"]),
        ("[sync]\ncolour = 'blue'\n", ["unknown key", "[sync] colour"]),
        ("[bogus]\nx = 1\n", ["unknown section", "[bogus]"]),
        ("[sync]\nkind = 3\n", ["[sync] kind", "expected string"]),
        ("[dream]\nwindow_hours = true\n", ["[dream] window_hours", "expected integer"]),
        ("[dream]\nwindow_hours = 72\n", ["[dream] window_hours", "maximum"]),
        ("[sync]\nkind = 'robot'\n", ["[sync] kind", "not one of"]),
        ("[vault]\npath = '/definitely/not/here'\n", ["[vault] path", "does not exist"]),
        ("sync = 5\n", ["[sync] must be a table"]),
    ],
)
def test_bad_config_names_file_key_and_problem(
    companion_home: Path, text: str, fragments: list[str]
) -> None:
    f = write_config(companion_home, text)
    with pytest.raises(ConfigError) as info:
        load_config(device_paths())
    msg = str(info.value)
    assert str(f) in msg
    for frag in fragments:
        assert frag in msg


def test_bad_config_exits_2_with_a_clear_line(companion_home: Path) -> None:
    f = write_config(companion_home, "[sync]\nkind = 3\n")
    res = run_companion("config", "show")
    assert res.returncode == 2
    assert res.stderr.startswith("error: ")
    assert str(f) in res.stderr and "Traceback" not in res.stderr


def test_save_round_trips_only_changed_keys(companion_home: Path) -> None:
    cfg = load_config(device_paths())
    cfg.set("dream", "time", "03:30")
    cfg.save()
    text = cfg.file.read_text()
    assert "03:30" in text and "timezone" not in text
    assert load_config(device_paths()).get("dream", "time") == "03:30"


def test_set_validates(companion_home: Path) -> None:
    cfg = load_config(device_paths())
    with pytest.raises(ConfigError):
        cfg.set("sync", "kind", "robot")


def test_every_key_is_documented() -> None:
    for section, keys in SCHEMA.items():
        for name, key in keys.items():
            assert key.doc.strip(), f"[{section}] {name} has no documentation"


def test_documented_keys_match_docs() -> None:
    doc = (Path(__file__).parent.parent / "docs" / "configuration.md").read_text()
    for section, keys in SCHEMA.items():
        assert f"[{section}]" in doc
        for name in keys:
            assert f"`{name}`" in doc, f"docs/configuration.md misses [{section}] {name}"
