"""Scenario files with golden end states (issue 43): parse `tests/scenarios/*.scn` and run one
through a real relay on loopback, each device driven by its engine's command line.

The language is documented in `tests/scenarios/README.md`. In short:

    device laptop python human
    device phone plugin human
    option swap
    laptop write notes/a.md "one\\ntwo\\n"
    sync all
    phone edit notes/a.md "two" "2"
    sync phone
    expect all notes/a.md "one\\n2\\n"
    expect same

A Python device joins through the real init code (`tests/syncharness.py`) and syncs with
`python -m companion sync VAULT --json`; a plugin device joins and syncs with
`node obsidian-plugin/dist/cli.js`. Each step runs a command to completion: that is the only
synchronisation. A failing expectation raises `ScenarioFailure` naming the file, the line, the
engines in each role, a diff of what differs and the log of the steps run.

Debug one file by hand: `PYTHONPATH=. python3 -m tests.scenario_runner tests/scenarios/X.scn
[--swapped]` (needs `npm run build` in obsidian-plugin/ for plugin devices).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = Path(__file__).resolve().parent / "scenarios"
CLI_JS = ROOT / "obsidian-plugin" / "dist" / "cli.js"
MARKER = ".companion-folder.json"  # each copy's own folder marker: never synced
TEMP_PREFIX = ".companion-tmp-"

ENGINES = ("python", "plugin")
KINDS = ("human", "agent")
RESERVED = {"all", "same", "device", "option", "sync", "expect", "offline", "online", "relay"}
DEVICE_VERBS = {
    "write", "save", "edit", "append", "rename", "delete", "mkdir", "chmod", "accept", "refuse",
}  # fmt: skip
EXPECT_VERBS = {
    "absent", "files", "conflict-copy", "conflicts", "no-conflicts", "conflict-listed", "held",
    "listed",
}  # fmt: skip
# a conflict copy's name (docs/protocol.md R21): `stem (conflict DEVICE YYYY-MM-DD HHMM[ n]).ext`
COPY = r" \(conflict (?P<device>.+) \d{{4}}-\d{{2}}-\d{{2}} \d{{4}}(?: \d+)?\){ext}$"


class ScenarioError(Exception):
    """A scenario file that does not parse: `file:line: why`."""


class ScenarioFailure(AssertionError):
    """A scenario whose devices did not end as it expects."""


# ---------------------------------------------------------------------------------- parsing


@dataclasses.dataclass(frozen=True)
class Content:
    """What a `write` puts or an `expect` wants: literal bytes or `random N` (seeded by N)."""

    data: bytes
    shown: str

    @staticmethod
    def literal(data: bytes) -> Content:
        return Content(data, _show(data))


@dataclasses.dataclass(frozen=True)
class Step:
    line: int
    text: str
    verb: str
    device: str | None
    args: tuple[Any, ...]


@dataclasses.dataclass
class Scenario:
    path: Path
    devices: dict[str, tuple[str, str]]  # name -> (engine, kind), in declared order
    steps: list[Step]
    swap: bool = False
    drift: str = ""  # `expect-drift: reason`, for every arrangement
    drift_swapped: str = ""  # `expect-drift swapped: reason`, for the swapped one only
    drift_written: str = ""  # `expect-drift as-written: reason`

    @property
    def name(self) -> str:
        return self.path.stem

    def arrangement(self, swapped: bool) -> dict[str, tuple[str, str]]:
        """Each device's (engine, kind); swapped: python <-> plugin for the human devices."""
        if not swapped:
            return dict(self.devices)
        flip = {"python": "plugin", "plugin": "python"}
        return {n: ((flip[e], k) if k == "human" else (e, k)) for n, (e, k) in self.devices.items()}

    @property
    def relay_restarts(self) -> bool:
        """`relay backup`/`restore` stop and start the relay: it runs as a process."""
        return any(s.verb.startswith("relay-") for s in self.steps)

    def expected_drift(self, swapped: bool) -> str:
        return self.drift or (self.drift_swapped if swapped else self.drift_written)


_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|[nrt0\\\"])")


