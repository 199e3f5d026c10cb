"""`companion install-service`: the systemd user units it writes are valid for systemd itself.

Validation is systemd's own: `systemd-escape` for instance names and `systemd-analyze verify
--user` for the units (Debian's systemd; CI installs it). Those tests skip only when the
binaries are missing.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.cli import main
from companion.errors import CompanionError
from companion.services import units as svc

SYSTEMD_ESCAPE = shutil.which("systemd-escape")
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_escape = pytest.mark.needs("systemd")
needs_analyze = pytest.mark.needs("systemd")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd is Linux")


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`companion ARGS` in this process, exit status as a user sees it."""
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    return int(info.value.code or 0), out.out, out.err


def systemd_escape(path: str) -> str:
    return subprocess.run(
        [SYSTEMD_ESCAPE, "--path", path], capture_output=True, text=True, check=True
    ).stdout.strip()


def verify(unit_dir: Path, *names: str, home: Path | None = None) -> subprocess.CompletedProcess:
    """`systemd-analyze verify --user` on units in `unit_dir`; instances get a link to their
    template, as systemd would find them."""
    paths = []
    for name in names:
        p = unit_dir / name
        m = re.match(r"^(.+@)(.+)(\.\w+)$", name)
        if m and not p.exists():
            p.symlink_to(unit_dir / f"{m[1]}{m[3]}")
        paths.append(str(p))
    runtime = short_runtime_dir()
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime))
    if home is not None:
        env["HOME"] = str(home)
    try:
        return subprocess.run(
            [SYSTEMD_ANALYZE, "verify", "--user", *paths],
            capture_output=True,
            text=True,
            env=env,
            cwd=unit_dir,
            timeout=60,
        )
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def short_runtime_dir() -> Path:
    """A fresh XDG_RUNTIME_DIR for `systemd-analyze --user`, under a short system folder.

    systemd-analyze loads the user's socket units too, whose paths sit under the runtime dir
    and must fit a socket address (108 bytes): under pytest's tmp_path a long TMPDIR made them
    "File name too long" (#39, item 3). So not under TMPDIR, whatever it is."""
    for base in ("/tmp", "/dev/shm", "/var/tmp"):
        if os.path.isdir(base) and os.access(base, os.W_OK | os.X_OK):
            return Path(tempfile.mkdtemp(prefix="vc-rt-", dir=base))
    return Path(tempfile.mkdtemp(prefix="vc-rt-"))


def assert_verified(res: subprocess.CompletedProcess) -> None:
    # warnings (unknown keys, bad values that systemd ignores) count as failures too
    assert res.returncode == 0 and res.stderr.strip() == "", res.stderr


# -- escaping ----------------------------------------------------------------------------------

TRICKY = [
    "/srv/vault",
    "/home/ana/My Vault",
    "/home/ana/vault-2024/notas é ñ",
    "/home/ana/.hidden/vault",
    "/tmp//double///slashes/",
    "/tmp/./dot",
    "/a/b%c$d\\e\"f'g;h",
    "/",
    "/x/-dash-/_under_/:colon:",
]


@needs_escape
@pytest.mark.parametrize("path", TRICKY)
def test_escape_matches_systemd_escape(path: str) -> None:
    assert svc.systemd_escape_path(path) == systemd_escape(path)


@needs_escape
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.text(
            st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\0"),
            min_size=1,
            max_size=12,
        ).filter(lambda s: s not in (".", "..")),
        min_size=1,
        max_size=4,
    )
)
def test_escape_round_trips_through_systemd(parts: list[str]) -> None:
    path = "/" + "/".join(parts)
    escaped = svc.systemd_escape_path(path)
    assert escaped == systemd_escape(path)
    back = subprocess.run(
        [SYSTEMD_ESCAPE, "--unescape", "--path", escaped], capture_output=True, text=True
    ).stdout.removesuffix("\n")
    assert back == path


