"""systemd user units for the relay, the watch daemon and the dream (the library behind
`companion install-service`; `companion.services.cli` is the command).

Four units, written for the current user into `$XDG_CONFIG_HOME/systemd/user/` (with
`COMPANION_HOME` set, into `$COMPANION_HOME/systemd/user/` instead, to be linked with
`systemctl --user link`: that variable moves all of a device's state, so a test or a second
device on the machine never writes systemd's real folder):

- `companion-relay.service`: `companion relay serve` on localhost (behind a TLS reverse proxy);
- `companion-watch@.service`: `companion watch VAULT`, one instance per vault, the instance
  being the vault's path escaped the way `systemd-escape --path` does (`%f` gives it back);
- `companion-dream@.service` + `companion-dream@.timer`: `companion dream VAULT` once a night at
  `[dream] time` in `[dream] timezone`; `Persistent=true` runs a night missed while the machine
  was off at the next boot.

`ExecStart` runs the interpreter this command runs under (`python -m companion`), or the frozen
binary itself, so a virtualenv or pipx install keeps working under systemd, where `PATH` is
short. Variables that choose this device's state (`COMPANION_HOME`, `HERMES_HOME`,
`COMPANION_PASSPHRASE_FILE`) are carried into the units when set.

Hardening: only options that work in a user manager without user namespaces (the seccomp-based
ones and `NoNewPrivileges`); `ProtectSystem=`, `PrivateTmp=` and friends need namespaces that
many servers do not give unprivileged users, and a unit that fails to start protects nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from companion.errors import CompanionError, InputError
from companion.fileio import write_text_atomic

RELAY_UNIT = "companion-relay.service"
WATCH_TEMPLATE = "companion-watch@.service"
DREAM_TEMPLATE = "companion-dream@.service"
DREAM_TIMER = "companion-dream@.timer"
MARKER = "# Written by `companion install-service`"
CARRIED_ENV = ("COMPANION_HOME", "HERMES_HOME", "COMPANION_PASSPHRASE_FILE")
KINDS = ("relay", "watch", "dream")

HARDENING = """\
# hardening that works in a user manager (seccomp, no namespaces needed)
NoNewPrivileges=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
RestrictNamespaces=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallErrorNumber=EPERM
# files the service creates are owner-only; a drop-in with UMask=0027 shares them with a group
UMask=0077
"""

_SAFE_WORD = re.compile(r"^[A-Za-z0-9_./:@=+,%$-]+$")
_UNIT_NAME_CHARS = re.compile(rb"[A-Za-z0-9:_.]")
_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


class Specifier(str):
    """A word written into a unit as it is, so systemd expands it (`%h/.local/bin/companion`)."""


@dataclass(frozen=True)
class UnitFile:
    name: str
    text: str


# ----------------------------------------------------------------------------------------------
# Escaping: unit names, command lines, environment assignments
# ----------------------------------------------------------------------------------------------


def systemd_escape_path(path: str | os.PathLike[str]) -> str:
    """What `systemd-escape --path PATH` prints: the instance name that `%f` turns back into
    PATH (slashes become `-`; bytes outside `[A-Za-z0-9:_.]` and a leading `.` become `\\xNN`)."""
    text = os.fspath(path)
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise InputError(f"{text!r}: use a path without '..'")
    if not parts:
        return "-"
    raw = "/".join(parts).encode("utf-8", "surrogateescape")
    out: list[str] = []
    for i, b in enumerate(raw):
        ch = bytes([b])
        if ch == b"/":
            out.append("-")
        elif (i == 0 and ch == b".") or not _UNIT_NAME_CHARS.match(ch):
            out.append(f"\\x{b:02x}")
        else:
            out.append(ch.decode("ascii"))
    return "".join(out)


def instance_unit(template: str, vault: Path) -> str:
    """`companion-watch@.service` + `/srv/vault` -> `companion-watch@srv-vault.service`."""
    prefix, suffix = template.split("@", 1)
    name = f"{prefix}@{systemd_escape_path(vault)}{suffix}"
    if len(name) > 255:
        raise InputError(
            f"the vault path {vault} is too long for a systemd unit name; use a shorter path "
            "(a symlink works: ln -s LONG/PATH ~/vault)"
        )
    return name


def _check_printable(value: str, what: str) -> None:
    if any(c in value for c in "\n\r\0"):
        raise InputError(f"{what} {value!r} contains a line break or NUL; systemd cannot use it")


def exec_word(arg: str, *, first: bool = False) -> str:
    """One word of an `ExecStart=` line: `%` doubled (specifiers), `$` doubled in arguments
    (variable expansion; systemd does not expand the executable itself), quoted when needed."""
    _check_printable(arg, "the argument")
    if isinstance(arg, Specifier):
        return str(arg)
    if first and any(c in arg for c in "\"'\\"):
        raise CompanionError(
            f"systemd cannot start a program whose path has quotes or backslashes: {arg}; "
            "install the companion in a plainer folder (pipx does)"
        )
    text = arg.replace("%", "%%")
    if not first:
        text = text.replace("$", "$$")
    if text == ";":
        return "\\;"
    if _SAFE_WORD.match(text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def exec_line(argv: Sequence[str]) -> str:
    return " ".join(exec_word(a, first=i == 0) for i, a in enumerate(argv))


def env_assignment(name: str, value: str) -> str:
    """An `Environment=` line (specifiers are expanded there, variables are not)."""
    _check_printable(value, f"${name}")
    text = f"{name}={value}".replace("%", "%%").replace("\\", "\\\\").replace('"', '\\"')
    return f'Environment="{text}"'


# ----------------------------------------------------------------------------------------------
# The units
# ----------------------------------------------------------------------------------------------


def companion_command() -> list[str]:
    """How a unit starts this companion: the frozen binary, or this interpreter with `-m`."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "companion"]


