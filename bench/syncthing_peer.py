"""Two Syncthing devices on loopback, set up and driven for benchmarks.

    pair = SyncthingPair(work_dir, vault_a, vault_b, watcher_delay_s=1)
    pair.start()                 # both serve; returns once they are connected
    pair.wait_idle("b")          # B's folder idle with nothing left to pull
    pair.set_folder(paused=False, device="b")
    pair.worker_rss_mb("b")
    pair.stop()

Everything stays on 127.0.0.1: discovery, relays, NAT/STUN, usage reporting, crash reporting
and upgrades are off, and each device knows the other by a fixed `tcp://127.0.0.1:PORT`
address. Homes (keys, config, database, log) live under `work_dir`. Syncthing runs as a monitor
parent and a worker child; memory is read from the worker, and stopping is SIGTERM to the
parent (then SIGKILL to the process group on timeout). Facts behind the choices:
/work/shared/SYNCTHING-BENCH.md.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

FOLDER_ID = "vault"
LOOPBACK = "127.0.0.1"
# Files Syncthing keeps inside a synced folder that are not part of the user's data.
ST_PRIVATE = (".stfolder", ".stversions", ".stignore")
ST_TEMP_PREFIXES = (".syncthing.", "~syncthing~")


class SyncthingError(RuntimeError):
    """Syncthing did not start, connect or settle within the allowed time."""


def syncthing_binary() -> str:
    """Path of the `syncthing` executable; raises if it is not installed."""
    path = shutil.which("syncthing")
    if not path:
        raise SyncthingError("syncthing is not installed (apt-get install -y syncthing)")
    return path


def syncthing_version() -> str:
    out = subprocess.run(
        [syncthing_binary(), "--version"], capture_output=True, text=True, timeout=30
    )
    return out.stdout.strip().split(" (")[0]


def free_ports(n: int) -> list[int]:
    """`n` distinct free TCP ports on loopback (held open together so they differ)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def proc_rss_mb(pid: int) -> float:
    """VmRSS of a process in MB (0.0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def child_pids(pid: int) -> list[int]:
    """Direct children of `pid` (Linux /proc)."""
    out: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name may contain spaces; fields after the closing paren are fixed
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def stop_process(proc: subprocess.Popen[Any], timeout: float = 15.0) -> None:
    """SIGTERM the process, wait, then SIGKILL its whole process group if it lingers."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _set(parent: ET.Element, tag: str, value: object) -> None:
    el = parent.find(tag)
    if el is None:
        el = ET.SubElement(parent, tag)
    el.text = str(value).lower() if isinstance(value, bool) else str(value)


@dataclass
class Device:
    """One Syncthing instance: its home, ports, identity and process."""

    name: str
    home: Path
    folder: Path
    gui_port: int
    listen_port: int
    device_id: str = ""
    api_key: str = ""
    proc: subprocess.Popen[bytes] | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.home / "syncthing.log"

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.gui_port}"


