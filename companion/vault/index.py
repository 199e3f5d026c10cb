"""The local full-text index of a vault (SQLite FTS5), kept outside the vault.

One database per vault at `<data_dir>/index/<hash of the vault path>.sqlite`. It is a cache:
deleting it loses nothing, a corrupt or outdated one is rebuilt, and it never lives inside the
vault. `update()` walks the vault and re-reads only notes whose stat data (mtime, ctime, size)
changed; alongside the text it stores what the link graph needs from each note (links, tags,
headings, block ids, warnings), so a warm `vault check` parses nothing that did not change, and
the last link graph itself, reused while no note and no other file came or went or changed.

A note whose timestamps are too close to the time it was read is marked *racy* and read again
next time: an edit in the same clock tick with the same size would otherwise go unseen.

The full text is optional per update: `vault check` keeps only the link data current
(`update(fulltext=False)`), and the first search afterwards adds the text of the notes that
lack it, without parsing them again.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import marshal
import math
import os
import re
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from companion.errors import CompanionError, InputError
from companion.logs import get_logger
from companion.vault.graph import LinkGraph, NoteMeta, build_graph
from companion.vault.note import PARSER_VERSION, split_frontmatter
from companion.vault.parse import clean_text, note_title, parse_notes
from companion.vault.query import fts_query, or_query, word_counts
from companion.vault.reader import read_note_text
from companion.vault.vault import Vault
from companion.vault.walk import FileStat, Issue, ScanResult

log = get_logger("vault.index")

SCHEMA_VERSION = 2
_PY = f"{sys.version_info[0]}.{sys.version_info[1]}"
_VERSION = f"{SCHEMA_VERSION}.{PARSER_VERSION}.{marshal.version}.{_PY}"
_BATCH_BYTES = 16 << 20
_MARK_START, _MARK_END = "\x02", "\x03"
_MARKED = re.compile("\x02([^\x03]*)\x03")

_SCHEMA = [
    "CREATE TABLE info(key TEXT PRIMARY KEY, value)",
    """CREATE TABLE notes(
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        mtime_ns INTEGER NOT NULL,
        ctime_ns INTEGER NOT NULL,
        size INTEGER NOT NULL,
        racy INTEGER NOT NULL,
        indexed INTEGER NOT NULL,
        meta BLOB,
        issue TEXT)""",
    "CREATE VIRTUAL TABLE fts USING fts5(title, body, tokenize = 'unicode61 remove_diacritics 2')",
]


class UpdateStats(NamedTuple):
    notes: int  # notes in the vault (read or not)
    parsed: int  # read and parsed this time
    removed: int  # rows dropped for notes that are gone
    unchanged: int  # served from the index
    seconds: float
    helper_parsed: int = 0  # of `parsed`, how many a helper process parsed (cold builds)


class SearchHit(NamedTuple):
    path: str
    line: int
    snippet: str
    score: float  # higher is better


class SimilarHit(NamedTuple):
    path: str
    score: float  # higher is more similar


def index_path(root: str | os.PathLike[str], data_dir: str | os.PathLike[str]) -> Path:
    """Where the index of the vault at `root` lives under `data_dir`."""
    digest = hashlib.sha256(os.path.realpath(root).encode("utf-8", "surrogateescape")).hexdigest()
    return Path(data_dir) / "index" / f"{digest[:24]}.sqlite"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _racy_window_ns(st: FileStat) -> int:
    # Coarse clocks (FAT: 2 s, HFS+: 1 s) show whole seconds; fine ones tick within ~10 ms.
    return 2_000_000_000 if st.mtime_ns % 1_000_000_000 == 0 else 100_000_000


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Bulk work allocates ~10^5 small tuples that never form cycles: collecting meanwhile
    only costs time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _Batch:
    """Rows waiting to be written, flushed every ~16 MB of text to bound memory."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.deletes: list[tuple[int]] = []
        self.stale: list[tuple[int]] = []
        self.notes: list[tuple[Any, ...]] = []
        self.texts: list[tuple[int, str, str]] = []
        self.mark: list[tuple[int]] = []
        self.size = 0

    def add_text(self, rid: int, title: str, text: str) -> None:
        self.texts.append((rid, title, text))
        self.size += len(text)
        if self.size > _BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        db = self.db
        if self.deletes:
            db.executemany("DELETE FROM notes WHERE id = ?", self.deletes)
        if self.stale or self.deletes:
            db.executemany("DELETE FROM fts WHERE rowid = ?", self.stale + self.deletes)
        if self.notes:
            db.executemany(
                "INSERT OR REPLACE INTO notes"
                "(id, path, mtime_ns, ctime_ns, size, racy, indexed, meta, issue) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self.notes,
            )
        if self.mark:
            db.executemany("UPDATE notes SET indexed = 1 WHERE id = ?", self.mark)
        if self.texts:
            db.executemany("INSERT INTO fts(rowid, title, body) VALUES (?, ?, ?)", self.texts)
        for lst in (self.deletes, self.stale, self.notes, self.texts, self.mark):
            lst.clear()
        self.size = 0