def _unescape(body: str, where: str) -> bytes:
    """A quoted string's bytes: UTF-8 text; `\\n \\r \\t \\0 \\\\ \\"`, `\\xNN` one raw byte,
    `\\u{HEX}` one code point (so NFD, BOM and bidi controls are visible in the file)."""
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        m = _ESCAPE.match(body, i)
        if m is None:
            raise ScenarioError(f"{where}: unknown escape {body[i : i + 2]!r}")
        esc = m.group(1)
        if esc[0] == "x":
            out.append(int(esc[1:], 16))
        elif esc[0] == "u":
            out += chr(int(esc[2:-1], 16)).encode("utf-8")
        else:
            out += {"n": b"\n", "r": b"\r", "t": b"\t", "0": b"\0", "\\": b"\\", '"': b'"'}[esc]
        i = m.end()
    return bytes(out)


def _tokens(line: str, where: str) -> list[tuple[str, bool]]:
    """Split a line into (token, quoted) pairs; a quoted token is unescaped later."""
    out: list[tuple[str, bool]] = []
    i = 0
    while i < len(line):
        if line[i].isspace():
            i += 1
        elif line[i] == '"':
            j = i + 1
            while j < len(line) and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            if j >= len(line):
                raise ScenarioError(f"{where}: unterminated string")
            out.append((line[i + 1 : j], True))
            i = j + 1
        elif line[i] == "#":
            break
        else:
            j = i
            while j < len(line) and not line[j].isspace() and line[j] != '"':
                j += 1
            out.append((line[i:j], False))
            i = j
    return out


class _Args:
    """The tokens after a verb, consumed one by one with errors naming the line."""

    def __init__(self, toks: list[tuple[str, bool]], where: str) -> None:
        self.toks = toks
        self.where = where

    def more(self) -> bool:
        return bool(self.toks)

    def peek(self) -> str | None:
        return self.toks[0][0] if self.toks and not self.toks[0][1] else None

    def word(self, what: str) -> str:
        if not self.toks or self.toks[0][1]:
            raise ScenarioError(f"{self.where}: expected {what}")
        return self.toks.pop(0)[0]

    def path(self) -> str:
        if not self.toks:
            raise ScenarioError(f"{self.where}: expected a path")
        tok, quoted = self.toks.pop(0)
        if not quoted:
            return tok
        raw = _unescape(tok, self.where)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ScenarioError(f"{self.where}: a path must be UTF-8") from exc

    def content(self) -> Content:
        if not self.toks:
            raise ScenarioError(f"{self.where}: expected content")
        tok, quoted = self.toks.pop(0)
        if quoted:
            return Content.literal(_unescape(tok, self.where))
        if tok == "empty":
            return Content(b"", "empty")
        if tok in ("random", "repeat"):
            if tok == "repeat":
                unit = self.content()
            n = self.word("a count")
            if not n.isdigit():
                raise ScenarioError(f"{self.where}: {tok} needs a count, not {n!r}")
            if tok == "repeat":
                return Content(unit.data * int(n), f"repeat {unit.shown} {n}")
            return Content(random.Random(int(n)).randbytes(int(n)), f"random {n}")
        raise ScenarioError(f'{self.where}: expected content ("...", empty, random N)')

    def int(self, what: str) -> int:
        w = self.word(what)
        if not w.isdigit():
            raise ScenarioError(f"{self.where}: expected {what}, not {w!r}")
        return int(w)

    def done(self) -> None:
        if self.toks:
            raise ScenarioError(f"{self.where}: unexpected {self.toks[0][0]!r}")


