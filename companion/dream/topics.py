"""Which existing note a candidate belongs to (the list of notes is read before anything is
created).

For a lesson (area `knowledge/`), in this order:
1. an explicit wikilink in the text that resolves (Obsidian's rules) to a note in the area;
2. a note title or frontmatter alias named in the text (case- and accent-insensitive, whole
   words, longest name first; a one-word name of under 4 letters counts only written as the
   note writes it, in capitals or capitalised mid-sentence: "NAS", "the Pi"; a name shared by
   several notes is ambiguous and skipped); not found as written, the name in another
   inflection (`loose_word`: "Massenspektrometers", "lavatrici"), then, in a German text, a
   one-word name a compound word starts or ends with ("Heizungspumpe": `Heizung`);
3. full-text similarity: the vault index's best matches, scored by how much of the candidate's
   informative words (compared by stem, weighted by rarity in the vault; the function words
   of the text's language are none: `function_words`) the note contains. A
   note scoring at least `SIMILARITY_THRESHOLD` (0.6), sharing at least 2 such words, is the
   topic. The window's journal days are in the index too; their words are taken out of the
   counts (`discount`), or a lesson's own words on its own day would count as known and dilute
   the match. At least one shared word must be rare (`RARE_SHARE`): common words alone
   ("every", "new") never place a lesson, it goes on to its topic or the inbox;
4. otherwise its topic: the wikilink the text names (a link to a note that does not exist
   yet), else the name the text is about (`topic_name`: `SQLite`, `BME280`, `Home Assistant`):
   the note that speaks most of that name (full-text search for it, as a phrase), else a new
   note named by it, `knowledge/<Topic>.md`; never the sentence cut short;
5. with no topic to name, the vault's inbox note (`Inbox`, `Bandeja de entrada`: its name in
   the vault's language), where the lesson waits for the person to sort it; the inbox is never
   a topic itself.
Decisions and status lines go to the note in `projects/` their link (or the project's name in
the text) points to; with neither they are skipped, never guessed.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from companion.dream import langdetect
from companion.dream.text import fold, stem, title_key, unwrap_links, word_list, words
from companion.fileio import write_text_atomic
from companion.vault.code import mask_code
from companion.vault.layout import area_of
from companion.vault.links import LinkResolver, path_key
from companion.vault.note import extract_links
from companion.vault.query import STOPWORDS

SIMILARITY_THRESHOLD = 0.6
MIN_SHARED_WORDS = 2
# A rare word: its rarity weight (log((notes + 1) / (df + 0.5))) at least this share of the
# rarest possible (a word no note holds); a note sharing only common words ("every", "new",
# "needs") with a lesson is not its topic, whatever share of its known words they are.
RARE_SHARE = 0.35
MAX_TITLE_WORDS = 10
_HEAD_BYTES = 4096
# Characters a title never holds: they break a wikilink (`#`, `^`, `|`, brackets, a backtick
# the vault's checker reads as code) or a file name on some system; ":" only in file names.
_BAD_TITLE = re.compile(r'[\\/*?"<>|#^\[\]`\x00-\x1f]+')
_TIME_COLON = re.compile(r"(?<=\d):(?=\d)")
# The function words (articles, prepositions, pronouns...) of each language the dream knows
# (`langdetect.WORDS`, and a few demonstratives), folded. The vault's stopwords are English and
# Spanish only: in a French or German text "les", "dans", "die", "im" counted as informative
# words (two of them placed a lesson by similarity), and a German sentence's first article,
# capitalised like the noun after it, opened a name ("Die Insulinpumpen"). Only the words of
# the text's own language count (German "war" and "man" are English words too), never one
# written in capitals ("NAS", Portuguese "nas").
_MORE_FUNCTION_WORDS = {
    "de": "dieser diese dieses diesen diesem jeder jede jedes jeden jedem alle",
    "pt": "esse essa esses essas aquele aquela aqueles aquelas cada",
    "it": "quel quelle quelli ogni",
}
_FUNCTION_WORDS: dict[str, frozenset[str]] = {
    lang: frozenset(fold(w) for w in (ws + " " + _MORE_FUNCTION_WORDS.get(lang, "")).split())
    for lang, ws in langdetect.WORDS.items()
}
_CAPS = re.compile(r"\b[^\W\d_a-z]{2,}\b")


def function_words(text: str) -> frozenset[str]:
    """The folded words of `text` that say nothing of its topic: the vault's stopwords and the
    function words of the language `text` is written in, but none written in capitals."""
    lang = langdetect.detect(text)
    own = _FUNCTION_WORDS.get(lang or "", frozenset())
    if not own:
        return STOPWORDS
    caps = {fold(w) for w in _CAPS.findall(text) if w.isupper()}
    return STOPWORDS | (own - caps) if caps else STOPWORDS | own


# German writes compounds as one word: "Heizungspumpe" is about the `Heizung`, "Wahlschalter"
# a `Schalter`. A one-word note name of at least this many letters, at the start or the end of
# a word of a German text with at least `COMPOUND_REST` letters left, names that note.
COMPOUND_NAME = 5
COMPOUND_REST = 3
COMPOUND_LANGUAGES = ("de",)
# Inflection endings of nouns and adjectives in the dream's languages (plural, gender, case:
# `backups`, `réseaux`, `Massenspektrometers`, `Tomaten`, `protocolli`, `eletrónica`), longest
# first. A name not found as written is looked for with its words and the text's words
# without them (`loose_word`), never shorter than `LOOSE_MIN` letters.
LOOSE_ENDINGS = ("ern", "ens", "en", "er", "em", "es", "ns", "a", "e", "i", "n", "o", "s", "x")
LOOSE_MIN = 5


def loose_word(word: str) -> str:
    """A folded word without its inflection endings (`LOOSE_ENDINGS`, peeled while at least
    `LOOSE_MIN` letters stay): `spectrometers` and `spectrometer` -> `spectromet`, `tomaten`
    and `tomate` -> `tomat`, `redis` stays `redis`."""
    while True:
        for end in LOOSE_ENDINGS:
            if word.endswith(end) and len(word) - len(end) >= LOOSE_MIN:
                word = word[: -len(end)]
                break
        else:
            return word


@dataclass
class TopicMatch:
    path: str | None  # the note (existing or to create); None: no home for the candidate
    how: str  # link, title, alias, similar, new, inbox, none
    score: float = 1.0
    reason: str = ""
    title: str | None = None  # a new note's title as written (its H1; ":" kept)
    created: bool = False  # the inbox note does not exist yet

    @property
    def is_new(self) -> bool:
        return self.how == "new" or (self.how == "inbox" and self.created)


def derive_title(text: str) -> str:
    """A note title from a statement: its leading phrase (up to the first `:`, ` - `, `;`,
    `.`, `(` or `,`) when that is 2-10 words, else its first 7 words; trailing small words
    ("as", "the", "de"...) are dropped."""
    plain = unwrap_links(text).strip()
    head = re.split(r":(?=\s|$)|\s[-–—]\s|;|\.\s|\.$|\(|,\s", plain, maxsplit=1)[0].strip()
    ws = head.split()
    if not 2 <= len(ws) <= MAX_TITLE_WORDS:
        ws = plain.split()[:7]
    stop = function_words(plain)
    while len(ws) > 2 and fold(ws[-1]).strip(".,;:") in stop:
        ws.pop()
    return clean_title(" ".join(ws))


_WORD = re.compile(r"[^\W_](?:[\w+#.-]*[\w+#])?")
_IGNORED = re.compile(r"`[^`]*`|\S+@\S+|\w+://\S+")


def _is_tech(w: str) -> bool:
    """A name written as only a name is: SQLite, PostgreSQL, macOS, NAS, BME280, IPv6."""
    letters = [c for c in w if c.isalpha()]
    if len(letters) < 1 or "." in w:
        return False
    if any(c.isdigit() for c in w):
        return len(letters) >= 1 and w[:1].isalpha()
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        return True
    return any(c.isupper() for c in w[1:]) and any(c.islower() for c in w)


def _is_cap(w: str, stop: frozenset[str] = STOPWORDS) -> bool:
    return len(w) >= 2 and w[:1].isupper() and w[1:].islower() and fold(w) not in stop


def topic_name(text: str) -> str | None:
    """The topic a statement names, as a note title, or None: its first name written as only
    a name is (`SQLite`, `NAS`, `BME280`), or its first run of two or more capitalised words
    (`Home Assistant`, `Raspberry Pi`, which may end in such a name). A sentence's first word
    starts a run only when a capitalised word follows it. Never the sentence itself."""
    plain = _IGNORED.sub(" ", unwrap_links(text))
    stop = function_words(plain)
    run: list[str] = []
    starter = False  # the run opens with a sentence's first word
    prev_end = 0
    for m in _WORD.finditer(plain):
        w = m.group(0)
        gap = plain[prev_end : m.start()]
        before = plain[: m.start()].rstrip()
        initial = not before or before[-1] in ".!?:;"
        prev_end = m.end()
        if run and gap.strip():  # punctuation between the words: the run is over
            if len(run) >= 2:
                break
            run = []
        if _is_tech(w) and (not run or (len(run) == 1 and starter)):
            return clean_title(w)  # "Restart NAS daily": the name, not the verb before it
        if _is_tech(w):
            run.append(w)
            break
        if _is_cap(w, stop) and not initial:
            starter = starter and bool(run)
            run.append(w)
            continue
        if _is_cap(w, stop) and initial:
            run, starter = [w], True  # kept only if a capitalised word follows
            continue
        if len(run) >= 2:
            break
        run = []
    if len(run) >= 2:
        return clean_title(" ".join(run[:4]))
    return None


def clean_title(title: str) -> str:
    """A note title as people read it (the H1): no character that breaks a link."""
    t = _BAD_TITLE.sub(" ", title)
    t = re.sub(r"\s+", " ", t).strip(" .-:")
    if len(t) > 80:
        t = t[:80].rsplit(" ", 1)[0]
    return (t[:1].upper() + t[1:]) if t else "Untitled"


def file_title(title: str) -> str:
    """The file name (without `.md`) for a title: `01:30` becomes `01.30`, any other colon
    a space (no system's file names may hold one)."""
    t = _TIME_COLON.sub(".", clean_title(title)).replace(":", " ")
    return re.sub(r"\s+", " ", t).strip(" .-") or "Untitled"


try:  # the C loader is ~10x faster, with the same safe semantics
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    _Loader = yaml.SafeLoader
_ALIAS_KEY = re.compile(r"^(?:aliases|alias)[ \t]*:", re.M)


def _aliases(fm_text: str) -> list[str]:
    # Parse only the aliases key (a flow list, a block list or a single value).
    m = _ALIAS_KEY.search(fm_text)
    if m is None:
        return []
    chunk = [fm_text[m.start() :].split("\n", 1)[0]]
    for line in fm_text[m.start() :].split("\n")[1:]:
        if line[:1] in (" ", "\t", "-") or not line.strip():
            chunk.append(line)
        else:
            break
    try:
        data = yaml.load("\n".join(chunk), Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        return []
    if not isinstance(data, dict):
        return []
    raw = data.get("aliases", data.get("alias"))
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        return []
    return [str(a).strip() for a in raw if isinstance(a, str | int | float) and str(a).strip()]


def _read_head_aliases(path: Path) -> list[str]:
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return []
    if not head.startswith(b"---") or b"alias" not in head:
        return []
    text = head.decode("utf-8", "replace").replace("\r\n", "\n")
    end = text.find("\n---", 3)
    return _aliases(text[4:end]) if end >= 0 else []


def read_aliases(
    root: Path,
    paths: Iterable[str],
    stats: Mapping[str, Any] | None = None,
    cache_file: Path | None = None,
) -> dict[str, list[str]]:
    """Frontmatter aliases of these notes (only the head of each file is read). With the
    walk's `stats` and a `cache_file` (outside the vault), notes whose size and times did not
    change are not read again."""
    cache: dict[str, Any] = {}
    if cache_file is not None and stats is not None:
        with contextlib.suppress(OSError, ValueError):
            loaded = json.loads(cache_file.read_text(encoding="utf-8"))
            if isinstance(loaded, dict):
                cache = loaded
    fresh: dict[str, Any] = {}
    out: dict[str, list[str]] = {}
    for rel in paths:
        st = stats.get(rel) if stats is not None else None
        sig = [st.mtime_ns, st.ctime_ns, st.size] if st is not None else None
        hit = cache.get(rel)
        if sig is not None and isinstance(hit, list) and len(hit) == 2 and hit[0] == sig:
            found = [str(a) for a in hit[1]]
        else:
            found = _read_head_aliases(root / rel)
        if sig is not None:
            fresh[rel] = [sig, found]
        if found:
            out[rel] = found
    if cache_file is not None and stats is not None and fresh != cache:
        with contextlib.suppress(OSError):
            text = json.dumps(fresh, separators=(",", ":"))
            write_text_atomic(cache_file, text, make_parents=True, sync_dir=False)
    return out


_AREA_CACHE: dict[str, str] = {}


def fast_area(rel: str) -> str:
    """`companion.vault.layout.area_of` for a vault-relative POSIX path, memoised."""
    hit = _AREA_CACHE.get(rel)
    if hit is None:
        hit = area_of(rel)
        if len(_AREA_CACHE) < 200_000:
            _AREA_CACHE[rel] = hit
    return hit


@dataclass
class NoteCatalog:
    """The vault's notes as the dream sees them: paths, titles, aliases, link resolution and
    (optionally) the full-text index for similarity."""

    root: Path
    paths: list[str]
    resolver: LinkResolver
    index: Any = None  # companion.vault.index.VaultIndex
    aliases: dict[str, list[str]] = field(default_factory=dict)
    created: set[str] = field(default_factory=set)
    # the note lessons without a topic wait in, in the vault's language (set by consolidate)
    inbox: str = "Inbox"
    inbox_names: tuple[str, ...] = ("Inbox",)  # its name in every language: never a topic

    def __post_init__(self) -> None:
        self._note_total: int | None = None
        self._df: dict[str, int] = {}
        self._sdf: dict[str, int] = {}  # stem -> notes holding it
        self._own: dict[str, int] = {}  # source stems to take out of _sdf (see discount)
        self._file_names: dict[str, int] = {}
        for rel in self.paths:
            k = path_key(rel.rsplit("/", 1)[-1])
            self._file_names[k] = self._file_names.get(k, 0) + 1
        self._names: dict[str, dict[str, set[str]]] = {}  # area -> key -> paths
        self._known = {path_key(p) for p in self.paths}
        for rel in self.paths:
            area = fast_area(rel)
            names = self._names.setdefault(area, {})
            title = rel.rsplit("/", 1)[-1][:-3]
            names.setdefault(title_key(title), set()).add(rel)
            for alias in self.aliases.get(rel, ()):
                names.setdefault(title_key(alias), set()).add(rel)
        self._max_words = max(
            (len(k.split()) for names in self._names.values() for k in names), default=1
        )
        self._loose: dict[str, dict[str, set[str]]] = {}  # area -> loose key -> paths

    @classmethod
    def build(
        cls,
        root: Path,
        paths: Iterable[str],
        resolver: LinkResolver,
        index: Any = None,
        *,
        stats: Mapping[str, Any] | None = None,
        cache_file: Path | None = None,
    ) -> NoteCatalog:
        paths = sorted(paths)
        topical = [p for p in paths if fast_area(p) in ("knowledge", "projects")]
        aliases = read_aliases(Path(root), topical, stats, cache_file)
        return cls(Path(root), paths, resolver, index, aliases)

    def exists(self, rel: str) -> bool:
        return path_key(rel) in self._known or rel in self.created

    def resolve(self, target: str, from_path: str = "") -> str | None:
        return self.resolver.resolve(target, from_path)

    # --- matching ---------------------------------------------------------------------------

    def name_in_text(self, text: str, area: str) -> tuple[str, str] | None:
        """(path, "title"|"alias") of the longest unambiguous note name found in `text`."""
        names = self._names.get(area)
        if not names:
            return None
        ws = word_list(unwrap_links(text))
        for n in range(min(self._max_words, len(ws)), 0, -1):
            for i in range(len(ws) - n + 1):
                key = " ".join(ws[i : i + n])
                hit = names.get(key)
                if not hit or len(hit) != 1:
                    continue
                if n == 1 and key in STOPWORDS:
                    continue
                if n == 1 and len(key) < 4 and not self._acronym_in(text, hit):
                    continue
                path = next(iter(hit))
                if self.is_inbox(path):
                    continue
                title = path.rsplit("/", 1)[-1][:-3]
                return path, "title" if title_key(title) == key else "alias"
        stop = function_words(text)
        inflected = self._name_inflected(ws, area, stop)
        if inflected is not None:
            return inflected
        if langdetect.detect(text) in COMPOUND_LANGUAGES:
            return self._name_in_compound(ws, names, stop)
        return None

    def _loose_names(self, area: str) -> dict[str, set[str]]:
        hit = self._loose.get(area)
        if hit is None:
            hit = {}
            for key, paths in self._names.get(area, {}).items():
                loose = " ".join(loose_word(w) for w in key.split())
                hit.setdefault(loose, set()).update(paths)
            self._loose[area] = hit
        return hit

    def _name_inflected(
        self, ws: list[str], area: str, stop: frozenset[str]
    ) -> tuple[str, str] | None:
        """(path, "title"|"alias") of the longest unambiguous note name found in the words `ws`
        with another inflection ending ("the Massenspektrometers" names `Massenspektrometer`,
        "mis copias" `Copia`, "Elektronischen Patientenakten" `Elektronische Patientenakte`).
        A one-word name counts only when at least 4 letters long and no function word."""
        loose = self._loose_names(area)
        lw = [loose_word(w) for w in ws]
        for n in range(min(self._max_words, len(lw)), 0, -1):
            for i in range(len(lw) - n + 1):
                key = " ".join(lw[i : i + n])
                hit = loose.get(key)
                if not hit or len(hit) != 1:
                    continue
                if n == 1 and (len(key) < 4 or key in stop or ws[i] in stop):
                    continue
                path = next(iter(hit))
                if self.is_inbox(path):
                    continue
                title = path.rsplit("/", 1)[-1][:-3]
                as_title = " ".join(loose_word(w) for w in title_key(title).split()) == key
                return path, "title" if as_title else "alias"
        return None

    def _name_in_compound(
        self, ws: list[str], names: Mapping[str, set[str]], stop: frozenset[str]
    ) -> tuple[str, str] | None:
        """(path, "title"|"alias") of the longest one-word note name a compound word of `ws`
        starts or ends with ("heizungspumpe": `Heizung`, "wahlschalter": `Schalter`); None
        when there is none, or when two notes' names are as long."""
        found: dict[str, tuple[int, str]] = {}  # path -> (name length, name)
        for w in set(ws):
            ends: dict[int, tuple[int, str, str]] = {}  # 0 start, 1 end -> longest name there
            for n in range(COMPOUND_NAME, len(w) - COMPOUND_REST + 1):
                for side, key in enumerate((w[:n], w[-n:])):
                    hit = names.get(key)
                    if not hit or len(hit) != 1 or key in stop:
                        continue
                    path = next(iter(hit))
                    if not self.is_inbox(path):
                        ends[side] = (n, key, path)
            if len({path for _n, _k, path in ends.values()}) > 1:
                return None  # "Gartenpumpe" with notes `Garten` and `Pumpe`: not said which
            for n, key, path in ends.values():
                if found.get(path, (0, ""))[0] < n:
                    found[path] = (n, key)
        if not found:
            return None
        best = max(n for n, _k in found.values())
        top = [(p, k) for p, (n, k) in found.items() if n == best]
        if len(top) != 1:
            return None  # two compounds, two notes' names as long: not said which
        path, key = top[0]
        title = path.rsplit("/", 1)[-1][:-3]
        return path, "title" if title_key(title) == key else "alias"

    def _acronym_in(self, text: str, paths: set[str]) -> bool:
        """A short name (under 4 letters) counts only written as the note writes it: in
        capitals ("NAS" names `NAS.md`), or capitalised mid-sentence ("the Pi" names a note
        aliased `Pi`). "nas", "use" or a sentence's first word name nothing."""
        for path in paths:
            for name in [path.rsplit("/", 1)[-1][:-3], *self.aliases.get(path, ())]:
                if len(name) < 2 or not name[:1].isupper():
                    continue
                for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text):
                    before = text[: m.start()].rstrip(" *_`>-")
                    if name.isupper() or (before and before[-1] not in ".!?:;"):
                        return True
        return False

    def discount(self, texts: Iterable[str]) -> None:
        """Words of texts the dream reads as sources (the window's journal days): the index
        holds them too, but a lesson's own words on its own journal day say nothing about
        which note is its topic, so they are taken out of the vault's word counts."""
        for t in texts:
            for s in {stem(w) for w in words(t)}:
                self._own[s] = self._own.get(s, 0) + 1

    def prefetch(self, texts: Iterable[str]) -> None:
        """Look up the document frequency of every word of `texts` in one go."""
        if self.index is None:
            return
        stems = sorted({stem(w) for t in texts for w in words(t)})
        if stems:
            with contextlib.suppress(Exception):
                self._stem_freq(stems)

    def file_name_count(self, name: str) -> int:
        """How many notes (existing or created) have this file name (case-insensitive)."""
        return self._file_names.get(path_key(name), 0)

    def _total(self) -> int:
        if self._note_total is None:
            self._note_total = int(self.index.note_count() or 1)
        return self._note_total

    def _search(
        self, terms: list[str], limit: int, *, every: bool = False, prefix: bool = True
    ) -> list[str]:
        """Paths of the notes best matching any (or `every`) of `terms`, each a prefix (a stem)
        unless `prefix` is off (FTS5 bm25, title weighted)."""
        joiner = " AND " if every else " OR "
        star = "*" if prefix else ""
        expr = joiner.join('"' + t.replace('"', '""') + '"' + star for t in terms)
        rows = self.index.db.execute(
            "SELECT n.path FROM fts JOIN notes n ON n.id = fts.rowid WHERE fts MATCH ? "
            "ORDER BY bm25(fts, 5.0, 1.0) LIMIT ?",
            (expr, limit),
        ).fetchall()
        return [r[0] for r in rows]

    def _stem_freq(self, stems: list[str]) -> dict[str, int]:
        """How many notes hold a word of each stem (`text.stem`; an upper bound: the sum over
        the vocabulary's forms, capped at the note count), cached."""
        missing = [s for s in stems if s not in self._sdf]
        if missing:
            db = self.index.db
            db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, fts, 'row')"
            )
            total = self._total()
            for s in missing:
                rows = db.execute(
                    "SELECT term, doc FROM temp.vocab WHERE term >= ? AND term < ?",
                    (s, s + "\U0010ffff"),
                ).fetchall()
                n = sum(doc for term, doc in rows if stem(term) == s)
                self._sdf[s] = min(n, total)
        return {s: self._sdf[s] for s in stems}

    def similar(self, text: str, area: str) -> tuple[str, float] | None:
        """The note of `area` most similar to `text`, if it reaches the threshold. Words are
        compared by stem (`networks` and `network`, `copias` and `copia`)."""
        if self.index is None:
            return None
        as_written = {stem(w): w for w in sorted(words(text) - function_words(text))}
        cand = sorted(as_written)
        if len(cand) < MIN_SHARED_WORDS:
            return None
        try:
            df = {s: max(0, n - self._own.get(s, 0)) for s, n in self._stem_freq(cand).items()}
            total = self._total()
            # Words the vault has never seen cannot point to any note: they are left out.
            known = [s for s in cand if df.get(s)]
            if len(known) < MIN_SHARED_WORDS:
                return None
            weights = {s: math.log((total + 1) / (df[s] + 0.5)) for s in known}
            # Search with the rarest stems: they are the ones that tell topics apart. Notes
            # holding the two rarest come first; the wider OR search only when they are few.
            # (the words as written first: an exact search is several times faster)
            rare = sorted(known, key=lambda s: -weights[s])[:8]
            exact = [as_written[s] for s in rare]
            hits = self._search(exact[:2], 10, every=True, prefix=False)
            if len(hits) < 3:
                hits += [h for h in self._search(exact, 10, prefix=False) if h not in hits]
            if len(hits) < 3:  # other forms of the words (networks, network)
                hits += [h for h in self._search(rare, 10) if h not in hits]
        except Exception:  # noqa: BLE001 - the index is a cache; matching goes on without it
            return None
        full = sum(weights.values()) or 1.0
        rare_enough = RARE_SHARE * math.log((total + 1) / 0.5)
        best: tuple[str, float] | None = None
        for path in hits:
            if fast_area(path) != area or self.is_inbox(path):
                continue
            try:
                note_text = (self.root / path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            ns = {stem(w) for w in words(note_text)} | {stem(w) for w in title_key(path).split()}
            shared = [s for s in known if s in ns]
            if len(shared) < MIN_SHARED_WORDS:
                continue
            if not any(weights[s] >= rare_enough for s in shared):
                continue  # common words alone (issue 40): not the topic
            score = sum(weights[s] for s in shared) / full
            if score >= SIMILARITY_THRESHOLD and (best is None or score > best[1]):
                best = (path, round(score, 3))
        return best

    def match_knowledge(
        self,
        text: str,
        explicit: str | None = None,
        *,
        may_create: bool = True,
        by_similarity: bool = True,
    ) -> TopicMatch:
        links = [ln for ln in extract_links(mask_code(text)) if not ln.markdown and ln.target]
        targets = ([explicit] if explicit else []) + [ln.target for ln in links]
        dangling: str | None = None
        for target in targets:
            dest = self.resolve(target)
            if dest is not None and area_of(dest) == "knowledge":
                return TopicMatch(dest, "link")
            if dest is None and dangling is None:
                dangling = target
        named = self.name_in_text(text, "knowledge")
        if named is not None:
            return TopicMatch(named[0], named[1])
        sim = self.similar(text, "knowledge") if by_similarity else None
        if sim is not None:
            return TopicMatch(sim[0], "similar", sim[1])
        if not may_create:
            return TopicMatch(None, "none", reason="no note on its topic (kept in memory only)")
        title = clean_title(dangling.rsplit("/", 1)[-1]) if dangling else topic_name(text)
        home = self.mentioned(title, "knowledge") if title and not dangling else None
        if home is not None:  # a note that already speaks of the topic is its home
            return TopicMatch(home, "mention")
        if title is not None and not self.is_inbox(f"knowledge/{file_title(title)}.md"):
            return TopicMatch(self.new_note_path(title), "new", title=title)
        # no topic to name a note by: the lesson waits in the inbox for the person to sort
        path = self.inbox_path()
        return TopicMatch(
            path, "inbox", title=path.rsplit("/", 1)[-1][:-3], created=not self.exists(path)
        )

    def mentioned(self, name: str, area: str) -> str | None:
        """The note of `area` that speaks most of `name` (a topic's name, as a phrase), by the
        full-text index; None without one, or when no note names it."""
        if self.index is None:
            return None
        try:
            hits = self._search([name], 10, prefix=False)
        except Exception:  # noqa: BLE001 - the index is a cache; matching goes on without it
            return None
        for path in hits:
            if fast_area(path) == area and not self.is_inbox(path):
                return path
        return None

    def is_inbox(self, rel: str) -> bool:
        """`rel` is the inbox note (under any language's name)."""
        if fast_area(rel) != "knowledge" or rel.count("/") != 1:
            return False
        return title_key(rel.rsplit("/", 1)[-1][:-3]) in {title_key(n) for n in self.inbox_names}

    def inbox_path(self) -> str:
        """The vault's inbox note: one that exists under any language's name, else
        `knowledge/<the name in the vault's language>.md`."""
        for name in (self.inbox, *self.inbox_names):
            for rel in self.paths:
                if (
                    rel.count("/") == 1
                    and self.is_inbox(rel)
                    and path_key(rel) == path_key(f"knowledge/{file_title(name)}.md")
                ):
                    return rel
        return f"knowledge/{file_title(self.inbox)}.md"

    def match_project(self, text: str, explicit: str | None = None) -> TopicMatch:
        links = [ln for ln in extract_links(mask_code(text)) if not ln.markdown and ln.target]
        targets = ([explicit] if explicit else []) + [ln.target for ln in links]
        for target in targets:
            dest = self.resolve(target)
            if dest is not None and area_of(dest) == "projects":
                return TopicMatch(dest, "link")
        named = self.name_in_text(text, "projects")
        if named is not None:
            return TopicMatch(named[0], named[1])
        if targets:
            return TopicMatch(None, "none", reason="its link does not lead to a note in projects/")
        return TopicMatch(None, "none", reason="no link to a project")

    def new_note_path(self, title: str) -> str:
        """`knowledge/<title>.md`, or the same with " 2", " 3"... when a note has the name."""
        base = file_title(title)
        rel = f"knowledge/{base}.md"
        n = 2
        while self.exists(rel) and rel not in self.created:
            rel = f"knowledge/{base} {n}.md"
            n += 1
        return rel

    def add_created(self, rel: str) -> None:
        if rel not in self.created:
            k = path_key(rel.rsplit("/", 1)[-1])
            self._file_names[k] = self._file_names.get(k, 0) + 1
        self.created.add(rel)
        title = rel.rsplit("/", 1)[-1][:-3]
        self._names.setdefault(area_of(rel), {}).setdefault(title_key(title), set()).add(rel)
        self._loose.pop(area_of(rel), None)
