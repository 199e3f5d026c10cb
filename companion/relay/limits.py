"""Size and count limits of the relay API (served by /v1/health so clients can adapt)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    max_json_body: int = 32 * MiB  # any JSON request body
    max_records_per_commit: int = 1000
    max_sealed_bytes: int = 1 * MiB  # one record's sealed payload (decoded)
    max_blobs_per_record: int = 4096
    max_blob_bytes: int = 16 * MiB  # one blob; the sync engine chunks large files
    max_batch_bytes: int = 64 * MiB  # one batched blob upload
    max_blobs_per_batch: int = 1000  # ids per batched download / missing-check
    max_changes_per_page: int = 5000
    max_changes_bytes: int = 8 * MiB  # sealed bytes per changes page (at least one record)
    max_history: int = 1000
    max_wait_s: float = 60.0  # longest long-poll
    max_key_blob_bytes: int = 64 * 1024

    def as_dict(self) -> dict[str, int | float]:
        return asdict(self)