class SyncthingPair:
    """Two devices A and B sharing one send-receive folder over loopback."""

    def __init__(
        self,
        work_dir: str | os.PathLike[str],
        folder_a: str | os.PathLike[str],
        folder_b: str | os.PathLike[str],
        *,
        watcher_delay_s: float = 10,
        paused: tuple[bool, bool] = (False, False),
        low_priority: bool = True,
    ) -> None:
        self.work = Path(work_dir)
        self.watcher_delay_s = watcher_delay_s
        self.paused = paused
        self.low_priority = low_priority
        ports = free_ports(4)
        self.a = Device("A", self.work / "st-home-a", Path(folder_a), ports[0], ports[1])
        self.b = Device("B", self.work / "st-home-b", Path(folder_b), ports[2], ports[3])
        self._http = httpx.Client(timeout=30.0, trust_env=False)
        self._configured = False

    # -- setup -------------------------------------------------------------------------------
    def device(self, which: str) -> Device:
        return {"a": self.a, "b": self.b}[which.lower()]

    def configure(self) -> None:
        """Generate both homes (keys + config.xml) and write the loopback-only configuration."""
        exe = syncthing_binary()
        for d in (self.a, self.b):
            d.home.mkdir(parents=True, exist_ok=True)
            d.folder.mkdir(parents=True, exist_ok=True)
            # the folder marker: Syncthing refuses to sync a folder whose marker is missing
            (d.folder / ".stfolder").mkdir(exist_ok=True)
            subprocess.run(
                [exe, "generate", f"--home={d.home}", "--no-default-folder", "--skip-port-probing"],
                check=True,
                capture_output=True,
                timeout=60,
            )
            out = subprocess.run(
                [exe, "serve", f"--home={d.home}", "--device-id"],
                check=True,
                capture_output=True,
                text=True,
                timeout=60,
            )
            d.device_id = out.stdout.strip()
        for me, other, paused in (
            (self.a, self.b, self.paused[0]),
            (self.b, self.a, self.paused[1]),
        ):
            self._write_config(me, other, paused)
        self._configured = True

    def _write_config(self, me: Device, other: Device, paused: bool) -> None:
        path = me.home / "config.xml"
        tree = ET.parse(path)
        root = tree.getroot()
        gui = root.find("gui")
        assert gui is not None
        _set(gui, "address", f"{LOOPBACK}:{me.gui_port}")
        me.api_key = gui.findtext("apikey") or ""
        opts = root.find("options")
        assert opts is not None
        for el in opts.findall("listenAddress"):
            opts.remove(el)
        ET.SubElement(opts, "listenAddress").text = f"tcp://{LOOPBACK}:{me.listen_port}"
        for el in opts.findall("globalAnnounceServer"):
            opts.remove(el)
        settings: dict[str, object] = {
            "globalAnnounceEnabled": False,
            "localAnnounceEnabled": False,
            "relaysEnabled": False,
            "natEnabled": False,
            "startBrowser": False,
            "urAccepted": -1,
            "autoUpgradeIntervalH": 0,
            "crashReportingEnabled": False,
            "announceLANAddresses": False,
            "reconnectionIntervalS": 5,
            "stunKeepaliveStartS": 0,  # 0 turns STUN off
            "setLowPriority": self.low_priority,
        }
        for key, value in settings.items():
            _set(opts, key, value)

        defaults = root.find("defaults")
        assert defaults is not None
        dev_template = defaults.find("device")
        folder_template = defaults.find("folder")
        assert dev_template is not None and folder_template is not None
        # the other device, reachable only at its fixed loopback address
        peer = ET.fromstring(ET.tostring(dev_template))
        peer.set("id", other.device_id)
        peer.set("name", other.name)
        _set(peer, "address", f"tcp://{LOOPBACK}:{other.listen_port}")
        root.insert(list(root).index(gui), peer)
        # the shared folder, listing both devices
        folder = ET.fromstring(ET.tostring(folder_template))
        folder.set("id", FOLDER_ID)
        folder.set("label", FOLDER_ID)
        folder.set("path", str(me.folder))
        folder.set("type", "sendreceive")
        folder.set("fsWatcherEnabled", "true")
        folder.set("fsWatcherDelayS", _num(self.watcher_delay_s))
        for el in folder.findall("device"):
            folder.remove(el)
        for i, d in enumerate((me, other)):
            fd = ET.Element("device", {"id": d.device_id, "introducedBy": ""})
            ET.SubElement(fd, "encryptionPassword").text = ""
            folder.insert(1 + i, fd)
        _set(folder, "paused", paused)
        root.insert(0, folder)
        tree.write(path, encoding="utf-8", xml_declaration=False)

    # -- processes ---------------------------------------------------------------------------
    def start(self, connect_timeout: float = 60.0) -> None:
        """Start both devices and return once each sees the other connected."""
        if not self._configured:
            self.configure()
        env = dict(os.environ, STNORESTART="1", STNOUPGRADE="1", STNODEFAULTFOLDER="1")
        for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
            env.pop(key, None)
        for d in (self.a, self.b):
            with open(d.log, "ab") as log:
                d.proc = subprocess.Popen(
                    [
                        syncthing_binary(),
                        "serve",
                        f"--home={d.home}",
                        "--no-browser",
                        "--no-restart",
                        "--no-upgrade",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,
                )
        self.wait_connected(connect_timeout)

    def _alive(self, d: Device) -> None:
        if d.proc is None or d.proc.poll() is not None:
            tail = d.log.read_text(errors="replace")[-2000:] if d.log.exists() else ""
            raise SyncthingError(f"syncthing {d.name} is not running:\n{tail}")

    def rest(self, which: str, method: str, path: str, **kw: Any) -> Any:
        """Call the REST API of device `which` ("a"/"b") and return the decoded JSON (or None)."""
        d = self.device(which)
        r = self._http.request(method, d.url + path, headers={"X-API-Key": d.api_key}, **kw)
        r.raise_for_status()
        return r.json() if r.content and "json" in r.headers.get("content-type", "") else None

    def _poll(self, what: str, check: Any, timeout: float, interval: float) -> Any:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            for d in (self.a, self.b):
                self._alive(d)
            try:
                ok, last = check()
            except httpx.HTTPError as exc:  # API not up yet
                ok, last = False, repr(exc)
            if ok:
                return last
            time.sleep(interval)
        raise SyncthingError(f"timed out after {timeout:.0f} s waiting for {what}; last: {last}")

    def wait_connected(self, timeout: float = 60.0) -> None:
        def check() -> tuple[bool, Any]:
            seen = []
            for me, other in ((self.a, self.b), (self.b, self.a)):
                conns = self.rest(me.name, "GET", "/rest/system/connections")["connections"]
                seen.append(bool(conns.get(other.device_id, {}).get("connected")))
            return all(seen), seen

        self._poll("the two devices to connect", check, timeout, 0.1)

    def status(self, which: str, folder: str = FOLDER_ID) -> dict[str, Any]:
        return self.rest(which, "GET", "/rest/db/status", params={"folder": folder})

    def wait_idle(
        self,
        which: str,
        folder: str = FOLDER_ID,
        *,
        min_files: int = 0,
        timeout: float = 300.0,
        interval: float = 0.05,
    ) -> dict[str, Any]:
        """Wait until device `which` has `folder` idle, nothing to pull, and at least
        `min_files` files locally (0: no minimum). Returns the last status."""

        def check() -> tuple[bool, Any]:
            s = self.status(which, folder)
            ok = (
                s.get("state") == "idle"
                and s.get("needTotalItems", 1) == 0
                and s.get("localFiles", 0) >= min_files
            )
            return ok, s

        return self._poll(f"{which.upper()} idle", check, timeout, interval)

    def scan(self, which: str, folder: str = FOLDER_ID) -> None:
        """Rescan the folder now; returns when the scan is done."""
        self.rest(which, "POST", "/rest/db/scan", params={"folder": folder}, timeout=600)

    def set_folder(self, *, device: str = "both", folder: str = FOLDER_ID, **fields: Any) -> None:
        """PATCH folder settings, e.g. `paused=False` or `fsWatcherDelayS=1`."""
        for d in ("a", "b") if device == "both" else (device,):
            self.rest(d, "PATCH", f"/rest/config/folders/{folder}", json=fields)

    def pause(self, device: str = "both", folder: str = FOLDER_ID) -> None:
        self.set_folder(device=device, folder=folder, paused=True)

    def unpause(self, device: str = "both", folder: str = FOLDER_ID) -> None:
        self.set_folder(device=device, folder=folder, paused=False)

    def worker_pid(self, which: str) -> int:
        """PID of the worker child (the monitor parent only supervises it)."""
        d = self.device(which)
        self._alive(d)
        assert d.proc is not None
        kids = child_pids(d.proc.pid)
        return kids[0] if kids else d.proc.pid

    def worker_rss_mb(self, which: str) -> float:
        return proc_rss_mb(self.worker_pid(which))

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM each parent (it stops its worker); kill the process group on timeout."""
        for d in (self.a, self.b):
            if d.proc is not None:
                stop_process(d.proc, timeout)
                d.proc = None
        self._http.close()
        self._http = httpx.Client(timeout=30.0, trust_env=False)

    def close(self) -> None:
        self.stop()
        self._http.close()

    def __enter__(self) -> SyncthingPair:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)
