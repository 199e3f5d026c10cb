"""`companion doctor`: check this installation and say, one line each, what to fix.

Each check is a small function that returns one `Check` (ok, warn, FAIL or skip) with a
detail and, when something is wrong, the fix. The checks reuse the engine's own code (the
secret store's backend rules, the relay client, the vault layout, the Hermes home resolution)
so the doctor and the product never disagree about what is acceptable. A check that crashes is
reported as a failure of that check; the doctor itself never ends in a traceback.

The exit status is 1 when any check FAILs, so scripts and monitoring can run it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click

from companion.config import Config
from companion.context import AppContext, pass_app
from companion.errors import CompanionError
from companion.paths import DevicePaths
from companion.vaultpath import vault_choice

STATUSES = ("ok", "warn", "FAIL", "skip")
KEYRING_TIMEOUT = 5.0
CLOCK_WARN_S = 5.0
CLOCK_FAIL_S = 300.0
DISK_FAIL_BYTES = 100 * 2**20
DISK_WARN_BYTES = 2**30
INOTIFY_SUGGESTED = 524288
SYSCTL_FILE = "/etc/sysctl.d/60-vault-companion.conf"

T = TypeVar("T")


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report."""

    name: str
    status: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.status:<5} {self.name:<12} {self.detail}"
        return f"{text} — fix: {self.fix}" if self.fix else text


@dataclass
class Context:
    """What the checks look at, gathered once; checks may leave facts for later checks."""

    paths: DevicePaths
    config: Config
    vault: Path | None
    relay_url: str | None
    timeout: float
    unit_dir: Path | None = None
    relay_data: Path | None = None  # a relay data folder to check (--relay-data)
    relay_time: tuple[float, float, float] | None = None  # (sent, server time, received)
    device: Any = None  # companion.sync.state.device.DeviceState, when the vault is set up for sync
    _dirs: int | None = field(default=None, repr=False)

    @property
    def kind(self) -> str:
        if self.device is not None and getattr(self.device, "kind", None):
            return str(self.device.kind)
        return str(self.config.settings.sync.kind)

    def vault_dirs(self) -> int:
        """Folders in the vault, the vault included: one inotify watch each."""
        if self._dirs is None:
            assert self.vault is not None
            count = 0
            for _root, dirs, _files in os.walk(self.vault, followlinks=False):
                count += 1
                dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(_root, d))]
            self._dirs = count
        return self._dirs


class _Timeout(Exception):
    pass


