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


def test_saving_keeps_the_persons_comments_layout_and_default_valued_keys(
    companion_home: Path,
) -> None:
    """`companion init` and the settings window save through `Config.save`: it edits the file,
    it does not regenerate it (#39: init dropped every comment and every key equal to a
    default). A refused value the person wrote stays as written."""
    from companion.sync.commands.join import remember_join
    from companion.sync.state.device import DeviceState

    text = (
        "# my laptop's settings: keep the dream early\n"
        "[dream]\n"
        'time = "03:00"   # before the backup job\n'
        "\n"
        "# the default, written on purpose\n"
        "[notify]\n"
        'morning_time = "08:00"\n'
        "\n"
        "[sync]\n"
        'max_file_mb = "lots"  # refused: a string\n'
    )
    f = write_config(companion_home, text)
    (companion_home / "vault").mkdir()
    cfg = load_config(device_paths(), lenient=True)
    state = DeviceState(
        vault_id="v" * 16, device_id="d" * 16, device_name="laptop", kind="human",
        relay_url="http://127.0.0.1:9", vault_root=str(companion_home / "vault"),
        key_fingerprint="f",
    )  # fmt: skip
    remember_join(cfg, state)
    after = f.read_text(encoding="utf-8")
    assert after.startswith(text.split("[sync]")[0]), after  # every line before, byte for byte
    assert 'max_file_mb = "lots"  # refused: a string' in after
    assert 'device_name = "laptop"' in after and "[vault]" in after
    again = load_config(device_paths(), lenient=True)
    assert again.get("dream", "time") == "03:00"
    assert again.get("sync", "device_name") == "laptop"


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


def test_config_show_defaults_lists_every_key(companion_home: Path) -> None:
    """Every key of the schema, the [mcp] ones (#44) too, is printed with its default."""
    res = run_companion("config", "show", "--defaults")
    assert res.returncode == 0, res.stderr
    for section, keys in SCHEMA.items():
        assert f"[{section}]" in res.stdout
        for name in keys:
            assert f"\n{name} = " in res.stdout, f"[{section}] {name} not shown"
    for name in ("allowed_origins", "require_token", "writes_per_minute", "bytes_per_day",
                 "new_notes_per_day"):  # fmt: skip
        assert name in SCHEMA["mcp"]


@pytest.mark.parametrize(
    "origin", ["http://localhost:*", "localhost:3000", "http://localhost:3000/app", "*"]
)
def test_mcp_allowed_origins_are_exact_origins(companion_home: Path, origin: str) -> None:
    write_config(companion_home, f'[mcp]\nallowed_origins = ["{origin}"]\n')
    with pytest.raises(ConfigError, match="allowed_origins"):
        load_config(device_paths())
    write_config(companion_home, '[mcp]\nallowed_origins = ["http://localhost:3000"]\n')
    assert load_config(device_paths()).settings.mcp.allowed_origins == ("http://localhost:3000",)


# ---- one validation for times, time zones and URLs (issue #13, item 5) ----------------------

BAD_VALUES = [
    ("dream", "time", "25:00", "HH:MM"),
    ("dream", "time", "24:00", "HH:MM"),
    ("dream", "time", "2:60", "HH:MM"),
    ("dream", "time", "0200", "HH:MM"),
    ("dream", "time", "", "HH:MM"),
    ("notify", "morning_time", "8 am", "HH:MM"),
    ("dream", "timezone", "Mars/Base", "time zone"),
    ("dream", "timezone", "", "time zone"),
    ("dream", "timezone", "../../etc/passwd", "time zone"),
    ("sync", "relay_url", "ftp://x", "http"),
    ("sync", "relay_url", "relay.example.org", "http"),
    ("sync", "relay_url", "https://", "http"),
    ("sync", "relay_url", "http://host:99999", "http"),
    ("llm", "base_url", "file:///etc/passwd", "http"),
]


