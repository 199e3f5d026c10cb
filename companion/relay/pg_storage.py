"""The relay's PostgreSQL store: several relay processes (or machines) on one database.

    PgStorage("postgresql://relay@db.example.org/relay")                  # blobs in PostgreSQL
    PgStorage(url, blobs=S3Blobs("s3://bucket/prefix", endpoint_url=...))  # blobs in S3

Everything a relay holds lives in the database: vaults, wrapped keys and their history,
invites, devices, records, blob metadata, leases and the failed-authentication buckets, so any
process can serve any request. psycopg 3 with a connection pool (one connection per worker
thread at most); the schema is versioned (`pg_schema.py`, `companion relay migrate`).

Exactness under concurrency. A commit is one transaction that first locks its vault's row
(`SELECT ... FOR UPDATE`): commits to one vault are serialised across every process, so the
compare-and-swap on each file's head is exact (no lost update, no duplicate revision, the
unique (vault, file, rev) key guarding it again) and sequence numbers are handed out in commit
order, so a reader that has seen seq N never later meets a record below N. Commits to
different vaults run in parallel. The commit sends `NOTIFY companion_relay, '<vault>'` inside
its transaction (delivered only if it commits); every process LISTENs on one connection and
wakes its long-polls for that vault (`subscribe`).

Blobs. By default the ciphertext is stored in PostgreSQL: content-addressed by SHA-256 in
`blob_content` (one row per distinct content) and `blob_chunks` (1 MiB pieces, stored without
compression attempts: ciphertext does not compress), and per-vault `blobs` rows name the
content. Identical bytes are stored once; every read is checked against the SHA-256 before a
byte is sent. With `S3Blobs` the content goes to an S3-compatible object store instead and the
database keeps the same rows. Content no vault references is deleted by `prune` after the
grace period, under row locks that an upload of the same content waits on, so a blob is never
deleted under a fresh upload.

The queries and the rules are `SqlStore`'s (`sqlstore.py`, run by the SQLite store too, with
`PostgresDialect` here: the row locks, batched lookups, COPY and NOTIFY above); this module
keeps the pool, the LISTEN connection, the shared failed-authentication buckets, the blob
content and the advisory-locked prune.
"""

from __future__ import annotations

import contextlib
import io
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from companion.logs import get_logger, register_secret
from companion.relay import pg_schema
from companion.relay.sqlstore import CHANNEL, CheckedSink, PostgresDialect, SqlStore, intact
from companion.relay.storage import (
    BlobCorrupt,
    BlobInfo,
    BlobSink,
    NotFound,
    PruneStats,
    RetentionPolicy,
)

log = get_logger("relay.pg")

CHUNK = 1024 * 1024
PRUNE_LOCK = 0x636F6D70  # pg_advisory_lock key: one pruner at a time across processes


def redact_url(url: str) -> str:
    """The URL with its password replaced (for messages and logs)."""
    info = psycopg.conninfo.conninfo_to_dict(url)
    if info.get("password"):
        register_secret(str(info["password"]))
    host = info.get("host", "localhost")
    return f"postgresql://{info.get('user', '')}@{host}:{info.get('port', 5432)}/" + str(
        info.get("dbname", "")
    )


# -- where blob bytes live -------------------------------------------------------------------------


class ContentStore:
    """Blob bytes by SHA-256. `put` and `get` run with the caller's connection (used by the
    PostgreSQL store, ignored by S3); `put` is idempotent."""

    name = "pg"

    def put(self, conn: psycopg.Connection, sha256: str, data: bytes) -> None:
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO blob_chunks (sha256, n, data) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                [
                    (sha256, i, data[at : at + CHUNK])
                    for i, at in enumerate(range(0, max(len(data), 1), CHUNK))
                ],
            )

    def exists(self, conn: psycopg.Connection, sha256: str) -> bool:
        return True  # chunks are written in the transaction that creates the content row

    def get(self, conn: psycopg.Connection, sha256: str) -> bytes | None:
        rows = conn.execute(
            "SELECT data FROM blob_chunks WHERE sha256=%s ORDER BY n", (sha256,)
        ).fetchall()
        return b"".join(bytes(r[0]) for r in rows) if rows else None

    def delete(self, conn: psycopg.Connection, shas: Sequence[str]) -> None:
        if shas:
            conn.execute("DELETE FROM blob_chunks WHERE sha256 = ANY(%s)", (list(shas),))


