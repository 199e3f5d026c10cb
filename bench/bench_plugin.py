"""Benchmark of the Obsidian plugin's sync core under Node (`obsidian-plugin/dist/cli.js`).

    python bench/bench_plugin.py [--notes 2000,10000] [--repeat 3] [--samples 20]
    python bench/bench_plugin.py --quick      # 200 notes, 1 repeat, 2 samples: a smoke run

Measures, against a real relay (`companion relay serve` as its own process) on loopback:

1. join: `cli.js join` wall time with the vault's real Argon2id parameters (64 MiB, 3 passes,
   4 lanes), as the first device (wrap) and as a second one (unwrap), beside Python's
   Argon2id (OpenSSL) for the same parameters;
2. first sync of N notes (bench/gen_vault.py, ~2 KB each) uploaded by a Python device, into an
   empty vault: `cli.js sync` wall time (Node start-up included), median of `--repeat` fresh
   devices, and the notes/s;
3. propagation with `cli.js watch` on the plugin side and `companion watch` on the Python side:
   save on one disk -> bytes on the other, median and p95 of `--samples` edits each way.

Every plugin device joins as the plugin does, a person's (human) device, so each invite it
redeems is made with kind human (`companion relay invite --kind human`).

Key derivation: the join rows use the real Argon2id parameters, which is what they measure.
The vaults of the first-sync and propagation rows are created by `tests/syncharness.py`'s
Python device, which wraps the key with the harness's cheap `TEST_KDF_PARAMS` on purpose (the
join is not what those rows time); the plugin devices joining them unwrap with the parameters
stored in the key blob and never ask for the weak KDF. So no `COMPANION_TEST_WEAK_KDF` is set:
that test-only variable is refused outside the test suite (`src/cli/testmode.ts`).

Targets (issue #18): 10,000 notes in <= 15 s; propagation median <= 300 ms. Prints a table.
Needs `npm ci && npm run build` in obsidian-plugin/ first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from gen_vault import generate_vault  # noqa: E402

from companion.crypto import DEFAULT_KDF_PARAMS, VaultKey, wrap_vault_key  # noqa: E402
from tests.syncharness import SyncCluster  # noqa: E402

CLI = REPO / "obsidian-plugin" / "dist" / "cli.js"


def node_env(home: Path, passfile: Path) -> dict[str, str]:
    """A plugin device's environment: its own home and passphrase file, no test-only KDF."""
    env = dict(os.environ)
    env.update(COMPANION_HOME=str(home), COMPANION_PASSPHRASE_FILE=str(passfile))
    env.pop("COMPANION_TEST_WEAK_KDF", None)
    return env


def run_cli(env: dict[str, str], *args: str) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(["node", str(CLI), *args], env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"cli.js {args[0]} failed ({r.returncode}): {r.stderr.strip()}")
    return dt


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]


def bench_join(work: Path, repeat: int) -> dict[str, float]:
    out: dict[str, list[float]] = {"create": [], "unlock": [], "python": []}
    for i in range(repeat):
        with SyncCluster(work / f"join{i}", relay="process") as cluster:
            first, second = work / f"join{i}" / "h1", work / f"join{i}" / "h2"
            invite = cluster.relay.invite(new_vault=True, kind="human")
            env = node_env(first, cluster.passphrase_file)
            url = cluster.relay.url
            out["create"].append(
                run_cli(
                    env,
                    "join",
                    str(first / "v"),
                    "--relay",
                    url,
                    "--invite",
                    invite,
                    "--device-name",
                    "a",
                )  # fmt: skip
            )
            vid = invite.split("-")[0]
            invite2 = cluster.relay.invite(vault_id=vid, kind="human")
            env2 = node_env(second, cluster.passphrase_file)
            out["unlock"].append(
                run_cli(
                    env2,
                    "join",
                    str(second / "v"),
                    "--relay",
                    url,
                    "--invite",
                    invite2,
                    "--device-name",
                    "b",
                )  # fmt: skip
            )
        t0 = time.perf_counter()
        wrap_vault_key(VaultKey.generate(), "passphrase", vault_id="v", params=DEFAULT_KDF_PARAMS)
        out["python"].append(time.perf_counter() - t0)
    return {k: med(v) for k, v in out.items()}


def bench_first_sync(work: Path, n: int, repeat: int) -> tuple[float, float, float]:
    with SyncCluster(work / f"first{n}", relay="process") as cluster:
        src = cluster.add_device("server", "agent")
        generate_vault(n, src.vault, seed=1)
        t0 = time.perf_counter()
        src.sync()
        upload = time.perf_counter() - t0
        n_files = len(src.files())
        times = []
        for i in range(repeat):
            home = work / f"first{n}" / f"phone{i}"
            env = node_env(home, cluster.passphrase_file)
            vault = home / "vault"
            run_cli(env, "join", str(vault), "--relay", cluster.relay.url, "--invite",
                    cluster.invite("human"), "--device-name", f"phone{i}")  # fmt: skip
            times.append(run_cli(env, "sync", str(vault)))
            got = sum(
                1 for p in vault.rglob("*") if p.is_file() and p.name != ".companion-folder.json"
            )
            if got != n_files:
                raise SystemExit(f"first sync of {n}: {got} files, expected {n_files}")
            shutil.rmtree(vault)
        return med(times), n_files / med(times), upload