def _with_timeout(fn: Callable[[], T], seconds: float) -> T:
    """Run `fn` in a daemon thread; a keyring waiting on an unlock prompt must not hang us."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed back to the caller's thread
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        raise _Timeout
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def _mode(path: Path) -> str:
    return stat.filemode(path.stat().st_mode)


# ----------------------------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------------------------


def check_config(c: Context) -> Check:
    f = c.config.file
    if c.config.problems:
        found = "; ".join(p.message for p in c.config.problems)
        return Check(
            "config",
            "FAIL",
            found,
            "edit the file (`companion config show --defaults` lists every key); "
            "the other checks used the defaults for these keys",
        )
    if not f.exists():
        return Check("config", "ok", f"no file at {f}: every setting is its default")
    return Check("config", "ok", f"{f} is valid")


def check_keyring(c: Context) -> Check:
    from companion.credentials.store import NO_KEYRING_HINT, KeyringStore, secure_backend

    uses_file = c.config.settings.secrets.backend == "file"
    try:
        backend = secure_backend()
    except CompanionError as exc:
        found = str(exc).removesuffix("; " + NO_KEYRING_HINT)
        if uses_file:
            return Check("keyring", "ok", 'none here, and not used ([secrets] backend = "file")')
        return Check("keyring", "FAIL", found, NO_KEYRING_HINT)
    name = f"{type(backend).__module__}.{type(backend).__qualname__}"
    if uses_file:
        return Check("keyring", "ok", f'{name} is available, not used ([secrets] backend = "file")')
    store = KeyringStore(backend=backend)
    try:
        count = len(_with_timeout(store.names, KEYRING_TIMEOUT))
    except _Timeout:
        return Check(
            "keyring",
            "warn",
            f"{name} did not answer in {KEYRING_TIMEOUT:.0f} s (locked, or waiting on a prompt)",
            "unlock the keyring (log in to the desktop session, or open Passwords and Keys)",
        )
    except CompanionError as exc:
        return Check(
            "keyring", "FAIL", str(exc).removesuffix("; " + NO_KEYRING_HINT), NO_KEYRING_HINT
        )
    return Check("keyring", "ok", f"{name}, {count} companion secret(s)")


def check_secrets_file(c: Context) -> Check:
    from companion.credentials.store import FileStore

    path = c.paths.secrets_file
    uses_file = c.config.settings.secrets.backend == "file"
    if not path.exists() and not path.is_symlink():
        if uses_file:
            return Check("secrets", "ok", f"{path} not created yet (written at the first secret)")
        return Check("secrets", "skip", "keyring backend: no secrets file")
    if path.is_symlink():
        return Check(
            "secrets",
            "FAIL",
            f"{path} is a symbolic link; the file store refuses to follow it",
            "replace the link with the real file, mode 0600",
        )
    if os.name != "nt":
        st = path.stat()
        if st.st_mode & 0o077:
            return Check(
                "secrets",
                "FAIL",
                f"{path} is {stat.filemode(st.st_mode)}: other users can read or change it",
                f"chmod 600 {shlex.quote(str(path))}",
            )
        if st.st_uid != os.getuid():
            return Check(
                "secrets",
                "FAIL",
                f"{path} belongs to uid {st.st_uid}, not to you",
                f"sudo chown {os.getuid()} {shlex.quote(str(path))}",
            )
    try:
        count = len(FileStore(path).names())
    except CompanionError as exc:
        return Check(
            "secrets", "FAIL", str(exc), f"repair or move aside {path}, then `companion init` again"
        )
    note = "" if uses_file else ' (unused: [secrets] backend is "keyring")'
    return Check("secrets", "ok", f"{path}: owner-only (0600), {count} secret(s){note}")


def check_private_dirs(c: Context) -> Check:
    """Folders others can write to let them swap this device's config, state or secrets."""
    if os.name == "nt":
        return Check("folders", "skip", "folder permissions are per-user by default on Windows")
    loose = [
        d
        for d in (c.paths.config_dir, c.paths.data_dir, c.paths.state_dir)
        if d.is_dir() and d.stat().st_mode & 0o022
    ]
    if not loose:
        return Check("folders", "ok", "config, data and state folders are writable by you only")
    world = any(d.stat().st_mode & 0o002 for d in loose)
    shown = ", ".join(f"{d} ({_mode(d)})" for d in loose)
    fix = "chmod go-w " + " ".join(shlex.quote(str(d)) for d in loose)
    who = "every user" if world else "your group"
    return Check("folders", "FAIL" if world else "warn", f"{who} can write to {shown}", fix)


def _relay_data_dir(c: Context) -> Path | None:
    """--relay-data; else the folder the installed relay unit serves; else this device's
    default relay folder when it exists."""
    if c.relay_data is not None:
        return c.relay_data
    from companion.services.units import RELAY_UNIT, install_unit_dir

    unit = (c.unit_dir or install_unit_dir()) / RELAY_UNIT
    if unit.is_file():
        for line in unit.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("ExecStart="):
                words = shlex.split(line.partition("=")[2])
                if "--data" in words[:-1]:
                    return Path(words[words.index("--data") + 1].replace("%%", "%"))
    default = c.paths.data_dir / "relay"
    return default if (default / "relay.db").is_file() else None


def check_relay_data(c: Context) -> Check:
    """The relay's data folder holds wrapped keys (its database and WAL) and every vault's
    ciphertext: nobody but the relay's user may read any of it."""
    from companion.relay.fsmodes import loose_entries

    name = "relay data"
    if os.name == "nt":
        return Check(name, "skip", "file modes are per-user by default on Windows")
    data = _relay_data_dir(c)
    if data is None or "%" in str(data):
        return Check(name, "skip", "no relay data folder here (--relay-data DIR to check one)")
    if not data.is_dir():
        return Check(name, "FAIL", f"{data} is not a folder", "check --data of the relay")
    found, total = loose_entries(data, limit=3)
    if not total:
        return Check(name, "ok", f"{data}: every file and folder is owner-only")
    shown = ", ".join(f"{p} ({_mode(p)})" for p in found) + (", ..." if total > 3 else "")
    return Check(
        name,
        "FAIL",
        f"{total} entr{'y' if total == 1 else 'ies'} readable by other users: {shown}",
        f"chmod -R go-rwx {shlex.quote(str(data))}",
    )