class S3Blobs(ContentStore):
    """Blob bytes in an S3-compatible object store (boto3), one object per content:
    `<prefix><sha[:2]>/<sha>`. Credentials come from boto3's usual sources (environment,
    ~/.aws, instance roles); `endpoint_url` points at a non-AWS store (MinIO, Ceph, ...)."""

    name = "s3"

    def __init__(self, url: str, *, endpoint_url: str | None = None, region: str | None = None,
                 client: Any = None) -> None:  # fmt: skip
        if not url.startswith("s3://") or len(url) <= 5:
            raise ValueError(f"not an s3:// URL: {url!r} (use s3://bucket/prefix)")
        bucket, _, prefix = url[5:].partition("/")
        self.bucket = bucket
        self.prefix = (prefix.rstrip("/") + "/") if prefix else ""
        if client is None:
            import boto3  # type: ignore[import-untyped]
            from botocore.config import Config  # type: ignore[import-untyped]

            client = boto3.client(
                "s3",
                endpoint_url=endpoint_url,
                region_name=region,
                config=Config(retries={"max_attempts": 5, "mode": "standard"},
                              max_pool_connections=64),
            )  # fmt: skip
        self.client = client

    def key(self, sha256: str) -> str:
        return f"{self.prefix}{sha256[:2]}/{sha256}"

    def put(self, conn: psycopg.Connection, sha256: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self.key(sha256), Body=data)

    def exists(self, conn: psycopg.Connection, sha256: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self.key(sha256))
        except Exception as exc:  # botocore ClientError 404
            if _is_missing(exc):
                return False
            raise
        return True

    def get(self, conn: psycopg.Connection, sha256: str) -> bytes | None:
        try:
            obj = self.client.get_object(Bucket=self.bucket, Key=self.key(sha256))
        except Exception as exc:
            if _is_missing(exc):
                return None
            raise
        return bytes(obj["Body"].read())

    def delete(self, conn: psycopg.Connection, shas: Sequence[str]) -> None:
        keys = [{"Key": self.key(s)} for s in shas]
        for i in range(0, len(keys), 1000):
            self.client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": keys[i : i + 1000], "Quiet": True}
            )


def _is_missing(exc: Exception) -> bool:
    code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
    return code in ("404", "NoSuchKey", "NotFound")


# -- the store -------------------------------------------------------------------------------------