def test_paths_with_dotdot_or_line_breaks_are_refused(tmp_path: Path) -> None:
    with pytest.raises(Exception, match=r"\.\."):
        svc.systemd_escape_path("/srv/../etc")
    with pytest.raises(Exception, match="line break"):
        svc.exec_word("a\nb")
    with pytest.raises(Exception, match="too long"):
        svc.instance_unit(svc.WATCH_TEMPLATE, Path("/" + "x" * 300))


def test_exec_words_escape_specifiers_variables_and_quotes() -> None:
    assert svc.exec_word("/usr/bin/python3") == "/usr/bin/python3"
    assert svc.exec_word("a b") == '"a b"'
    assert svc.exec_word("100%") == "100%%"
    assert svc.exec_word("$HOME") == "$$HOME"
    assert svc.exec_word("/opt/$x/py", first=True) == "/opt/$x/py"  # not expanded in argv[0]
    assert svc.exec_word('say "hi"\\') == '"say \\"hi\\"\\\\"'
    assert svc.exec_word(";") == "\\;"
    assert svc.exec_word(svc.Specifier("%h/bin/companion")) == "%h/bin/companion"
    assert svc.env_assignment("X", 'a "b" 5%') == 'Environment="X=a \\"b\\" 5%%"'


@needs_analyze
@linux_only
def test_an_interpreter_in_an_awkward_folder_is_found_by_systemd(tmp_path: Path) -> None:
    # systemd checks that ExecStart's program exists: proof that quoting and %-escaping of
    # the program path are what systemd reads back
    odd = tmp_path / "venv with space, 100% $dollar; &amp é"
    odd.mkdir()
    (odd / "python").symlink_to(sys.executable)
    units = tmp_path / "units"
    svc.write_units(svc.watch_units([str(odd / "python"), "-m", "companion"]), units)
    assert_verified(verify(units, "companion-watch@srv-vault.service"))
    (odd / "python").unlink()
    res = verify(units, "companion-watch@srv-vault.service")
    assert res.returncode != 0 and "is not executable" in res.stderr


@needs_analyze
@linux_only
def test_units_in_a_deep_folder_verify_whatever_the_temp_path(tmp_path: Path) -> None:
    """The check itself must not depend on a short temp path (#39, item 3): units under a
    folder far longer than a socket address still verify cleanly."""
    deep = tmp_path / ("d" * 60) / ("e" * 60) / "units"
    svc.write_units(svc.relay_units(svc.companion_command(), deep / "data"), deep)
    assert len(str(deep)) > 120
    assert_verified(verify(deep, "companion-relay.service"))


def test_a_program_path_systemd_refuses_is_a_clear_error() -> None:
    # systemd rejects quotes and backslashes in the program's path ("special characters")
    for bad in ('/opt/my "venv"/python', "/opt/it's/python", "/opt/back\\slash/python"):
        with pytest.raises(CompanionError, match="quotes or backslashes"):
            svc.watch_units([bad, "-m", "companion"])


# -- the command -------------------------------------------------------------------------------


@needs_analyze
@linux_only
def test_all_units_written_by_the_command_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = tmp_path / "Mi Vault (agente)"
    vault.mkdir()
    units = tmp_path / "units"
    for kind in ("relay", "watch", "dream"):
        extra = [] if kind == "relay" else ["--vault", str(vault)]
        code, out, err = run_main(
            ["install-service", kind, *extra, "--unit-dir", str(units)], capsys
        )
        assert code == 0, err
        assert "systemctl --user daemon-reload" in out
        assert "journalctl --user -u" in out
    names = sorted(p.name for p in units.iterdir())
    assert names == [
        "companion-dream@.service",
        "companion-dream@.timer",
        "companion-relay.service",
        "companion-watch@.service",
    ]
    instance = svc.systemd_escape_path(vault)
    if SYSTEMD_ESCAPE:
        assert instance == systemd_escape(str(vault))
    assert_verified(
        verify(
            units,
            "companion-relay.service",
            f"companion-watch@{instance}.service",
            f"companion-dream@{instance}.service",
            f"companion-dream@{instance}.timer",
        )
    )