def carried_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    return {k: env[k] for k in CARRIED_ENV if env.get(k)}


def _header(summary: str) -> str:
    return (
        f"{MARKER}: {summary}\n"
        "# Running install-service again rewrites this file; keep local changes in a drop-in\n"
        "# (systemctl --user edit UNIT). Guide: docs/server-setup.md\n"
    )


def _environment(env: Mapping[str, str]) -> str:
    lines = ["Environment=PYTHONUNBUFFERED=1"]
    lines += [env_assignment(k, v) for k, v in sorted(env.items())]
    return "\n".join(lines) + "\n"


def relay_units(
    command: Sequence[str],
    data_dir: Path | Specifier,
    host: str = "127.0.0.1",
    port: int = 8787,
    forwarded_allow_ips: str | None = None,
    env: Mapping[str, str] | None = None,
) -> list[UnitFile]:
    data = data_dir if isinstance(data_dir, Specifier) else str(data_dir)
    argv = [*command, "-v", "relay", "serve", "--data", data]
    argv += ["--host", host, "--port", str(port)]
    if forwarded_allow_ips:
        argv += ["--forwarded-allow-ips", forwarded_allow_ips]
    text = (
        _header("the relay (ciphertext only), on localhost behind a TLS reverse proxy") + "[Unit]\n"
        "Description=Vault Companion relay\n"
        "StartLimitIntervalSec=10min\n"
        "StartLimitBurst=5\n"
        "\n"
        "[Service]\n"
        "Type=exec\n"
        f"ExecStart={exec_line(argv)}\n" + _environment(env or {}) + "Restart=on-failure\n"
        "RestartSec=3s\n"
        "# exit status 2 is a configuration or input error: restarting cannot fix it\n"
        "RestartPreventExitStatus=2\n"
        "# long-polls are closed gracefully on SIGTERM\n"
        "TimeoutStopSec=30s\n"
        "# one descriptor per connection (two while a blob uploads): the relay caps its\n"
        "# connections to what this limit leaves room for (the default 1024 is ~400)\n"
        "LimitNOFILE=65536\n" + HARDENING + "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )
    return [UnitFile(RELAY_UNIT, text)]


def watch_units(command: Sequence[str], env: Mapping[str, str] | None = None) -> list[UnitFile]:
    # %f (the unescaped instance path) must reach systemd as a specifier, not escaped
    line = exec_line([*command, "-v", "watch"]) + " %f"
    text = (
        _header("keeps the vault at the instance path (%f) in sync") + "[Unit]\n"
        "Description=Vault Companion sync daemon for %f\n"
        "# when the relay runs on this machine too, start it first\n"
        "After=companion-relay.service\n"
        "StartLimitIntervalSec=10min\n"
        "StartLimitBurst=5\n"
        "\n"
        "[Service]\n"
        "Type=exec\n"
        f"ExecStart={line}\n" + _environment(env or {}) + "Restart=on-failure\n"
        "RestartSec=10s\n"
        "RestartPreventExitStatus=2\n"
        "TimeoutStopSec=30s\n" + HARDENING + "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )
    return [UnitFile(WATCH_TEMPLATE, text)]


def calendar_spec(at: str, timezone: str) -> str:
    """`02:00` + `Europe/Madrid` -> `*-*-* 02:00:00 Europe/Madrid` (an OnCalendar= value)."""
    m = _HHMM.match(at)
    if m is None:
        raise InputError(f"the dream time must be HH:MM (00:00-23:59), got {at!r}")
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(
            f"unknown time zone {timezone!r}: use an IANA name such as Europe/Madrid"
        ) from None
    return f"*-*-* {m[1]}:{m[2]}:00 {timezone}"


def dream_units(
    command: Sequence[str],
    at: str = "02:00",
    timezone: str = "Europe/Madrid",
    env: Mapping[str, str] | None = None,
) -> list[UnitFile]:
    spec = calendar_spec(at, timezone)
    line = exec_line([*command, "-v", "dream"]) + " %f"
    service = (
        _header("one nightly dream of the vault at the instance path (%f); started by the timer")
        + "[Unit]\n"
        "Description=Vault Companion nightly dream for %f\n"
        "After=companion-relay.service companion-watch@%i.service\n"
        "\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"ExecStart={line}\n"
        + _environment(env or {})
        + "# below the relay lease (2 h), so a stuck night never overlaps another dreamer\n"
        "TimeoutStartSec=100min\n"
        "Nice=10\n"
        "IOSchedulingClass=idle\n" + HARDENING
    )
    timer = (
        _header(f"runs companion-dream@%i.service every night at {at} {timezone}") + "[Unit]\n"
        "Description=Vault Companion nightly dream for %f\n"
        "\n"
        "[Timer]\n"
        f"OnCalendar={spec}\n"
        "# a night missed while the machine was off runs at the next boot\n"
        "Persistent=true\n"
        "AccuracySec=1min\n"
        "\n"
        "[Install]\n"
        "WantedBy=timers.target\n"
    )
    return [UnitFile(DREAM_TEMPLATE, service), UnitFile(DREAM_TIMER, timer)]


# ----------------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------------


def user_unit_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/systemd/user` (default `~/.config/systemd/user`)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base).expanduser() / "systemd" / "user"


def install_unit_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where install-service writes by default: `$COMPANION_HOME/systemd/user` when
    `COMPANION_HOME` is set, else systemd's own `user_unit_dir`."""
    env = os.environ if environ is None else environ
    home = env.get("COMPANION_HOME")
    if home:
        return Path(home).expanduser().resolve() / "systemd" / "user"
    return user_unit_dir(env)


def write_units(units: Sequence[UnitFile], unit_dir: Path, force: bool = False) -> list[str]:
    """Write each unit atomically; 'created', 'updated' or 'unchanged' per unit.

    A file of the same name that install-service did not write is left alone unless `force`.
    """
    for u in units:
        path = unit_dir / u.name
        if path.exists() and not force:
            try:
                head = path.read_text(encoding="utf-8", errors="replace")[:200]
            except OSError as exc:
                raise CompanionError(f"cannot read {path}: {exc.strerror or exc}") from None
            if not head.startswith(MARKER):
                raise CompanionError(
                    f"{path} exists and was not written by install-service; "
                    "move it aside or pass --force to replace it"
                )
    outcomes: list[str] = []
    try:
        unit_dir.mkdir(parents=True, exist_ok=True)
        for u in units:
            path = unit_dir / u.name
            old = path.read_text(encoding="utf-8") if path.is_file() else None
            if old == u.text:
                outcomes.append("unchanged")
                continue
            write_text_atomic(path, u.text, mode=0o644)
            outcomes.append("created" if old is None else "updated")
    except OSError as exc:
        raise CompanionError(f"cannot write units to {unit_dir}: {exc.strerror or exc}") from None
    return outcomes


def linger_enabled(user: str | None = None) -> bool | None:
    """Whether systemd keeps this user's services running after logout (None: cannot tell)."""
    linger_dir = Path("/var/lib/systemd/linger")
    if not linger_dir.is_dir():
        return None
    name = user or _user_name()
    return (linger_dir / name).exists() if name else None


def _user_name() -> str | None:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return os.environ.get("USER")


def next_elapse(spec: str) -> str | None:
    """systemd's own reading of an OnCalendar= value ('Next elapse: ...'), when it is here."""
    tool = shutil.which("systemd-analyze")
    if tool is None:
        return None
    try:
        out = subprocess.run(
            [tool, "calendar", spec], capture_output=True, text=True, timeout=10, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "Next elapse":
            return value.strip()
    return None