class PgStorage(SqlStore):
    """PostgreSQL for state, blob content in PostgreSQL or S3; see the module docstring. The
    SQL and the rules are `SqlStore`'s; this class keeps the pool, the notifications, the
    shared failed-authentication buckets and the blob content."""

    d = PostgresDialect()

    def __init__(
        self,
        url: str,
        *,
        blobs: ContentStore | None = None,
        pool_size: int = 20,
        check_schema: bool = True,
    ) -> None:
        self.url = url
        self.display_url = redact_url(url)
        self.content = blobs or ContentStore()
        try:  # one direct attempt first: a wrong URL fails at once, not after the pool's retries
            psycopg.connect(url, connect_timeout=10).close()
        except psycopg.Error as exc:
            raise ConnectionError(f"cannot connect to {self.display_url}: {exc}") from None
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            open=False,
            name="companion-relay",
        )
        try:
            self.pool.open(wait=True, timeout=15)
        except Exception as exc:
            self.pool.close()
            raise ConnectionError(f"cannot connect to {self.display_url}: {exc}") from None
        self._listener: threading.Thread | None = None
        self._callbacks: list[Callable[[str | None], None]] = []
        self._closed = threading.Event()
        if check_schema:
            with self.pool.connection() as conn:
                pg_schema.check(conn, self.display_url)

    # plumbing ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _tx(self) -> Iterator[psycopg.Connection]:
        with self.pool.connection() as conn, conn.transaction():
            yield conn

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[psycopg.Connection]:
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield conn

    def _reading(self) -> contextlib.AbstractContextManager[psycopg.Connection]:
        return self.pool.connection()

    _single = _reading  # autocommit: one statement is its own transaction

    def close(self) -> None:
        self._closed.set()  # the listener (a daemon thread) ends within a second
        self.pool.close()

    # blobs: content addressed by SHA-256, in PostgreSQL or an object store ---------------------
    def blob_sink(self, vault_id: str, blob_id: str, sha256: str, now: float) -> BlobSink:
        return _PgBlobSink(self, blob_id, sha256, now)

    def _store_content(self, sha256: str, data: bytes, now: float) -> None:
        """Make `data` durable under its SHA-256 (idempotent). The content row is created, or
        its time refreshed, first: a prune that is deleting the same content holds that row
        locked, so this waits for it and then stores the bytes again."""
        with self._tx() as c:
            row = c.execute(
                "INSERT INTO blob_content (sha256, size, created, store) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (sha256) DO UPDATE SET created = GREATEST(blob_content.created, "
                "EXCLUDED.created) RETURNING (xmax = 0)",
                (sha256, len(data), now, self.content.name),
            ).fetchone()
            inserted = bool(row and row[0])
            if inserted and self.content.name == "pg":
                self.content.put(c, sha256, data)
        if self.content.name != "pg" and (inserted or not self.content.exists(c, sha256)):
            self.content.put(c, sha256, data)  # after the row: see prune

    # publish_blobs (SqlStore's): the content was stored when the sink was sealed
    def _publish_bytes(
        self, c: psycopg.Connection, vault_id: str, sink: CheckedSink, batch: None
    ) -> None:
        assert sink.sealed is not None
        # FOR SHARE: a prune deleting this content now would have to wait for us
        content = c.execute(
            "SELECT 1 FROM blob_content WHERE sha256=%s FOR SHARE", (sink.sealed.sha256,)
        ).fetchone()
        if content is None:  # cannot happen: seal refreshed it, prune spares fresh content
            raise RuntimeError(f"the content of blob {sink.blob_id} vanished before it "
                               "was published")  # fmt: skip

    def _blob_bytes(self, vault_id: str, blob_id: str) -> tuple[BlobInfo, bytes | None, bool]:
        with self.pool.connection() as c:
            row = c.execute(
                "SELECT size, sha256 FROM blobs WHERE vault_id=%s AND blob_id=%s",
                (vault_id, blob_id),
            ).fetchone()
            if row is None:
                raise NotFound(blob_id)
            info = BlobInfo(blob_id, row[0], row[1])
            return info, self.content.get(c, info.sha256), False

    def read_blobs(
        self, vault_id: str, blob_ids: Sequence[str], max_bytes: int
    ) -> list[tuple[BlobInfo, bytes] | NotFound | BlobCorrupt]:
        if self.content.name != "pg" or not blob_ids:
            return super().read_blobs(vault_id, blob_ids, max_bytes)
        # one round trip for a group: metadata, then the chunks of as many blobs as fit
        with self.pool.connection() as c:
            meta = {
                r[0]: BlobInfo(r[0], r[1], r[2])
                for r in c.execute(
                    "SELECT blob_id, size, sha256 FROM blobs WHERE vault_id=%s "
                    "AND blob_id = ANY(%s)",
                    (vault_id, list(blob_ids)),
                )
            }
            take: list[str] = []
            total = 0
            for b in blob_ids:
                take.append(b)
                total += meta[b].size if b in meta else 0
                if b not in meta or total >= max_bytes:
                    break
            shas = list({meta[b].sha256 for b in take if b in meta})
            parts: dict[str, list[bytes]] = {}
            for sha, data in c.execute(
                "SELECT sha256, data FROM blob_chunks WHERE sha256 = ANY(%s) ORDER BY sha256, n",
                (shas,),
            ):
                parts.setdefault(sha, []).append(bytes(data))
        out: list[tuple[BlobInfo, bytes] | NotFound | BlobCorrupt] = []
        for b in take:
            info = meta.get(b)
            if info is None:
                out.append(NotFound(b))
                break
            data = b"".join(parts.get(info.sha256, []))
            if not intact(info, data):
                self._quarantine(vault_id, info, None)
                out.append(BlobCorrupt(b))
                break
            out.append((info, data))
        return out

    def _quarantine(self, vault_id: str, info: BlobInfo, row_bytes: bytes | None) -> None:
        """Forget a blob whose bytes fail their checksum (so a device can upload it again) and
        keep a note of it; the damaged content goes when nothing references it."""
        log.error("blob %s/%s failed its checksum; forgotten", vault_id, info.blob_id)
        with self._tx() as c:
            c.execute(
                "DELETE FROM blobs WHERE vault_id=%s AND blob_id=%s", (vault_id, info.blob_id)
            )
            c.execute(
                "INSERT INTO quarantine (vault_id, blob_id, sha256, at) VALUES (%s, %s, %s, %s)",
                (vault_id, info.blob_id, info.sha256, time.time()),
            )
            # the content row goes too (its bytes are bad): the next upload stores them afresh
            c.execute("DELETE FROM blob_content WHERE sha256=%s", (info.sha256,))
            self.content.delete(c, [info.sha256])

    # failed-authentication buckets, shared by every relay process --------------------------------
    def limiter_level(self, key: str) -> tuple[float, float] | None:
        row = self._one("SELECT tokens, stamp FROM auth_failures WHERE key=%s", (key,))
        return (row[0], row[1]) if row else None

    def limiter_take(self, key: str, capacity: float, rate: float, now: float) -> None:
        with self.pool.connection() as c:
            c.execute(
                "INSERT INTO auth_failures (key, tokens, stamp) VALUES (%s, %s, %s) "
                "ON CONFLICT (key) DO UPDATE SET tokens = GREATEST(0, LEAST(%s, "
                "auth_failures.tokens + (EXCLUDED.stamp - auth_failures.stamp) * %s) - 1), "
                "stamp = EXCLUDED.stamp",
                (key, capacity - 1, now, capacity, rate),
            )

    # housekeeping ------------------------------------------------------------------------------
    def prune(self, policy: RetentionPolicy, now: float) -> PruneStats:
        keep_last = max(1, int(policy.keep_last))
        cutoff = now - policy.keep_days * 86400
        blob_cutoff = now - policy.blob_grace_s
        with self._tx() as c:
            got = c.execute("SELECT pg_try_advisory_xact_lock(%s)", (PRUNE_LOCK,)).fetchone()
            if not got or not got[0]:
                return PruneStats()  # another relay process is pruning right now
            n_records = self._prune_records(c, cutoff, keep_last)
            c.execute(
                "CREATE TEMP TABLE referenced ON COMMIT DROP AS "
                "SELECT DISTINCT vault_id, unnest(blobs) AS blob_id FROM records"
            )
            doomed = c.execute(
                "DELETE FROM blobs b WHERE b.created < %s AND NOT EXISTS (SELECT 1 FROM "
                "referenced x WHERE x.vault_id=b.vault_id AND x.blob_id=b.blob_id) "
                "RETURNING size",
                (blob_cutoff,),
            ).fetchall()
            # content nothing references any more (row locks: an upload of it waits for us)
            gone = [
                r[0]
                for r in c.execute(
                    "DELETE FROM blob_content c WHERE c.created < %s AND NOT EXISTS "
                    "(SELECT 1 FROM blobs b WHERE b.sha256 = c.sha256) RETURNING sha256",
                    (blob_cutoff,),
                )
            ]
            self.content.delete(c, gone)
            n_invites, n_leases = self._prune_invites_and_leases(c, now)
            c.execute("DELETE FROM auth_failures WHERE stamp < %s", (now - 86400,))
        return PruneStats(
            records=n_records,
            blobs=len(doomed),
            blob_bytes=sum(r[0] for r in doomed),
            invites=n_invites,
            leases=n_leases,
        )

    # commits made by other processes -----------------------------------------------------------
    def subscribe(self, callback: Callable[[str | None], None]) -> None:
        self._callbacks.append(callback)
        if self._listener is None:
            self._listener = threading.Thread(
                target=self._listen, name="companion-relay-listen", daemon=True
            )
            self._listener.start()

    def _listen(self) -> None:
        """LISTEN on a dedicated connection; after a reconnect, wake every waiter (a NOTIFY
        sent while we were away is lost)."""
        delay = 0.2
        first = True
        while not self._closed.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))
                    if not first:
                        self._fire(None)
                    first = False
                    delay = 0.2
                    while not self._closed.is_set():
                        for n in conn.notifies(timeout=1.0):
                            self._fire(n.payload)
            except psycopg.Error as exc:
                if self._closed.is_set():
                    return
                log.warning("lost the notification connection (%s); reconnecting", exc)
                self._closed.wait(delay)
                delay = min(5.0, delay * 2)

    def _fire(self, vault_id: str | None) -> None:
        for cb in list(self._callbacks):
            try:
                cb(vault_id)
            except Exception:  # a closed event loop at shutdown
                log.debug("notification callback failed", exc_info=True)


class _PgBlobSink(CheckedSink):
    """Buffers the upload (a blob is at most `max_blob_bytes`), hashing as it goes; `seal`
    checks it and stores the content durably (invisible until `publish_blobs`)."""

    def __init__(self, store: PgStorage, blob_id: str, sha256: str, now: float) -> None:
        super().__init__(blob_id, sha256, now)
        self._store = store
        self._buf: io.BytesIO | None = io.BytesIO()

    def _take(self, data: bytes | memoryview) -> None:
        assert self._buf is not None, "write after abort"
        self._buf.write(data)

    def _keep(self, digest: str) -> None:
        assert self._buf is not None
        self._store._store_content(digest, self._buf.getvalue(), self.now)
        self._buf = None  # stored: a batch does not keep every blob in memory until publish

    def abort(self) -> None:
        self._buf = None