def parse(text: str, path: Path) -> Scenario:
    """Parse a scenario file strictly: an unknown verb or device, a missing argument, a device
    declared after the first step, is a `ScenarioError` with the line number."""
    sc = Scenario(path, {}, [])
    for number, raw in enumerate(text.splitlines(), 1):
        where = f"{path.name}:{number}"
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("expect-drift"):
            head, sep, reason = line.partition(":")
            which = head.split()[1:] or [""]
            if not sep or not reason.strip() or which[0] not in ("", "swapped", "as-written"):
                raise ScenarioError(f"{where}: expect-drift [swapped|as-written]: REASON")
            setattr(sc, {"": "drift", "swapped": "drift_swapped",
                         "as-written": "drift_written"}[which[0]], reason.strip())  # fmt: skip
            continue
        toks = _tokens(line, where)
        first, quoted = toks[0]
        a = _Args(toks[1:], where)
        if quoted:
            raise ScenarioError(f"{where}: a line starts with a verb or a device name")
        if first == "device":
            if sc.steps:
                raise ScenarioError(f"{where}: devices are declared before the first step")
            name, engine, kind = a.word("a name"), a.word("an engine"), a.word("a kind")
            a.done()
            if name in sc.devices or name in RESERVED:
                raise ScenarioError(f"{where}: device name {name!r} taken")
            if engine not in ENGINES or kind not in KINDS:
                raise ScenarioError(f"{where}: device NAME python|plugin human|agent")
            if engine == "plugin" and kind != "human":
                raise ScenarioError(f"{where}: the plugin is always a human device")
            sc.devices[name] = (engine, kind)
            continue
        if first == "option":
            opt = a.word("an option")
            a.done()
            if opt != "swap":
                raise ScenarioError(f"{where}: unknown option {opt!r}")
            sc.swap = True
            continue
        if first == "sync":
            sc.steps.append(_parse_sync(sc, a, number, line, where))
        elif first == "expect":
            sc.steps.append(_parse_expect(sc, a, number, line, where))
        elif first == "relay":
            what = a.word("backup|restore")
            a.done()
            if what not in ("backup", "restore"):
                raise ScenarioError(f"{where}: relay backup|restore")
            if what == "restore" and not any(s.verb == "relay-backup" for s in sc.steps):
                raise ScenarioError(f"{where}: no `relay backup` before this restore")
            sc.steps.append(Step(number, line, "relay-" + what, None, ()))
        elif first in ("offline", "online"):
            name = _device(sc, a.word("a device"), where)
            a.done()
            sc.steps.append(Step(number, line, first, name, ()))
        elif first in sc.devices:
            verb = a.word("a verb")
            args = _parse_device_step(sc, verb, a, where)
            sc.steps.append(Step(number, line, verb, first, args))
        else:
            raise ScenarioError(f"{where}: unknown verb or device {first!r}")
    if not sc.devices:
        raise ScenarioError(f"{path.name}: no device declared")
    if not any(s.verb.startswith("expect") for s in sc.steps):
        raise ScenarioError(f"{path.name}: a scenario without an expectation cannot fail")
    if sc.swap and not any(k == "human" for _, k in sc.devices.values()):
        raise ScenarioError(f"{path.name}: option swap needs a human device")
    return sc


def _device(sc: Scenario, name: str, where: str) -> str:
    if name not in sc.devices:
        raise ScenarioError(f"{where}: unknown device {name!r}")
    return name


def _parse_sync(sc: Scenario, a: _Args, number: int, line: str, where: str) -> Step:
    names: list[str] = []
    code = 0
    allow = False
    while a.more():
        w = a.word("a device, all, exit N or allow-mass-delete")
        if w == "exit":
            code = a.int("an exit status")
        elif w == "allow-mass-delete":
            allow = True
        elif w == "all":
            names.append("all")
        else:
            names.append(_device(sc, w, where))
    if not names:
        raise ScenarioError(f"{where}: sync DEVICE... | sync all")
    if "all" in names and (len(names) > 1 or code or allow):
        raise ScenarioError(f"{where}: `sync all` takes nothing else (every sync must exit 0)")
    return Step(number, line, "sync", None, (tuple(names), code, allow))


def _parse_expect(sc: Scenario, a: _Args, number: int, line: str, where: str) -> Step:
    who = a.word("a device, all or same")
    if who == "same":
        names = tuple(_device(sc, a.word("a device"), where) for _ in range(len(a.toks)))
        if len(names) == 1:
            raise ScenarioError(f"{where}: expect same [DEVICE DEVICE...]")
        return Step(number, line, "expect-same", None, (names or tuple(sc.devices),))
    if who != "all":
        _device(sc, who, where)
    verb = a.peek()
    if verb in EXPECT_VERBS:
        a.word("a verb")
    else:
        verb = "content"
    args: tuple[Any, ...]
    if verb == "content":
        args = (a.path(), a.content())
    elif verb == "absent":
        args = (a.path(),)
    elif verb == "files":
        args = tuple(a.path() for _ in range(len(a.toks)))
    elif verb == "conflict-copy":
        p = a.path()
        by = None
        if a.peek() == "by":
            a.word("by")
            by = _device(sc, a.word("a device"), where)
        args = (p, by, a.content() if a.more() else None)
    elif verb == "conflicts":
        args = (a.path(), a.int("a count"))
    elif verb == "no-conflicts":
        args = ()
    elif verb == "conflict-listed":
        args = (a.path(),)
    elif verb == "held":
        args = ("none",) if a.peek() == "none" and a.word("none") else (a.path(),)
    else:  # listed
        args = (a.path(),)
    a.done()
    return Step(number, line, "expect-" + verb, who, args)