def check_vault(c: Context) -> Check:
    from companion.vault.layout import AREAS, HOME

    if c.vault is None:
        return Check("vault", "skip", "no vault given (--vault DIR, or [vault] path in the config)")
    root = c.vault
    q = shlex.quote(str(root))
    if not root.exists():
        return Check("vault", "FAIL", f"{root} does not exist", f"companion vault init {q}")
    if not root.is_dir():
        return Check(
            "vault", "FAIL", f"{root} is not a folder", "point --vault at the vault folder"
        )
    if not os.access(root, os.R_OK | os.W_OK | os.X_OK):
        return Check(
            "vault",
            "FAIL",
            f"{root} is not readable and writable by you",
            f"sudo chown -R $USER {q}",
        )
    missing = [HOME] if not (root / HOME).is_file() else []
    missing += [f"{a}/" for a in AREAS if not (root / a).is_dir()]
    if missing:
        return Check(
            "vault",
            "warn",
            f"{root} lacks {', '.join(missing)}",
            f"companion vault init {q} (creates only what is missing)",
        )
    return Check("vault", "ok", f"{root}: Home.md, knowledge/, projects/, journal/")


def check_sync(c: Context) -> Check:
    if c.vault is None or not c.vault.is_dir():
        return Check("sync", "skip", "no vault to look at")
    try:
        from companion.sync.state.device import DeviceState
    except ImportError:
        return Check("sync", "skip", "sync is not part of this build")
    init = (
        f"companion init {shlex.quote(str(c.vault))} --relay URL --invite CODE "
        "--device-name NAME --kind human|agent"
    )
    if not DeviceState.exists(c.paths, c.vault):
        return Check("sync", "warn", f"{c.vault} is not set up for sync on this device", init)
    try:
        state = DeviceState.load(c.paths, c.vault)
    except CompanionError as exc:
        return Check("sync", "FAIL", str(exc), init)
    c.device = state
    from companion.credentials.store import open_store

    try:
        store = open_store(c.config)

        def lookup() -> tuple[bool, bool]:
            token = store.get(state.token_name) is not None
            key = state.key_ready and store.get(state.key_name) is not None
            return token, key

        has_token, has_key = _with_timeout(lookup, KEYRING_TIMEOUT)
    except _Timeout:
        return Check(
            "sync", "warn", "the secret store did not answer in time", "unlock the keyring"
        )
    except CompanionError as exc:
        return Check(
            "sync", "FAIL", f"cannot read this device's secrets: {exc}", "see the keyring line"
        )
    who = f"device {state.device_name!r} ({state.kind}) of vault {state.vault_id[:8]}"
    if not has_token:
        return Check(
            "sync",
            "FAIL",
            f"{who}: its relay token is missing from {store.description}",
            f"join again with a new invite: {init}",
        )
    if not state.key_ready:
        return Check("sync", "warn", f"{who}: joined, but the vault key is not stored yet", init)
    if not has_key:
        return Check(
            "sync",
            "FAIL",
            f"{who}: the vault key is missing from {store.description}",
            f"{init} (with the passphrase) restores it",
        )
    return Check("sync", "ok", f"{who}, token and vault key in {store.description}")


