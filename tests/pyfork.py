"""`python -m companion ARGS` as a fresh process each time, forked from a parent that has
already imported the companion (a fork server), for the scenario runner.

Starting Python and importing the companion's libraries takes most of a quiet
`companion sync` (CONTRIBUTING.md: 166-182 ms on an idle machine, several times that on a
loaded one), and the scenario suite runs hundreds of them. Each command here is still its own
process: its own environment, argv, stdin (/dev/null), stdout and stderr, exit status and
atexit handlers, running `companion/__main__.py` as `python -m` does; only the interpreter's
start and the imports are shared. The server warms itself: after each command it imports the
modules that command loaded, so nothing here names a module inside the companion.

`COMPANION_SCENARIO_FORK=0` makes `run` start a real `python -m companion` subprocess instead
(the same results, slower: for checking this module itself).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

SERVER = r"""
import atexit, json, os, sys, runpy, traceback
sys.stdout.flush()
import companion.cli  # noqa: F401  the command line's own imports; the rest warm up below
chan = os.fdopen(int(sys.argv[1]), "w")
tried = set(sys.modules)
for line in sys.stdin:
    req = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.environ.clear()
            os.environ.update(req["env"])
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            for fd, path in ((1, req["out"]), (2, req["err"])):
                f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(f, fd)
                os.close(f)
            sys.argv = ["companion", *req["args"]]

            def dump_modules(path=req["mods"]):
                with open(path, "w") as f:
                    f.write("\n".join(sorted(sys.modules)))

            atexit.register(dump_modules)  # the command may end with os._exit (cli.exit_now)
            try:
                runpy.run_module("companion", run_name="__main__", alter_sys=True)
                code = 0
            except SystemExit as exc:
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    code = 1
            except BaseException:
                traceback.print_exc()
                code = 1
            try:
                atexit._run_exitfuncs()
            except BaseException:
                traceback.print_exc()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    try:
        with open(req["mods"]) as f:
            names = f.read().split()
    except OSError:
        names = []
    for name in names:
        if name in tried or "__main__" in name or name.startswith("__"):
            continue
        tried.add(name)
        if name not in sys.modules:
            try:
                __import__(name)
            except BaseException:
                pass
    chan.write(json.dumps({"rc": rc}) + "\n")
    chan.flush()
"""


class ForkServer:
    """One warm parent; `run(args, env)` forks a `python -m companion` child per call."""

    def __init__(self, root: Path) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="companion-fork-"))
        self.lock = threading.Lock()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
        r, w = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(w)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(w,),
            env=env,
            text=True,
            cwd=root,
        )
        os.close(w)
        self.replies = os.fdopen(r)
        self.count = 0

    def run(self, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        with self.lock:
            self.count += 1
            out, err, mods = (self.dir / f"{self.count}.{x}" for x in ("out", "err", "mods"))
            req = {"args": args, "env": env, "out": str(out), "err": str(err), "mods": str(mods)}
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            line = self.replies.readline()
            if not line:
                raise RuntimeError("the companion fork server exited")
            rc = json.loads(line)["rc"]
            result = subprocess.CompletedProcess(
                ["companion", *args], rc, out.read_text(errors="replace"),
                err.read_text(errors="replace"),
            )  # fmt: skip
            for p in (out, err, mods):
                p.unlink(missing_ok=True)
            return result

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.replies.close()
        for p in self.dir.iterdir():
            p.unlink()
        self.dir.rmdir()


_server: ForkServer | None = None


def run(args: list[str], env: dict[str, str], root: Path) -> subprocess.CompletedProcess[str]:
    """`python -m companion ARGS` with `env`, through the fork server unless turned off."""
    global _server
    if os.environ.get("COMPANION_SCENARIO_FORK", "1") == "0":
        return subprocess.run(
            [sys.executable, "-m", "companion", *args],
            capture_output=True, text=True, env=env, timeout=120, cwd=root,
        )  # fmt: skip
    if _server is None or _server.proc.poll() is not None:
        _server = ForkServer(root)
    return _server.run(args, env)


def close() -> None:
    global _server
    if _server is not None:
        _server.close()
        _server = None