def _parse_device_step(sc: Scenario, verb: str, a: _Args, where: str) -> tuple[Any, ...]:
    if verb not in DEVICE_VERBS:
        raise ScenarioError(f"{where}: unknown verb {verb!r}")
    args: tuple[Any, ...]
    if verb in ("write", "save", "append"):
        args = (a.path(), a.content())
    elif verb == "edit":
        p = a.path()
        old, new = a.content(), a.content()
        args = (p, old.data, new.data)
    elif verb == "rename":
        args = (a.path(), a.path())
    elif verb in ("delete", "mkdir", "accept", "refuse"):
        args = (a.path(),)
    elif verb == "chmod":
        p = a.path()
        bit = a.word("+x or -x")
        if bit not in ("+x", "-x"):
            raise ScenarioError(f"{where}: chmod PATH +x|-x, not {bit!r}")
        args = (p, bit == "+x")
    else:
        args = ()
    a.done()
    return args


def load(path: Path) -> Scenario:
    return parse(path.read_text(encoding="utf-8"), path)


def scenario_files() -> list[Path]:
    return sorted(SCENARIOS.glob("*.scn"))


# ---------------------------------------------------------------------------------- devices


def _show(data: bytes, limit: int = 120) -> str:
    if len(data) > limit:
        return f"<{len(data)} bytes: {data[:40]!r}...{data[-20:]!r}>"
    return repr(data)


class ScnDevice:
    """One vault copy, driven through its engine's command line."""

    engine = ""

    def __init__(self, name: str, kind: str, vault: Path) -> None:
        self.name = name
        self.kind = kind
        self.vault = vault
        self.online = True
        self.dirty = False  # changed here (by a step) since its last sync
        self.seen = 0  # the run's count of sending rounds when this device last synced
        self.cached_status: dict[str, Any] | None = None

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:  # pragma: no cover
        raise NotImplementedError

    def sync(self, allow_mass_delete: bool) -> tuple[int, dict[str, Any], str]:
        args = ["--allow-mass-delete"] if allow_mass_delete else []
        r = self.run("sync", str(self.vault), "--json", *args)
        try:
            report = json.loads(r.stdout)
        except ValueError:
            report = {}
        return r.returncode, report, (r.stdout if not report else "") + r.stderr

    def status(self) -> dict[str, Any]:
        if self.cached_status is not None:  # nothing ran on this device since
            return self.cached_status
        r = self.run("status", str(self.vault), "--json", "--offline")
        if r.returncode != 0:
            raise ScenarioFailure(f"{self.name}: status exited {r.returncode}: {r.stderr}")
        result: dict[str, Any] = json.loads(r.stdout)
        self.cached_status = result
        return result

    def decide(self, decision: str, path: str) -> subprocess.CompletedProcess[str]:
        raise NotImplementedError  # pragma: no cover

    def files(self) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for dirpath, _dirs, names in os.walk(self.vault):
            for n in names:
                if n.startswith(TEMP_PREFIX) or n == MARKER:
                    continue
                full = Path(dirpath, n)
                out[full.relative_to(self.vault).as_posix()] = full.read_bytes()
        return out


class PythonDevice(ScnDevice):
    engine = "python"

    def __init__(self, dev: Any) -> None:  # a tests.syncharness.Device
        super().__init__(dev.name, dev.kind, dev.vault)
        self.dev = dev
        env = dev.env()
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
        self._env = env

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        from tests import pyfork

        return pyfork.run(list(args), self._env, ROOT)

    def decide(self, decision: str, path: str) -> subprocess.CompletedProcess[str]:
        return self.run("held", decision, str(self.vault), path)