def wait_bytes(path: Path, data: bytes, timeout: float = 30.0) -> float:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        try:
            if path.read_bytes() == data:
                return time.perf_counter()
        except OSError:
            pass
        time.sleep(0.002)
    raise SystemExit(f"{path.name} did not arrive within {timeout} s")


def bench_propagation(work: Path, samples: int) -> dict[str, list[float]]:
    with SyncCluster(work / "prop", relay="process") as cluster:
        agent = cluster.add_device("server", "agent")
        agent.write("seed.md", "seed\n")
        agent.sync()
        agent.restart()
        home = work / "prop" / "phone"
        env = node_env(home, cluster.passphrase_file)
        vault = home / "vault"
        run_cli(env, "join", str(vault), "--relay", cluster.relay.url, "--invite",
                cluster.invite("human"), "--device-name", "phone")  # fmt: skip
        run_cli(env, "sync", str(vault))
        procs = [
            subprocess.Popen(
                ["node", str(CLI), "watch", str(vault)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ),  # fmt: skip
            subprocess.Popen(
                [sys.executable, "-m", "companion", "watch", str(agent.vault)],
                env={k: v for k, v in agent.env().items() if k != "COMPANION_TEST_WEAK_KDF"},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ),  # fmt: skip
        ]
        out: dict[str, list[float]] = {"plugin -> python": [], "python -> plugin": []}
        try:
            # both daemons watching: one unmeasured save each way, waited for by its bytes
            (vault / "prop").mkdir(exist_ok=True)
            for src, dst in ((vault, agent.vault), (agent.vault, vault)):
                data = f"warm-up {time.time_ns()}\n".encode()
                (src / "prop" / f"warm-up-{src.name}.md").write_bytes(data)
                wait_bytes(dst / "prop" / f"warm-up-{src.name}.md", data, timeout=60.0)
            for i in range(samples):
                for direction, src, dst in (
                    ("plugin -> python", vault, agent.vault),
                    ("python -> plugin", agent.vault, vault),
                ):
                    data = f"sample {i} {direction} {time.time_ns()}\n".encode()
                    name = f"prop/{direction[:6].strip()}-{i}.md"
                    (src / "prop").mkdir(exist_ok=True)
                    t0 = time.perf_counter()
                    (src / name).write_bytes(data)
                    out[direction].append(wait_bytes(dst / name, data) - t0)
                    time.sleep(0.3)  # a quiet spell between samples, not a wait for anything
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(timeout=30)
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--notes", default="2000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument(
        "--quick", action="store_true", help="200 notes, 1 repeat, 2 samples (a smoke run)"
    )
    args = ap.parse_args()
    if args.quick:
        args.notes, args.repeat, args.samples = "200", 1, 2
    os.environ["PYTHONPATH"] = str(REPO)  # the relay and `companion watch` of this checkout
    if not CLI.exists():
        raise SystemExit("build the plugin first: cd obsidian-plugin && npm ci && npm run build")
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-plugin-") as tmp:
        work = Path(tmp)
        j = bench_join(work, args.repeat)
        rows.append(("join, first device (Argon2id wrap, 64 MiB/3/4)", f"{j['create']:.2f} s", ""))
        rows.append(("join, second device (Argon2id unwrap)", f"{j['unlock']:.2f} s",
                     f"Python's Argon2id alone: {j['python']:.2f} s"))  # fmt: skip
        for n in [int(x) for x in args.notes.split(",") if x]:
            t, rate, up = bench_first_sync(work, n, args.repeat)
            target = "  (target <= 15 s)" if n == 10000 else ""
            rows.append((f"first sync of {n:,} notes from the relay", f"{t:.2f} s{target}",
                         f"{rate:,.0f} files/s; Python upload {up:.1f} s"))  # fmt: skip
        prop = bench_propagation(work, args.samples)
        for direction, xs in prop.items():
            rows.append((f"propagation {direction} (watch both sides)",
                         f"median {med(xs) * 1000:.0f} ms, p95 {p95(xs) * 1000:.0f} ms",
                         f"{len(xs)} samples; target median <= 300 ms"))  # fmt: skip
    print(f"\nObsidian plugin core under Node {node}, relay on loopback, {os.cpu_count()} CPUs\n")
    w = max(len(r[0]) for r in rows)
    v = max(len(r[1]) for r in rows)
    print(f"| {'what'.ljust(w)} | {'result'.ljust(v)} | notes |")
    print(f"|{'-' * (w + 2)}|{'-' * (v + 2)}|-------|")
    for a, b, c in rows:
        print(f"| {a.ljust(w)} | {b.ljust(v)} | {c} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
