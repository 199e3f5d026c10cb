"""Size and count limits of the relay API (served by /v1/health so clients can adapt)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    max_json_body: int = 32 * MiB  # a commit's JSON body (the only large JSON route)
    max_small_body: int = 4 * 1024  # join, leases, leave, and any route without a body
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
    # what one agent device may add in a UTC day (0: no limit; human devices never limited):
    agent_records_per_day: int = 100_000  # a server's first upload of a large vault fits a day
    agent_bytes_per_day: int = 512 * MiB

    def as_dict(self) -> dict[str, int | float]:
        return asdict(self)

    @property
    def max_key_body(self) -> int:
        """PUT /key: the key blob in base64, inside JSON."""
        return self.max_key_blob_bytes * 4 // 3 + 1024

    @property
    def max_ids_body(self) -> int:
        """blobs-missing / blobs-download: up to max_blobs_per_batch ids of 128 hex digits."""
        return self.max_blobs_per_batch * 140 + 1024

    def body_limit(self, method: str, path: str) -> int:
        """The largest body the route at (method, path) accepts: large only for commits and
        blobs, small everywhere else, so no route reads more than it can use."""
        if path.startswith("/v1/vaults/"):
            if method == "PUT" and "/blobs/" in path:
                return self.max_blob_bytes
            if method == "POST" and path.endswith("/blobs-upload"):
                return self.max_batch_bytes
            if method == "POST" and path.endswith("/commit"):
                return self.max_json_body
            if method == "PUT" and path.endswith("/key"):
                return self.max_key_body
            if method == "POST" and path.endswith(("/blobs-missing", "/blobs-download")):
                return self.max_ids_body
        return self.max_small_body