class VaultIndex:
    """The index of one vault. Use as a context manager, or call `close()`.

    After `update()`: `scan` is the walk, `issues` the files that could not be used,
    `metas` (loaded on first use) what each note contributes to the graph, and `graph()`
    the link graph."""

    def __init__(
        self, vault: Vault | str | os.PathLike[str], data_dir: str | os.PathLike[str]
    ) -> None:
        self.vault = vault if isinstance(vault, Vault) else Vault(vault)
        self.path = index_path(self.vault.root, data_dir)
        if _inside(os.path.realpath(self.path.parent), os.path.realpath(self.vault.root)):
            raise InputError(
                f"the data folder {data_dir} is inside the vault; the index must live outside it"
            )
        self.warnings: list[str] = []
        self.issues: list[Issue] = []
        self.scan: ScanResult | None = None
        self._metas: dict[str, NoteMeta] | None = None
        self._fresh: dict[str, NoteMeta] = {}
        self._graph_key: str | None = None
        self.db = self._open()

    # --- storage --------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            return self._connect(str(self.path))
        except sqlite3.DatabaseError as exc:
            log.warning("index %s unusable (%s): rebuilding it", self.path, exc)
            self._remove_files()
            try:
                return self._connect(str(self.path))
            except (sqlite3.Error, OSError) as exc2:
                return self._memory(exc2)
        except OSError as exc:
            return self._memory(exc)

    def _memory(self, exc: BaseException) -> sqlite3.Connection:
        msg = f"cannot keep the index at {self.path} ({exc}): using a temporary one"
        log.warning(msg)
        self.warnings.append(msg)
        return self._connect(":memory:")

    def _remove_files(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(str(self.path) + suffix)

    def _connect(self, where: str) -> sqlite3.Connection:
        db = sqlite3.connect(where, timeout=30, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            row = None
            with contextlib.suppress(sqlite3.OperationalError):
                row = db.execute("SELECT value FROM info WHERE key = 'version'").fetchone()
            if row is None or row[0] != _VERSION:
                self._reset(db)
        except BaseException:
            db.close()
            raise
        return db

    @staticmethod
    def _reset(db: sqlite3.Connection) -> None:
        db.execute("BEGIN IMMEDIATE")
        for table in ("fts", "notes", "info"):
            db.execute(f"DROP TABLE IF EXISTS {table}")
        for stmt in _SCHEMA:
            db.execute(stmt)
        db.execute("INSERT INTO info(key, value) VALUES ('version', ?)", (_VERSION,))
        db.execute("COMMIT")

    def _info(self, key: str) -> Any:
        row = self.db.execute("SELECT value FROM info WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> VaultIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- update ---------------------------------------------------------------------------

    def update(self, fulltext: bool = True) -> UpdateStats:
        """Bring the index up to date with the vault, reading only notes that changed.
        With `fulltext=False` only the link data is kept current (what `check` needs);
        text missing from the full-text index is added by the next `update()`."""
        t0 = time.perf_counter()
        scan = self.vault.scan(refresh=True)
        now_ns = time.time_ns()
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise CompanionError(f"the index {self.path} is busy ({exc}); try again") from None
        try:
            with _gc_paused():
                stats = self._update(scan, now_ns, fulltext)
            self.db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            raise
        self.scan = scan
        return stats._replace(seconds=time.perf_counter() - t0)

    def _update(self, scan: ScanResult, now_ns: int, fulltext: bool) -> UpdateStats:
        db = self.db
        known = {
            r[0]: r[1:]
            for r in db.execute(
                "SELECT path, id, mtime_ns, ctime_ns, size, racy, indexed, issue FROM notes"
            )
        }
        issues = list(scan.issues)
        todo: list[tuple[str, FileStat, int | None]] = []
        text_only: list[tuple[str, int]] = []  # unchanged, parsed, but not in the full text yet
        unchanged = 0
        for rel, st in scan.notes.items():
            row = known.pop(rel, None)
            if row is None:
                todo.append((rel, st, None))
                continue
            rid, mtime, ctime, size, racy, indexed, issue = row
            if racy or mtime != st.mtime_ns or size != st.size or ctime != st.ctime_ns:
                todo.append((rel, st, rid))
                continue
            unchanged += 1
            if issue is not None:
                issues.append(Issue(rel, "unreadable", issue))
            elif fulltext and not indexed:
                text_only.append((rel, rid))
        gone = [(row[0],) for row in known.values()]  # includes notes now over the size cap
        if gone:
            db.executemany("DELETE FROM notes WHERE id = ?", gone)
            db.executemany("DELETE FROM fts WHERE rowid = ?", gone)
        next_id = (db.execute("SELECT COALESCE(MAX(id), 0) FROM notes").fetchone()[0] or 0) + 1
        fresh: dict[str, NoteMeta] = {}
        batch = _Batch(db)
        root, cap = os.fspath(self.vault.root) + os.sep, self.vault.max_file_bytes
        helpers: list[int] = []
        parsed = parse_notes(root, cap, [rel for rel, _, _ in todo], fulltext, helpers)
        for (rel, st, rid), (rec, issue, title, text) in zip(todo, parsed, strict=True):
            if rid is None:
                rid = next_id
                next_id += 1
            else:
                batch.stale.append((rid,))
            racy = int(now_ns - max(st.mtime_ns, st.ctime_ns) < _racy_window_ns(st))
            if issue is not None:
                issues.append(issue)
                if issue.message.startswith("binary"):
                    row = (
                        rid,
                        rel,
                        st.mtime_ns,
                        st.ctime_ns,
                        st.size,
                        racy,
                        0,
                        None,
                        issue.message,
                    )
                    batch.notes.append(row)
                else:  # transient (permissions, a race): try again next time
                    batch.deletes.append((rid,))
                continue
            assert rec is not None  # no issue: the note was parsed
            fresh[rel] = NoteMeta.from_record(rec)
            blob = marshal.dumps(rec)
            row = (rid, rel, st.mtime_ns, st.ctime_ns, st.size, racy, int(fulltext), blob, None)
            batch.notes.append(row)
            if fulltext and text is not None:
                batch.add_text(rid, title, text)
        for rel, rid in text_only:
            rr = read_note_text(root + rel, rel, cap)
            if rr.text is None:  # became unreadable since: its stat data will show it
                continue
            batch.add_text(rid, note_title(rel), clean_text(rr.text))
            batch.mark.append((rid,))
        batch.flush()
        generation = int(self._info("generation") or 0)
        if todo or gone:
            generation += 1
            db.execute(
                "INSERT OR REPLACE INTO info(key, value) VALUES ('generation', ?)", (generation,)
            )
        names = sorted([*scan.files, *scan.too_large])
        files_digest = hashlib.blake2b(
            "\0".join(names).encode("utf-8", "surrogateescape")
        ).hexdigest()
        self._graph_key = f"{generation}:{files_digest}:{self.vault.max_file_bytes}"
        self._fresh = fresh
        self._metas = None
        self.issues = issues
        return UpdateStats(
            notes=len(scan.notes) + len(scan.too_large),
            parsed=len(todo),
            removed=len(gone),
            unchanged=unchanged,
            seconds=0.0,
            helper_parsed=sum(helpers),
        )

    # --- graph ----------------------------------------------------------------------------

    @property
    def metas(self) -> dict[str, NoteMeta]:
        """Per-note graph data of every readable note, as of the last `update()`."""
        if self._metas is None:
            if self.scan is None:
                self.update()
            metas = dict(self._fresh)
            from_record, loads = NoteMeta.from_record, marshal.loads
            with _gc_paused():
                for path, blob in self.db.execute(
                    "SELECT path, meta FROM notes WHERE meta IS NOT NULL AND issue IS NULL"
                ):
                    if path in metas:
                        continue
                    try:
                        metas[path] = from_record(loads(blob))
                    except (ValueError, TypeError, EOFError):
                        log.warning(
                            "index entry of %s unreadable; it is read again next time", path
                        )
                        self.db.execute("UPDATE notes SET racy = 1 WHERE path = ?", (path,))
            self._metas = metas
        return self._metas

    def graph(self) -> LinkGraph:
        """The link graph as of the last `update()` (run now if there was none). Reused from
        the index while nothing changed."""
        if self.scan is None:
            self.update()
        scan = self.scan
        assert scan is not None
        notes = [*scan.notes, *scan.too_large]
        with _gc_paused():
            cached = self._load_graph(notes)
            if cached is not None:
                return cached
            self.vault.use_scan(scan)
            graph = build_graph(notes, self.metas, self.vault.resolver())
            self._store_graph(graph)
        return graph

    def _load_graph(self, notes: list[str]) -> LinkGraph | None:
        row = self.db.execute("SELECT value FROM info WHERE key = 'graph'").fetchone()
        if row is None or self._graph_key is None:
            return None
        try:
            key, record = marshal.loads(row[0])
            if key != self._graph_key:
                return None
            return LinkGraph.from_record(notes, record)
        except (ValueError, TypeError, EOFError):
            return None

    def _store_graph(self, graph: LinkGraph) -> None:
        blob = marshal.dumps((self._graph_key, graph.to_record()))
        with contextlib.suppress(sqlite3.OperationalError):  # busy: it is only a cache
            self.db.execute("INSERT OR REPLACE INTO info(key, value) VALUES ('graph', ?)", (blob,))

    def note_warnings(self) -> list[tuple[str, str]]:
        """(path, warning) of every note read with a caveat (bad frontmatter, encoding...)."""
        if self._graph_key is not None:
            row = self.db.execute("SELECT value FROM info WHERE key = 'warnings'").fetchone()
            if row is not None:
                with contextlib.suppress(ValueError, TypeError, EOFError):
                    key, items = marshal.loads(row[0])
                    if key == self._graph_key:
                        return [tuple(i) for i in items]  # type: ignore[misc]
        items = sorted((p, w) for p, m in self.metas.items() for w in m.warnings)
        if self._graph_key is not None:
            with contextlib.suppress(sqlite3.OperationalError):
                self.db.execute(
                    "INSERT OR REPLACE INTO info(key, value) VALUES ('warnings', ?)",
                    (marshal.dumps((self._graph_key, items)),),
                )
        return items

    # --- queries --------------------------------------------------------------------------

    def note_count(self) -> int:
        """Notes in the full-text index."""
        return self.db.execute("SELECT COUNT(*) FROM notes WHERE indexed = 1").fetchone()[0]

    def paths(self) -> list[str]:
        """Indexed (readable) notes, sorted."""
        return [
            p
            for (p,) in self.db.execute("SELECT path FROM notes WHERE issue IS NULL ORDER BY path")
        ]

    def search(self, query: str, limit: int = 20) -> list[SearchHit]:
        """Notes matching `query` (syntax in companion.vault.query), best first, with the
        first matching line. Searches the index as of the last `update()`."""
        expr = fts_query(query)
        if not expr:
            raise InputError(f"nothing to search for in {query!r}")
        # Rank first, then mark up only the best `limit` bodies: highlighting every match
        # before the sort cost a third of a query matching most of the vault.
        sql = (
            "WITH top AS (SELECT rowid AS id, bm25(fts, 5.0, 1.0) AS rank FROM fts "
            "WHERE fts MATCH ?1 ORDER BY rank LIMIT ?2) "
            "SELECT n.path, highlight(fts, 1, char(2), char(3)), top.rank FROM top "
            "JOIN fts ON fts.rowid = top.id JOIN notes n ON n.id = top.id "
            "WHERE fts MATCH ?1 ORDER BY top.rank"
        )
        try:
            rows = self.db.execute(sql, (expr, max(1, int(limit)))).fetchall()
        except sqlite3.OperationalError as exc:
            raise InputError(f"cannot search for {query!r}: {exc}") from None
        return [self._hit(path, marked, -score) for path, marked, score in rows]

    @staticmethod
    def _hit(path: str, marked: str, score: float) -> SearchHit:
        """The hit with the line that matches the most distinct query terms (first wins)."""
        lines = marked.split("\n")
        best, best_terms = -1, 0
        for i, ln in enumerate(lines):
            if _MARK_START in ln:
                terms = len({t.casefold() for t in _MARKED.findall(ln)})
                if terms > best_terms:
                    best, best_terms = i, terms
        if best < 0:  # matched the title only: the first line of the body
            first = split_frontmatter(marked)[2] - 1
            best = next((i for i in range(first, len(lines)) if lines[i].strip()), first)
            best = min(best, max(0, len(lines) - 1))
        line = lines[best] if lines else ""
        if len(line) > 160:
            col = max(0, line.find(_MARK_START))
            lo = max(0, col - 60)
            line = ("…" if lo else "") + line[lo : lo + 160] + "…"
        snippet = line.replace(_MARK_START, "").replace(_MARK_END, "").strip()
        return SearchHit(path, best + 1, snippet, round(score, 4))

    def similar(self, text: str, limit: int = 10, exclude: str | None = None) -> list[SimilarHit]:
        """Notes whose text is most like `text`: FTS5 bm25 over its salient words (the most
        frequent informative words, weighted by how rare they are in the vault)."""
        counts = word_counts(text)
        words = [w for w, _ in counts.most_common(40)]
        if not words:
            return []
        total = self.note_count() or 1
        self.db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, fts, 'row')"
        )
        marks = ",".join("?" * len(words))
        df = dict(
            self.db.execute(f"SELECT term, doc FROM temp.vocab WHERE term IN ({marks})", words)
        )
        weighted = []
        for w in words:
            d = df.get(w)
            if d:
                weighted.append(((1 + math.log(counts[w])) * math.log((total + 1) / (d + 0.5)), w))
        if not weighted:
            return []
        weighted.sort(reverse=True)
        expr = or_query([w for _, w in weighted[:12]])
        n = max(1, int(limit))
        rows = self.db.execute(
            "SELECT n.path, bm25(fts, 5.0, 1.0) AS rank FROM fts JOIN notes n ON n.id = fts.rowid "
            "WHERE fts MATCH ? ORDER BY rank LIMIT ?",
            (expr, n + (1 if exclude else 0)),
        ).fetchall()
        return [SimilarHit(p, round(-s, 4)) for p, s in rows if p != exclude][:n]


__all__ = ["SearchHit", "SimilarHit", "UpdateStats", "VaultIndex", "index_path"]