def check_relay(c: Context) -> Check:
    from companion.relayclient.client import (
        RelayClient,
        RelayError,
        RelayUnreachable,
        check_relay_url,
    )
    from companion.relayclient.errors import InvalidRelayUrl
    from companion.relayclient.proxy import ProxySettingError

    url = c.relay_url
    verify: bool | str = True
    if not url and c.device is not None:
        url = c.device.relay_url
        verify = getattr(c.device, "ca_cert", "") or True
    url = url or c.config.settings.sync.relay_url or None
    if not url:
        return Check("relay", "skip", "no relay configured (--relay URL, or [sync] relay_url)")
    try:
        check_relay_url(url, insecure_http=True)  # plain http is reported below, not refused
    except InvalidRelayUrl as exc:
        return Check("relay", "FAIL", str(exc), "use e.g. https://relay.example.org")
    parts = urlsplit(url)
    if isinstance(verify, str) and not Path(verify).is_file():
        return Check(
            "relay", "FAIL", f"the CA certificate {verify} is missing", "restore it, or init again"
        )
    proxy = None
    try:
        # no token is sent (health only), and plain http is reported below rather than refused
        with RelayClient(url, timeout=c.timeout, verify=verify, insecure_http=True) as client:
            proxy = client.proxy
            sent = time.time()
            health = client.health()
            received = time.time()
    except ProxySettingError as exc:
        return Check("relay", "FAIL", str(exc), "correct HTTPS_PROXY / HTTP_PROXY / ALL_PROXY")
    except RelayUnreachable as exc:
        msg = str(exc)
        fix = (
            "check the URL, that the relay runs (systemctl --user status companion-relay), "
            "the firewall and the reverse proxy"
        )
        if proxy is not None:
            fix = (
                f"check the forward proxy {proxy.shown} this machine's proxy settings name, "
                "or add the relay's host to NO_PROXY to reach it directly"
            )
        if "CERTIFICATE" in msg.upper():
            fix = "the relay's TLS certificate is not trusted: use a public CA (Caddy gets one)"
        return Check("relay", "FAIL", msg, fix)
    except RelayError as exc:
        return Check(
            "relay",
            "FAIL",
            str(exc),
            "the URL must be the relay's base URL (URL/v1/health must answer)",
        )
    c.relay_time = (sent, float(health["time"]), received)
    detail = f"{url} answers in {(received - sent) * 1000:.0f} ms (relay {health['version']})"
    if proxy is not None:
        detail += f", through the proxy {proxy.shown}"
    local = parts.hostname in ("localhost", "127.0.0.1", "::1")
    if parts.scheme == "http" and not local:
        return Check(
            "relay",
            "warn",
            detail + ", over plain http: device tokens travel unencrypted",
            "publish the relay over https (docs/server-setup.md)",
        )
    return Check("relay", "ok", detail)


def _clock_fix() -> str:
    if sys.platform == "darwin":
        return "System Settings > General > Date & Time > Set time and date automatically"
    if sys.platform.startswith("win"):
        return "Settings > Time & language > Date & time > Sync now"
    return "turn on time sync here and on the relay host: sudo timedatectl set-ntp true"


def clock_check(sent: float, server: float, received: float) -> Check:
    """Judge the skew between this clock and the relay's from one request's timings."""
    skew = server - (sent + received) / 2
    margin = (received - sent) / 2
    detail = f"{skew:+.1f} s against the relay (±{margin:.1f} s)"
    if abs(skew) - margin > CLOCK_FAIL_S:
        return Check(
            "clock",
            "FAIL",
            detail + ": dream times and recent-edit protection would be wrong",
            _clock_fix(),
        )
    if abs(skew) - margin > CLOCK_WARN_S:
        return Check("clock", "warn", detail, _clock_fix())
    return Check("clock", "ok", detail)


def check_clock(c: Context) -> Check:
    if c.relay_time is None:
        return Check("clock", "skip", "needs an answer from the relay")
    return clock_check(*c.relay_time)


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def _is_companion(pid: str) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    names = [os.path.basename(a.decode(errors="replace")) for a in argv[:3]]
    return "companion" in names


def inotify_of(pid: str) -> tuple[int, int]:
    """(watches, instances) of inotify that process `pid` holds (0, 0 when unreadable)."""
    watches = instances = 0
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0, 0
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as fh:
                watches += sum(1 for line in fh if line.startswith("inotify wd:"))
            instances += 1
        except OSError:
            continue
    return watches, instances


def inotify_usage(uid: int | None = None) -> tuple[int, int]:
    """(watches, instances) of inotify that processes of `uid` other than companions hold:
    the per-user limit is shared with every other program of the user (IDEs, sync tools)."""
    uid = os.getuid() if uid is None else uid
    watches = instances = 0
    me = str(os.getpid())
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or pid == me:
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
        except OSError:
            continue
        if _is_companion(pid):
            continue
        w, i = inotify_of(pid)
        watches += w
        instances += i
    return watches, instances


