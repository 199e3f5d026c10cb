"""The wake file another process writes to ask the running engine for a round."""

from __future__ import annotations

import threading
from pathlib import Path

from companion.sync.service.wake import WAKE_NAME, WakeFile, request_round


def test_a_reader_never_sees_the_wake_file_half_written(tmp_path: Path) -> None:
    """The daemon looks at the file whenever it wakes. Truncating it before writing the new
    stamp let that look read it empty, which counts as one more request (7,444 of 10,339 reads
    here, before the file was replaced whole)."""
    request_round(tmp_path)
    done = threading.Event()
    seen: list[str] = []

    def look() -> None:
        while not done.is_set():
            seen.append((tmp_path / WAKE_NAME).read_text(encoding="ascii"))

    reader = threading.Thread(target=look)
    reader.start()
    try:
        for _ in range(500):
            request_round(tmp_path)
    finally:
        done.set()
        reader.join(10)
    assert seen and "" not in seen


def test_each_request_is_seen_once(tmp_path: Path) -> None:
    wake = WakeFile(tmp_path)
    assert not wake.requested()  # no file yet
    request_round(tmp_path)
    assert wake.requested()
    assert not wake.requested()
    request_round(tmp_path)
    assert wake.requested()
    assert [p.name for p in tmp_path.iterdir()] == [WAKE_NAME]  # no temp file left