class NodeDevice(ScnDevice):
    engine = "plugin"

    def __init__(self, dev: Any) -> None:  # a tests.test_plugin_interop.PluginDevice
        super().__init__(dev.name, "human", dev.vault)
        self.dev = dev

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        result: subprocess.CompletedProcess[str] = self.dev.run(*args)
        return result

    def decide(self, decision: str, path: str) -> subprocess.CompletedProcess[str]:
        return self.run("held", str(self.vault), f"--{decision}", path)


# ----------------------------------------------------------------------------------- running


SENT = ("uploaded", "deleted_remote", "decided")  # what a round sends others
SHOWN = (
    "downloaded", "uploaded", "deleted_local", "deleted_remote", "renamed_local", "merged",
    "kept_edits", "held", "quarantined", "problems", "skipped", "decided",
)  # fmt: skip


class Run:
    """One scenario in one arrangement of engines, on a cluster of its own."""

    def __init__(self, sc: Scenario, base: Path, cli_js: Path, swapped: bool = False) -> None:
        self.sc = sc
        self.base = base
        self.cli_js = cli_js
        self.swapped = swapped
        self.devices: dict[str, ScnDevice] = {}
        self.log: list[str] = []
        self.sent = 0  # rounds so far that sent something to the relay
        self.cluster: Any = None  # the run's tests.syncharness.SyncCluster

    @property
    def label(self) -> str:
        roles = ", ".join(f"{n}={e}/{k}" for n, (e, k) in self.sc.arrangement(self.swapped).items())
        return f"{'swapped' if self.swapped else 'as written'} ({roles})"

    def fail(self, step: Step, detail: str) -> ScenarioFailure:
        log = "\n".join(f"    {ln}" for ln in self.log[-40:])
        return ScenarioFailure(
            f"{self.sc.path.name}:{step.line}: {step.text}\n  engines: {self.label}\n"
            f"  {detail}\n  steps run:\n{log}"
        )

    def execute(self) -> None:
        from tests.syncharness import SyncCluster
        from tests.test_plugin_interop import PluginDevice

        relay = "process" if self.sc.relay_restarts else "thread"  # a restore restarts it
        with SyncCluster(self.base, relay=relay) as cluster:
            self.cluster = cluster
            for name, (engine, kind) in self.sc.arrangement(self.swapped).items():
                if engine == "python":
                    self.devices[name] = PythonDevice(cluster.add_device(name, kind))
                else:
                    dev = PluginDevice(cluster, self.cli_js, name)
                    dev.join()
                    # A plugin that creates the vault writes the default agent scopes (R30); a
                    # Python device the harness makes does not. Scenarios pin the sync rules
                    # without scopes, whichever engine comes first (tests/test_plugin_scopes.py
                    # has the scopes'): the file is taken away before anything syncs.
                    (dev.vault / ".companion" / "scopes.json").unlink(missing_ok=True)
                    self.devices[name] = NodeDevice(dev)
            for step in self.sc.steps:
                self.step(step)

    # -- steps ---------------------------------------------------------------------------
    def step(self, st: Step) -> None:
        if st.verb == "sync":
            names, code, allow = st.args
            if names == ("all",):
                self.sync_all(st)
            else:
                for n in names:
                    self.sync_one(st, self.devices[n], code, allow)
            return
        if st.verb.startswith("relay-"):
            self.log.append(f"{st.line}: {st.text}")
            getattr(self, "do_" + st.verb.replace("-", "_"))(st)
            return
        if st.verb.startswith("expect-"):
            self.expect(st)
            self.log.append(f"{st.line}: {st.text}  ok")
            return
        assert st.device is not None
        dev = self.devices[st.device]
        self.log.append(f"{st.line}: {st.text}")
        dev.dirty = True
        dev.cached_status = None
        getattr(self, "do_" + st.verb)(st, dev, *st.args)

    def sync_one(self, st: Step, dev: ScnDevice, code: int, allow: bool) -> dict[str, Any]:
        if not dev.online:
            raise self.fail(st, f"{dev.name} is offline: `online {dev.name}` first")
        rc, report, err = dev.sync(allow)
        dev.cached_status = None
        if not report or any(report.get(k) for k in SENT) or report.get("conflicts"):
            self.sent += 1
        dev.seen = self.sent
        dev.dirty = not report.get("converged", False) or any(
            report.get(k) for k in ("pending_upload", "pending_download")
        )
        shown = {k: report[k] for k in SHOWN if report.get(k)}
        conflicts = [c.get("copy") or c for c in report.get("conflicts") or []]
        if conflicts:
            shown["conflicts"] = conflicts
        self.log.append(f"{st.line}: sync {dev.name} [{dev.engine}] -> exit {rc} {shown}")
        if rc != code:
            raise self.fail(st, f"sync {dev.name} exited {rc}, not {code}: {err.strip()[-1500:]}")
        return report

    def sync_all(self, st: Step) -> None:
        """Sync, in declared order, the first online device that has something to do (changed
        here since its last sync, or not synced since a round that sent something), until
        none has: then no device has anything left to send or to learn."""
        order = [d for d in self.devices.values() if d.online]
        limit = 4 * len(order)
        for _ in range(limit):
            todo = [d for d in order if d.dirty or d.seen < self.sent]
            if not todo:
                return
            self.sync_one(st, todo[0], 0, False)
        left = [d.name for d in order if d.dirty or d.seen < self.sent]
        if left:
            raise self.fail(st, f"still something to do after {limit} rounds: {left}")

    def do_write(self, st: Step, dev: ScnDevice, rel: str, content: Content) -> None:
        p = dev.vault / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        _finished(p, content.data)

    def do_save(self, st: Step, dev: ScnDevice, rel: str, content: Content) -> None:
        """An editor saving right now (its modification time not set back, unlike `write`): a
        save soon after a round replaced the file is the stale-save rule's case (R15)."""
        p = dev.vault / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content.data)

    def do_append(self, st: Step, dev: ScnDevice, rel: str, content: Content) -> None:
        p = self._existing(st, dev, rel)
        _finished(p, p.read_bytes() + content.data)

    def do_edit(self, st: Step, dev: ScnDevice, rel: str, old: bytes, new: bytes) -> None:
        p = self._existing(st, dev, rel)
        data = p.read_bytes()
        if data.count(old) != 1:
            raise self.fail(st, f"{rel} holds {data.count(old)} times {old!r}: {_show(data)}")
        _finished(p, data.replace(old, new))

    def do_rename(self, st: Step, dev: ScnDevice, old: str, new: str) -> None:
        src = dev.vault / old  # a file or a folder
        if not src.exists():
            raise self.fail(st, f"{dev.name} has nothing at {old!r} to rename")
        dst = dev.vault / new
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst)

    def do_delete(self, st: Step, dev: ScnDevice, rel: str) -> None:
        self._existing(st, dev, rel).unlink()

    def do_chmod(self, st: Step, dev: ScnDevice, rel: str, executable: bool) -> None:
        p = self._existing(st, dev, rel)
        mode = p.stat().st_mode
        p.chmod(mode | 0o111 if executable else mode & ~0o111)

    def do_mkdir(self, st: Step, dev: ScnDevice, rel: str) -> None:
        (dev.vault / rel).mkdir(parents=True, exist_ok=True)

    def do_accept(self, st: Step, dev: ScnDevice, rel: str) -> None:
        self._decide(st, dev, "accept", rel)

    def do_refuse(self, st: Step, dev: ScnDevice, rel: str) -> None:
        self._decide(st, dev, "refuse", rel)

    def do_offline(self, st: Step, dev: ScnDevice) -> None:
        dev.online = False

    def do_online(self, st: Step, dev: ScnDevice) -> None:
        dev.online = True

    @property
    def _backup(self) -> Path:
        return self.base / "relay-backup"

    def do_relay_backup(self, st: Step) -> None:
        """A copy of the relay's data folder, taken with the relay stopped."""
        relay = self.cluster.relay
        relay.stop()
        shutil.rmtree(self._backup, ignore_errors=True)
        shutil.copytree(relay.data_dir, self._backup)
        relay.restart()

    def do_relay_restore(self, st: Step) -> None:
        """The relay's data folder put back to the last `relay backup`, on the same port: it
        lost what was committed since, the devices keep it (docs/protocol.md R3)."""
        relay = self.cluster.relay
        relay.stop()
        shutil.rmtree(relay.data_dir)
        shutil.copytree(self._backup, relay.data_dir)
        relay.restart()
        self.sent += 1  # every device learns of it on its next round

    def _decide(self, st: Step, dev: ScnDevice, decision: str, rel: str) -> None:
        r = dev.decide(decision, rel)
        if r.returncode != 0:
            raise self.fail(st, f"held {decision} exited {r.returncode}: {r.stderr.strip()}")
        self.sent += 1  # the plugin's `held` commits a refusal itself; Python's next round does
        dev.seen = self.sent

    def _existing(self, st: Step, dev: ScnDevice, rel: str) -> Path:
        p = dev.vault / rel
        if not p.is_file():
            raise self.fail(st, f"{dev.name} has no file {rel!r} to change")
        return p

    # -- expectations --------------------------------------------------------------------
    def targets(self, st: Step) -> list[ScnDevice]:
        if st.device is None or st.device == "all":
            return list(self.devices.values())
        return [self.devices[st.device]]

    def expect(self, st: Step) -> None:
        if st.verb == "expect-same":
            (names,) = st.args
            first = self.devices[names[0]]
            ref = first.files()
            for n in names[1:]:
                diff = tree_diff(ref, self.devices[n].files(), first.name, n)
                if diff:
                    raise self.fail(st, diff)
            return
        problems = []
        for dev in self.targets(st):
            why = self.check(st, dev)
            if why:
                problems.append(f"{dev.name} [{dev.engine}]: {why}")
        if problems:
            raise self.fail(st, "\n  ".join(problems))

    def check(self, st: Step, dev: ScnDevice) -> str:
        files = dev.files()
        kind = st.verb.removeprefix("expect-")
        if kind == "content":
            rel, want = st.args
            got = files.get(rel)
            if got is None:
                return f"no {rel!r}; it has {sorted(files)}"
            return "" if got == want.data else content_diff(rel, want.data, got)
        if kind == "absent":
            (rel,) = st.args
            return f"{rel!r} is there: {_show(files[rel])}" if rel in files else ""
        if kind == "files":
            want_set, got_set = set(st.args), set(files)
            if want_set == got_set:
                return ""
            return (
                f"files differ: missing {sorted(want_set - got_set)}, "
                f"unexpected {sorted(got_set - want_set)}"
            )
        if kind in ("conflict-copy", "conflicts", "no-conflicts"):
            return self.check_copies(st, kind, files)
        status = dev.status()
        if kind == "conflict-listed":  # R22: `status` lists each copy of PATH in the tree
            (rel,) = st.args
            on_disk = sorted(c for c, _ in conflict_copies(rel, files))
            listed = sorted(
                c.get("copy", "") for c in status.get("conflicts") or [] if c.get("path") == rel
            )
            if not on_disk:
                return f"no conflict copy of {rel!r} to list"
            return "" if listed == on_disk else f"status lists {listed}, the tree has {on_disk}"
        if kind == "held":
            held = sorted(h["path"] for h in status.get("held") or [])
            (rel,) = st.args
            if rel == "none":
                return f"holds {held}" if held else ""
            return "" if rel in held else f"{rel!r} is not held; held: {held}"
        # listed: named among the files this device does not sync (problems, quarantine)
        (rel,) = st.args
        names = _paths_in(status, ("problems", "not_synced", "quarantined"))
        # a folder counts as listed by itself (Python's scan skips it whole) or by its files
        # (the plugin lists the files its vault lists: a platform difference of granularity)
        found = rel in names or any(n.startswith(rel + "/") for n in names)
        return "" if found else f"{rel!r} is not listed; status lists {sorted(names)}"

    def check_copies(self, st: Step, kind: str, files: dict[str, bytes]) -> str:
        if kind == "no-conflicts":
            found = [p for p in files if is_conflict_copy(p)]
            return f"conflict copies: {found}" if found else ""
        rel = st.args[0]
        copies = conflict_copies(rel, files)
        if kind == "conflicts":
            n = st.args[1]
            return "" if len(copies) == n else f"{len(copies)} copies of {rel!r}: {copies}"
        _, by, content = st.args
        mine = [c for c in copies if by is None or c[1] == by]
        if len(mine) != 1:
            of = f" by {by}" if by else ""
            return f"{len(mine)} conflict copies of {rel!r}{of}, not 1; there are {copies}"
        copy, _device = mine[0]
        if content is not None and files[copy] != content.data:
            return content_diff(copy, content.data, files[copy])
        return ""