def check_watcher(c: Context) -> Check:
    if not sys.platform.startswith("linux"):
        return Check("watcher", "skip", "no per-user watch limit on this system")
    limit = _read_int("/proc/sys/fs/inotify/max_user_watches")
    max_instances = _read_int("/proc/sys/fs/inotify/max_user_instances")
    if limit is None:
        return Check(
            "watcher", "warn", "inotify limits are not readable", "check /proc/sys/fs/inotify"
        )
    used, instances = inotify_usage()
    if max_instances is not None and instances >= max_instances:
        return Check(
            "watcher",
            "FAIL",
            f"other programs hold all {max_instances} inotify instances",
            f"echo fs.inotify.max_user_instances={max_instances * 2} | sudo tee -a "
            f"{SYSCTL_FILE} && sudo sysctl --system",
        )
    base = f"inotify: {used:,} of {limit:,} watches in use by other programs"
    if c.vault is None or not c.vault.is_dir():
        return Check("watcher", "ok", base)
    return watches_check(c.vault_dirs(), limit, used)


def watches_check(need: int, limit: int, used: int) -> Check:
    """`need` folders to watch against a per-user `limit` of which others hold `used`."""
    base = f"inotify: {used:,} of {limit:,} watches in use by other programs"
    free = limit - used
    value = max(INOTIFY_SUGGESTED, 2 ** (2 * (need + used)).bit_length())
    fix = (
        f"echo fs.inotify.max_user_watches={value} | sudo tee -a {SYSCTL_FILE}"
        " && sudo sysctl --system"
    )
    detail = f"the vault has {need:,} folder(s); {base}"
    if need > free:
        return Check("watcher", "FAIL", detail + ": changes would not be seen as they happen", fix)
    if need > free // 2:
        return Check("watcher", "warn", detail + ": little room to grow", fix)
    return Check("watcher", "ok", detail)


def check_hermes(c: Context) -> Check:
    from companion.memory.home import (
        effective_limits,
        hermes_memory_settings,
        memories_dir,
        resolve_home,
    )
    from companion.memory.store import MemoryStore

    home = resolve_home(config_home=c.config.settings.memory.hermes_home or None)
    if not home.is_dir():
        if c.kind == "agent":
            return Check(
                "hermes",
                "warn",
                f"no Hermes home at {home}: the dream cannot promote facts into MEMORY.md/USER.md",
                "set HERMES_HOME, or [memory] hermes_home in the config, to the agent's home",
            )
        return Check("hermes", "skip", f"no Hermes home at {home} (needed where the agent runs)")
    limits = effective_limits(c.config, hermes_memory_settings(home))
    parts, over = [], []
    try:
        for target in ("memory", "user"):
            store = MemoryStore(home, target, limits[target])
            usage = store.usage()
            parts.append(f"{store.name} {usage.describe()}")
            if usage.current > usage.limit:
                over.append(store.name)
    except CompanionError as exc:
        return Check("hermes", "warn", f"{home}: {exc}", "companion memory show")
    detail = f"{home}: " + ", ".join(parts)
    if over:
        return Check(
            "hermes",
            "warn",
            detail + f"; {', '.join(over)} over budget: the agent's writes will be refused",
            "trim it: companion memory show, then companion memory remove TEXT",
        )
    mem = memories_dir(home)
    if mem.is_dir() and not os.access(mem, os.W_OK):
        return Check(
            "hermes", "FAIL", f"{mem} is not writable by you", f"sudo chown -R $USER {mem}"
        )
    return Check("hermes", "ok", detail)