def test_watch_unit_runs_this_interpreter_on_the_instance_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], companion_home: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    units = tmp_path / "units"
    code, out, _ = run_main(
        ["install-service", "watch", "--vault", str(vault), "--unit-dir", str(units)], capsys
    )
    assert code == 0
    text = (units / "companion-watch@.service").read_text()
    assert f"ExecStart={sys.executable} -m companion -v watch %f\n" in text
    # the device's state and the agent's memory follow the service
    assert f'Environment="COMPANION_HOME={companion_home}"' in text
    assert f'Environment="HERMES_HOME={os.environ["HERMES_HOME"]}"' in text
    assert "Restart=on-failure" in text and "RestartPreventExitStatus=2" in text
    assert "NoNewPrivileges=yes" in text
    name = shlex.quote(f"companion-watch@{svc.systemd_escape_path(vault)}.service")
    assert f"systemctl --user enable --now {name}\n" in out
    assert "not set up for sync on this device yet" in out  # `companion init` comes first
    assert "loginctl enable-linger" in out or "linger" not in out


def test_instance_names_with_backslashes_are_shell_quoted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = tmp_path / "my vault"
    vault.mkdir()
    code, out, _ = run_main(
        ["install-service", "watch", "--vault", str(vault), "--unit-dir", str(tmp_path / "u")],
        capsys,
    )
    assert code == 0
    name = svc.instance_unit(svc.WATCH_TEMPLATE, vault)
    assert "\\x20" in name
    assert f"enable --now '{name}'" in out


def test_dream_timer_uses_the_configured_time_and_zone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], companion_home: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (companion_home / "config").mkdir(parents=True)
    (companion_home / "config" / "config.toml").write_text(
        f'[vault]\npath = "{vault}"\n[dream]\ntime = "03:15"\ntimezone = "America/New_York"\n'
    )
    units = tmp_path / "units"
    code, out, err = run_main(["install-service", "dream", "--unit-dir", str(units)], capsys)
    assert code == 0, err
    timer = (units / "companion-dream@.timer").read_text()
    assert "OnCalendar=*-*-* 03:15:00 America/New_York\n" in timer
    assert "Persistent=true\n" in timer
    assert "WantedBy=timers.target" in timer
    service = (units / "companion-dream@.service").read_text()
    assert "Type=oneshot" in service and " -v dream %f\n" in service
    # options override the config
    code, out, _ = run_main(
        ["install-service", "dream", "--at", "02:00", "--timezone", "Europe/Madrid",
         "--unit-dir", str(units)],
        capsys,
    )  # fmt: skip
    assert (
        "OnCalendar=*-*-* 02:00:00 Europe/Madrid\n"
        in (units / "companion-dream@.timer").read_text()
    )
    assert "updated:" in out and "unchanged:" in out