FINISHED_NS = 1_000_000_000


def _finished(path: Path, data: bytes) -> None:
    """Write `data` as an edit the person finished a second ago: the modification time is set
    1 s back, so no engine meets a file still being written (R16, a rule about timing that the
    scenarios leave out). Without it, a sync started within 50 ms of the write saw a
    different story than one started later (the Python engine defers a young file; racing a
    remote rename, its edit then stays at the old name: docs/protocol.md R17)."""
    path.write_bytes(data)
    t = time.time_ns() - FINISHED_NS
    os.utime(path, ns=(t, t))


def _paths_in(status: dict[str, Any], keys: tuple[str, ...]) -> set[str]:
    out: set[str] = set()
    for k in keys:
        for item in status.get(k) or []:
            if isinstance(item, str):
                out.add(item)
            elif isinstance(item, dict) and isinstance(item.get("path"), str):
                out.add(item["path"])
    return out


def _copy_pattern(rel: str) -> re.Pattern[str]:
    folder, _, name = rel.rpartition("/")
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    else:
        ext = "." + ext
    prefix = re.escape((folder + "/" if folder else "") + stem)
    return re.compile("^" + prefix + COPY.format(ext=re.escape(ext)))


def conflict_copies(rel: str, files: dict[str, bytes]) -> list[tuple[str, str]]:
    """(copy, device named in it) of each conflict copy of `rel` (R21's naming)."""
    pat = _copy_pattern(rel)
    out = []
    for p in sorted(files):
        m = pat.match(p)
        if m:
            out.append((p, m.group("device")))
    return out