def _existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def check_disk(c: Context) -> Check:
    places = {"data": c.paths.data_dir}
    if c.vault is not None:
        places["vault"] = c.vault
    seen: dict[int, str] = {}
    parts: list[str] = []
    worst = "ok"
    fix = ""
    for label, path in places.items():
        p = _existing(path)
        try:
            dev = p.stat().st_dev
            usage = shutil.disk_usage(p)
        except OSError as exc:
            return Check("disk", "warn", f"cannot measure {p}: {exc.strerror or exc}", "")
        if dev in seen:
            parts.append(f"{label}: same disk as {seen[dev]}")
            continue
        seen[dev] = label
        pct = usage.free / usage.total * 100 if usage.total else 0
        parts.append(f"{label}: {_gib(usage.free)} free ({pct:.0f}%)")
        status = "ok"
        if usage.free < DISK_FAIL_BYTES:
            status = "FAIL"
        elif usage.free < DISK_WARN_BYTES or pct < 5:
            status = "warn"
        if STATUSES.index(status) > STATUSES.index(worst):
            worst = status
            fix = f"free space on the disk of {p} (sync keeps an index and partial downloads there)"
    return Check("disk", worst, ", ".join(parts), fix)


def _unit_exec(path: Path) -> tuple[str | None, dict[str, str]]:
    """The executable and Environment= of a unit install-service wrote."""
    exe, env = None, {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key == "ExecStart" and exe is None:
            words = shlex.split(value)
            exe = words[0].replace("%%", "%") if words else None
        elif key == "Environment":
            for word in shlex.split(value):
                k, _, v = word.partition("=")
                env[k] = v.replace("%%", "%")
    return exe, env


def _systemctl_states(units: list[str]) -> dict[str, str] | None:
    tool = shutil.which("systemctl")
    if tool is None:
        return None
    try:
        res = subprocess.run(
            [tool, "--user", "list-units", "--all", "--plain", "--no-legend", *units],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if res.returncode != 0:
        return None
    out = {}
    for line in res.stdout.splitlines():
        cols = line.split()
        if len(cols) >= 4:
            out[cols[0]] = cols[3] if cols[2] != "failed" else "failed"
    return out


def check_services(c: Context) -> Check:
    from companion.services.units import (
        DREAM_TEMPLATE,
        DREAM_TIMER,
        MARKER,
        RELAY_UNIT,
        WATCH_TEMPLATE,
        install_unit_dir,
        linger_enabled,
    )

    if not sys.platform.startswith("linux"):
        return Check("services", "skip", "systemd user units are for Linux servers")
    unit_dir = c.unit_dir or install_unit_dir()  # where install-service writes them
    ours = []
    for name in (RELAY_UNIT, WATCH_TEMPLATE, DREAM_TEMPLATE, DREAM_TIMER):
        p = unit_dir / name
        if p.is_file() and p.read_text(encoding="utf-8", errors="replace").startswith(MARKER):
            ours.append(p)
    if not ours:
        return Check("services", "skip", f"no units in {unit_dir} (companion install-service)")
    for p in ours:
        exe, env = _unit_exec(p)
        if exe and "%" not in exe and not os.access(exe, os.X_OK):
            kind = {RELAY_UNIT: "relay", WATCH_TEMPLATE: "watch"}.get(p.name, "dream")
            return Check(
                "services",
                "FAIL",
                f"{p.name} starts {exe}, which no longer exists (moved or upgraded install?)",
                f"companion install-service {kind} ... again, then systemctl --user daemon-reload",
            )
        for k in ("COMPANION_HOME",):
            if env.get(k, "") != os.environ.get(k, ""):
                return Check(
                    "services",
                    "warn",
                    f"{p.name} runs with {k}={env.get(k, '(unset)')}, this shell has "
                    f"{os.environ.get(k, '(unset)')}: they are different devices",
                    "run install-service again from the shell whose device the service should be",
                )
    names = ", ".join(p.name for p in ours)
    states = _systemctl_states(["companion-*"])
    if states is None:
        detail = f"{names} installed (state unknown: no systemd user session here)"
    else:
        failed = [u for u, s in states.items() if s == "failed"]
        if failed:
            u = shlex.quote(failed[0])
            return Check(
                "services",
                "FAIL",
                f"{', '.join(failed)} failed",
                f"journalctl --user -u {u} -e; then systemctl --user restart {u}",
            )
        running = [u for u, s in states.items() if s in ("running", "waiting", "listening")]
        detail = f"{names} installed; active: {', '.join(running) or 'none'}"
    if linger_enabled() is False and c.kind == "agent":
        user = os.environ.get("USER", "$USER")
        return Check(
            "services",
            "warn",
            detail + "; linger is off: they stop when you log out",
            f"sudo loginctl enable-linger {user}",
        )
    return Check("services", "ok", detail)


def check_desktop(_c: Context) -> Check:
    """The desktop app's Qt binding: one that loses references to None aborts the app."""
    from companion.gui.qtcheck import FIX, binding_version, qt_binding_problem

    try:
        version = binding_version()
    except ImportError as exc:
        return Check("desktop", "skip", f"the desktop app's Qt binding is not installed ({exc})")
    problem = qt_binding_problem()
    if problem is not None:
        return Check("desktop", "FAIL", problem.partition(". Install")[0], FIX)
    return Check("desktop", "ok", f"Qt binding PySide6 {version}")


CHECKS: list[Callable[[Context], Check]] = [
    check_config,
    check_keyring,
    check_secrets_file,
    check_private_dirs,
    check_vault,
    check_sync,
    check_relay,
    check_clock,
    check_relay_data,
    check_watcher,
    check_hermes,
    check_disk,
    check_services,
    check_desktop,
]


def run_checks(c: Context) -> list[Check]:
    """Every check in order; a check that crashes becomes a FAIL line naming the error."""
    out = []
    for fn in CHECKS:
        name = fn.__name__.removeprefix("check_")
        try:
            out.append(fn(c))
        except Exception as exc:  # a bug in one check must not hide the others
            out.append(Check(name, "FAIL", f"the check itself failed: {type(exc).__name__}: {exc}"))
    return out


@click.command("doctor")
@click.option(
    "--vault",
    type=click.Path(file_okay=False, path_type=Path),
    help="The vault to check (default [vault] path).",
)
@click.option(
    "--relay", "relay_url", metavar="URL", help="The relay to reach (default: the vault's)."
)
@click.option(
    "--timeout",
    default=5.0,
    show_default=True,
    type=click.FloatRange(0.1, 120),
    help="Seconds to wait for the relay.",
)
@click.option(
    "--relay-data",
    type=click.Path(file_okay=False, path_type=Path),
    help="A relay data folder to check (default: the installed relay service's).",
)
@click.option("--unit-dir", type=click.Path(file_okay=False, path_type=Path), hidden=True)
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@pass_app
def doctor(
    app: AppContext,
    vault: Path | None,
    relay_url: str | None,
    timeout: float,
    relay_data: Path | None,
    unit_dir: Path | None,
    as_json: bool,
) -> None:
    """Check this installation and say what to fix: one line per check.

    Looks at the keyring, the secrets file's permissions, the vault's layout, whether the
    vault is set up for sync, the relay (reachable, and the clock against it), a relay data
    folder's file modes (--relay-data, or the installed relay service's), the file watcher's
    limits, the Hermes home, free disk space and the systemd services. Each line
    reads `ok|warn|FAIL|skip  NAME  DETAIL — fix: WHAT TO DO`. The exit status is 1 when any
    check FAILs, 0 otherwise (warnings included).

    \b
    Example:
      companion doctor
      companion doctor --vault ~/vault --relay https://relay.example.org
      companion doctor --json | jq '.checks[] | select(.status != "ok")'
    """
    config = app.lenient_config()  # a broken file is the first check's FAIL, not a stop
    chosen = vault_choice(vault, config)
    ctx = Context(
        paths=app.paths,
        config=config,
        vault=chosen.expanduser().resolve() if chosen else None,
        relay_url=relay_url,
        timeout=timeout,
        unit_dir=unit_dir,
        relay_data=relay_data.expanduser().resolve() if relay_data else None,
    )
    checks = run_checks(ctx)
    failed = [ch for ch in checks if ch.status == "FAIL"]
    warned = [ch for ch in checks if ch.status == "warn"]
    if as_json:
        doc = {"ok": not failed, "checks": [asdict(ch) for ch in checks]}
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        for ch in checks:
            click.echo(ch.line())
        click.echo("")
        if failed or warned:
            click.echo(f"{len(failed)} problem(s), {len(warned)} warning(s).")
        else:
            click.echo("Everything checked is fine.")
    if failed:
        click.get_current_context().exit(1)