@pytest.mark.parametrize(("section", "name", "value", "fragment"), BAD_VALUES)
def test_times_zones_and_urls_are_checked_by_the_schema(
    companion_home: Path, section: str, name: str, value: str, fragment: str
) -> None:
    f = write_config(companion_home, f"[{section}]\n{name} = {value!r}\n".replace("'", '"'))
    with pytest.raises(ConfigError) as info:
        load_config(device_paths())
    msg = str(info.value)
    assert str(f) in msg and f"[{section}] {name}" in msg and fragment in msg
    assert "\n" not in msg
    fresh = load_config(device_paths(), file=companion_home / "absent.toml")
    with pytest.raises(ConfigError):  # the same rule when a value is set (the settings window)
        fresh.set(section, name, value)


@pytest.mark.parametrize(
    ("section", "name", "value"),
    [
        ("dream", "time", "25:00"),
        ("dream", "timezone", "Mars/Base"),
        ("sync", "relay_url", "ftp://x"),
    ],
)
def test_config_show_and_doctor_name_a_bad_value(
    companion_home: Path, section: str, name: str, value: str
) -> None:
    f = write_config(companion_home, f'[{section}]\n{name} = "{value}"\n')
    shown = run_companion("config", "show")
    assert shown.returncode == 2, shown.stdout
    assert shown.stderr.count("\n") == 1 and str(f) in shown.stderr
    assert f"[{section}] {name}" in shown.stderr and "Traceback" not in shown.stderr
    doctor = run_companion("doctor", "--json")
    assert "Traceback" not in doctor.stderr
    import json

    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["config"]["status"] == "FAIL"
    assert f"[{section}] {name}" in checks["config"]["detail"]
    assert doctor.returncode == 1


HHMM_CASES = ["02:00", "2:00", "23:59", "0:00", "00:00", " 07:15 ", "24:00", "25:00", "2:5",
              "02:5", "02:60", "-1:00", "2:00pm", "02:00:00", "", "٠٢:٠٠"]  # fmt: skip


@pytest.mark.parametrize("text", HHMM_CASES)
def test_config_window_and_scheduler_agree_on_times(companion_home: Path, text: str) -> None:
    """One rule for HH:MM: what the config accepts, the settings window and both schedulers
    accept too (and the other way round)."""
    from companion.dream.schedule import trigger
    from companion.gui import i18n, validate

    i18n.set_language("en")
    cfg = load_config(device_paths())
    try:
        cfg.set("dream", "time", text)
        config_ok = True
    except ConfigError:
        config_ok = False
    window_ok = validate.hhmm(text) is None
    assert window_ok == config_ok, text
    if config_ok:
        trig = trigger(cfg)  # the nightly schedule reads it with the same rule
        fields = {f.name: str(f) for f in trig.fields}
        hour, minute = (int(p) for p in text.strip().split(":"))
        assert (fields["hour"], fields["minute"]) == (str(hour), str(minute))


def test_lenient_load_keeps_the_good_keys_and_names_the_bad_ones(companion_home: Path) -> None:
    """The desktop app loads a broken file leniently: each bad key is one problem, its value
    falls back to the default, and everything else is kept."""
    write_config(
        companion_home,
        '[dream]\ntime = "25:00"\ntimezone = "America/Lima"\n[sync]\nrelay_url = "ftp://x"\n',
    )
    cfg = load_config(device_paths(), lenient=True)
    assert [(p.section, p.name) for p in cfg.problems] == [("dream", "time"), ("sync", "relay_url")]
    assert cfg.get("dream", "time") == "02:00" and cfg.get("dream", "timezone") == "America/Lima"
    assert cfg.raw_value("dream", "time") == "25:00"
    assert all("\n" not in p.message and str(cfg.file) in p.message for p in cfg.problems)
    cfg.set("dream", "time", "03:00")
    assert [(p.section, p.name) for p in cfg.problems] == [("sync", "relay_url")]


def test_lenient_load_never_overwrites_a_file_that_is_not_toml(companion_home: Path) -> None:
    f = write_config(companion_home, "[dream\ntime = 1\n")
    cfg = load_config(device_paths(), lenient=True)
    assert len(cfg.problems) == 1 and "not valid TOML" in cfg.problems[0].message
    with pytest.raises(ConfigError, match="not valid TOML"):
        cfg.save()
    assert f.read_text(encoding="utf-8") == "[dream\ntime = 1\n"