_ANY_COPY = re.compile(r" \(conflict .+ \d{4}-\d{2}-\d{2} \d{4}(?: \d+)?\)(\.[^/]*)?$")


def is_conflict_copy(path: str) -> bool:
    return bool(_ANY_COPY.search(path))


def content_diff(rel: str, want: bytes, got: bytes) -> str:
    head = f"{rel!r}: want {_show(want)}, got {_show(got)}"
    try:
        a, b = want.decode("utf-8"), got.decode("utf-8")
    except UnicodeDecodeError:
        return head
    if len(a) > 4000 or len(b) > 4000:
        return head
    diff = difflib.unified_diff(
        a.splitlines(keepends=True), b.splitlines(keepends=True), "want", "got", lineterm=""
    )
    return head + "\n" + "".join(f"      {ln!r}\n" for ln in diff).rstrip()


def tree_diff(a: dict[str, bytes], b: dict[str, bytes], an: str, bn: str) -> str:
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    differ = sorted(p for p in set(a) & set(b) if a[p] != b[p])
    if not (only_a or only_b or differ):
        return ""
    lines = [f"{an} and {bn} differ: only on {an} {only_a}, only on {bn} {only_b}"]
    lines += [content_diff(p, a[p], b[p]).replace("want", an).replace("got", bn) for p in differ]
    return "\n  ".join(lines)


def run_file(
    path: Path, base: Path, cli_js: Path = CLI_JS, swapped: bool = False
) -> Callable[[], None]:
    """Parse `path` and return the call that runs it (parse errors surface at once)."""
    sc = load(path)
    return Run(sc, base, cli_js, swapped).execute


def main(argv: list[str]) -> int:  # pragma: no cover - a debugging aid
    import tempfile

    swapped = "--swapped" in argv
    os.environ.setdefault("PYTEST_CURRENT_TEST", "scenario_runner")  # the weak-KDF hatch
    status = 0
    for arg in (a for a in argv if not a.startswith("--")):
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["COMPANION_HOME"] = str(Path(tmp) / "home")
            os.environ.setdefault("COMPANION_TEST_WEAK_PASSPHRASE", "1")
            try:
                run_file(Path(arg), Path(tmp), swapped=swapped)()
                print(f"ok   {arg}")
            except (ScenarioFailure, ScenarioError) as exc:
                print(f"FAIL {exc}")
                status = 1
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