@needs_analyze
def test_systemd_here_reads_a_calendar_with_a_time_zone() -> None:
    res = subprocess.run(
        [SYSTEMD_ANALYZE, "calendar", svc.calendar_spec("02:00", "Europe/Madrid")],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert "Normalized form: *-*-* 02:00:00 Europe/Madrid" in res.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["dream", "--at", "25:00"], "HH:MM"),
        (["dream", "--timezone", "Mars/Olympus"], "unknown time zone"),
        (["relay", "--vault", "."], "--vault is for watch and dream"),
        (["watch", "--port", "80"], "--port is for relay"),
        (["watch"], "name the vault"),
        (["watch", "--vault", "/nonexistent/vault"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    if args[0] == "dream" and "--vault" not in args:
        args = [*args, "--vault", str(vault)]
    code, out, err = run_main(["install-service", *args, "--unit-dir", str(tmp_path / "u")], capsys)
    assert code == 2, (out, err)
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "u").exists()


def test_a_unit_it_did_not_write_is_kept_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    units = tmp_path / "units"
    units.mkdir()
    mine = units / "companion-relay.service"
    mine.write_text("[Service]\nExecStart=/usr/local/bin/my-own-relay\n")
    code, _, err = run_main(["install-service", "relay", "--unit-dir", str(units)], capsys)
    assert code == 1 and "not written by install-service" in err
    assert "my-own-relay" in mine.read_text()
    code, out, _ = run_main(
        ["install-service", "relay", "--unit-dir", str(units), "--force"], capsys
    )
    assert code == 0 and "updated:" in out
    assert mine.read_text().startswith(svc.MARKER)


def test_dry_run_prints_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    units = tmp_path / "units"
    code, out, _ = run_main(
        ["install-service", "relay", "--port", "9443", "--dry-run", "--unit-dir", str(units)],
        capsys,
    )
    assert code == 0
    assert not units.exists()
    assert f"# --- {units / 'companion-relay.service'}" in out
    assert "--port 9443 --forwarded-allow-ips 127.0.0.1" in out


def test_relay_on_a_public_address_does_not_trust_forwarded_headers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_main(
        ["install-service", "relay", "--host", "0.0.0.0", "--dry-run", "--unit-dir", str(tmp_path)],
        capsys,
    )
    assert code == 0
    assert "--forwarded-allow-ips" not in out
    assert "without TLS" in out


@linux_only
def test_default_unit_dir_follows_xdg_config_home(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COMPANION_HOME", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    code, out, _ = run_main(["install-service", "relay"], capsys)
    assert code == 0
    assert (tmp_path / "xdg" / "systemd" / "user" / "companion-relay.service").is_file()
    assert "systemctl --user link" not in out  # already where systemd looks
    assert svc.user_unit_dir({"HOME": "/home/ana"}) == Path("/home/ana/.config/systemd/user")


@linux_only
def test_with_companion_home_the_units_stay_under_it_and_the_command_says_how_to_link(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    companion_home: Path,
) -> None:
    """COMPANION_HOME moves all of a device's state; the units too, never into the real
    ~/.config/systemd/user (#39, item 8g). The command says where they are and how to link
    them into systemd's search path."""
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    vault = tmp_path / "vault"
    vault.mkdir()
    here = companion_home / "systemd" / "user"
    assert svc.install_unit_dir() == here
    code, out, err = run_main(["install-service", "watch", "--vault", str(vault)], capsys)
    assert code == 0, err
    assert (here / "companion-watch@.service").is_file()
    assert not xdg.exists()
    assert f"created: {here / 'companion-watch@.service'}" in out
    link = f"systemctl --user link {shlex.quote(str(here / 'companion-watch@.service'))}"
    assert link in out
    assert out.index(link) < out.index("systemctl --user enable --now")
    code, out, _ = run_main(["install-service", "relay", "--dry-run"], capsys)
    assert code == 0 and f"# --- {here / 'companion-relay.service'}" in out
    assert not (here / "companion-relay.service").exists()
    # --unit-dir still wins
    code, out, _ = run_main(["install-service", "relay", "--unit-dir", str(tmp_path / "u")], capsys)
    assert code == 0 and (tmp_path / "u" / "companion-relay.service").is_file()


def test_frozen_binary_is_started_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert svc.companion_command() == [sys.executable]
    monkeypatch.setattr(sys, "frozen", False)
    assert svc.companion_command() == [sys.executable, "-m", "companion"]


def test_help_has_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(["install-service", "--help"], capsys)
    assert code == 0
    assert "Example:\n    companion install-service relay --data /srv/relay\n" in out


def test_the_relay_unit_raises_the_open_file_limit() -> None:
    from companion.services.units import relay_units

    (unit,) = relay_units(["/usr/bin/companion"], Path("/srv/relay"))
    assert "\nLimitNOFILE=65536\n" in unit.text
