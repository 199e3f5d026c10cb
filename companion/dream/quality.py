"""Gates every candidate passes: is it a whole statement, and may it go to the injected memory?

`junk_reason` keeps half-sentences, fragments and markup out of notes (users of other
"dreaming" features report junk promoted into memory as their first complaint):
- fewer than 3 words or 12 characters, or more than 400 characters;
- ends mid-sentence: `...`, `…`, `,`, `:`, `;`, `-`, `(`, or a dangling word such as "and",
  "because", "the", "y", "porque", "que", "de";
- a question;
- unbalanced backticks, brackets or parentheses (a cut-off fragment);
- no letters, or nothing but a link or URL;
- text the dream's own markup could not hold (`<!--`, `-->`, a line break).

`transient_reason` keeps what is true only today out of notes and memory: a reminder or a
state anchored to a relative day ("Mañana a las 18:00 tengo dentista", "Hoy trabajo desde
casa", "Tonight I work from the café", "Demain à 9 h, le plombier": `RELATIVE_DAYS`, one table
per language) and filler about the day ("Hoy ha sido un día largo").
A reminder belongs in the journal, where it already is, or nowhere. So does a remark scoped to
the session or to work in progress ("for this session only, test with ...", "while we debug X,
use bucket Y": `companion.dream.durability`, one table per language).

`personal_fact` tells the person's own statements about themselves ("recuerda: prefiero que me
llames Lu", "remember: I prefer metric units"): they belong in USER.md, never in a note.

`promotion_problem` decides what may enter MEMORY.md / USER.md, which the agent loads into every
session: never code or commands (backticks, shell prompts, a leading command word, code
punctuation), never paths to secrets (`~/.ssh`, `id_rsa`, `.env`, `*.pem`, ...), never a secret
(the secret gate runs before this), and never text the memory store's injection guard refuses.
"""

from __future__ import annotations

import re

from companion.dream.durability import transient_phrase
from companion.dream.text import collapse, unwrap_links, word_list

MIN_WORDS = 3
MIN_CHARS = 12
MAX_CHARS = 400
_DANGLING = frozenset(
    [
        "and",
        "or",
        "but",
        "because",
        "so",
        "that",
        "the",
        "a",
        "an",
        "to",
        "of",
        "with",
        "for",
        "from",
        "in",
        "on",
        "at",
        "as",
        "if",
        "when",
        "which",
        "than",
        "then",
        "y",
        "o",
        "u",
        "pero",
        "porque",
        "que",
        "de",
        "del",
        "con",
        "para",
        "por",
        "en",
        "el",
        "la",
        "los",
        "las",
        "un",
        "una",
        "al",
        "si",
        "como",
        "cuando",
        "más",
    ]
)
_BAD_END = ("...", "…", ",", ":", ";", "-", "(", "/", "—", "–")
_URL_ONLY = re.compile(r"^(?:<?https?://\S+>?|!?\[\[[^\]]*\]\])$")
_LETTER = re.compile(r"[^\W\d_]")


def junk_reason(text: str) -> str | None:
    """Why `text` is not a whole statement worth writing, or None."""
    if "\n" in text or "\r" in text:
        return "spans several lines"
    if "<!--" in text or "-->" in text:
        return "holds comment markup the dream uses itself"
    t = collapse(text)
    if len(t) > MAX_CHARS:
        return f"longer than {MAX_CHARS} characters"
    if _URL_ONLY.match(t):
        return "only a link"
    if not _LETTER.search(t):
        return "no words"
    plain = unwrap_links(t)
    if len(plain) < MIN_CHARS or len(word_list(plain)) < MIN_WORDS:
        return "too short to stand on its own"
    if t.endswith("?") or t.endswith("¿"):
        return "a question, not a statement"
    if t.endswith(_BAD_END):
        return "cut off mid-sentence"
    last = word_list(plain)[-1] if word_list(plain) else ""
    if last in _DANGLING and not plain.rstrip().endswith((".", "!", ")")):
        return "cut off mid-sentence"
    if t.count("`") % 2:
        return "unbalanced backticks (a cut-off fragment)"
    for o, c in ("()", "[]", "{}"):
        if t.count(o) != t.count(c):
            return "unbalanced brackets (a cut-off fragment)"
    return None


_COMMAND_WORDS = frozenset(
    [
        "sudo",
        "apt",
        "apt-get",
        "yum",
        "dnf",
        "brew",
        "pip",
        "pip3",
        "pipx",
        "npm",
        "npx",
        "yarn",
        "pnpm",
        "git",
        "curl",
        "wget",
        "ssh",
        "scp",
        "rsync",
        "docker",
        "kubectl",
        "systemctl",
        "journalctl",
        "cd",
        "ls",
        "rm",
        "mv",
        "cp",
        "chmod",
        "chown",
        "cat",
        "grep",
        "sed",
        "awk",
        "find",
        "make",
        "python",
        "python3",
        "node",
        "cargo",
        "go",
        "export",
        "source",
        "tar",
        "unzip",
        "ln",
        "mkdir",
        "touch",
        "echo",
        "psql",
        "mysql",
        "sqlite3",
        "redis-cli",
        "crontab",
    ]
)
_CODE = re.compile(r"`|\$\(|\$\{|&&|\|\||=>|->|::|==|!=|\(\)|;\s*$|^\s*[$#>]\s|\{|\}|</?\w+>")
_SECRET_PATH = re.compile(
    r"(?i)(?:~|\$HOME|/home/\w+|/root|/Users/\w+)?/?\.ssh\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b"
    r"|\.(?:pem|p12|pfx|key|keystore|jks|gpg|asc)\b|(?:^|[\s/])\.env(?:\.\w+)?\b"
    r"|\.netrc\b|\.pgpass\b|\.aws/credentials|credentials\.json|secrets?\.(?:ya?ml|json|toml)"
    r"|/etc/shadow\b|\bkeychain\b|\bkeyring\b|\.kube/config"
)


def promotion_problem(text: str) -> str | None:
    """Why `text` may not enter the injected memory, or None."""
    first = (text.strip().split() or [""])[0].lower()
    if first in _COMMAND_WORDS:
        return "a command"
    if _CODE.search(text):
        return "code"
    if _SECRET_PATH.search(text):
        return "a path to secrets"
    from companion.memory import guard  # noqa: PLC0415 - the store's own injection guard

    finding = guard.check(text)
    if finding is not None:
        return f"refused by the memory guard ({finding.rule})"
    return None


# Relative days and moments, one table per language the dream knows (every table is read:
# a vault in one language quotes sessions held in others). What they anchor is true on the
# day it was written, not after. Bare words that mean something else in another language are
# left out (French `hier` is German "here"; Italian `ora` is also "hour").
RELATIVE_DAYS: dict[str, tuple[str, ...]] = {
    "en": (
        r"today|tomorrow|yesterday|tonight|this (?:morning|afternoon|evening|week|weekend)",
        r"next (?:week|monday|tuesday|wednesday|thursday|friday|saturday|sunday)",
        r"right now",
    ),
    "es": (
        r"hoy|mañana|manana|ayer|anoche|anteayer|pasado mañana",
        r"esta (?:mañana|tarde|noche|semana)",
        r"este (?:lunes|martes|miércoles|jueves|viernes|sábado|domingo|finde|fin de semana)",
        r"la semana que viene",
        r"el (?:lunes|martes|miércoles|jueves|viernes|sábado|domingo) que viene",
        r"ahora mismo",
    ),
    "fr": (
        r"aujourd['’]hui|demain|après-demain|avant-hier|hier (?:soir|matin|midi|après-midi)",
        r"ce (?:soir|matin|week-end|weekend)|cet après-midi|cette (?:semaine|nuit)",
        r"la semaine prochaine|(?:lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche) prochain",
        r"tout à l['’]heure|en ce moment",
    ),
    "de": (
        r"heute|morgen|gestern|übermorgen|vorgestern|heute (?:abend|früh|nacht)",
        r"diese woche|dieses wochenende|nächste woche",
        r"(?:nächsten|kommenden) (?:montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag)",
        r"gerade eben|im moment",
    ),
    "pt": (
        r"hoje|amanhã|amanha|ontem|anteontem|depois de amanhã",
        r"esta (?:manhã|tarde|noite|semana)|hoje à noite",
        r"(?:a )?semana que vem|(?:a )?próxima semana",
        r"agora mesmo",
    ),
    "it": (
        r"oggi|domani|ieri|dopodomani|l['’]altro ieri|stasera|stamattina|stanotte",
        r"questa (?:mattina|sera|settimana)|questo (?:pomeriggio|weekend|fine settimana)",
        r"la settimana prossima|(?:lunedì|martedì|mercoledì|giovedì|venerdì|sabato|domenica) "
        r"prossimo",
        r"in questo momento",
    ),
}
_RELATIVE = re.compile(
    r"(?<!\w)(?:" + "|".join(p for table in RELATIVE_DAYS.values() for p in table) + r")(?!\w)",
    re.I,
)
# "Today I learned that ...": the day is the occasion, what follows is the lesson.
LEARNED_PREFACES: dict[str, str] = {
    "en": r"today i (?:learned|found out|realised|realized|noticed)",
    "es": r"hoy (?:he aprendido|aprendí|descubrí|me di cuenta de)",
    "fr": r"aujourd['’]hui,? j['’]ai (?:appris|découvert|compris|remarqué)",
    "de": r"heute habe ich (?:gelernt|herausgefunden|gemerkt)",
    "pt": r"hoje (?:aprendi|descobri|percebi)",
    "it": r"oggi ho (?:imparato|scoperto|capito)",
}
_LEARNED_PREFACE = re.compile(
    r"^\s*(?:" + "|".join(LEARNED_PREFACES.values()) + r")(?!\w)",
    re.I,
)
# Words that only say how the day felt: a statement made of nothing else is filler.
_FILLER = frozenset(
    [
        "dia",
        "dias",
        "largo",
        "larga",
        "corto",
        "duro",
        "dura",
        "cansado",
        "cansada",
        "cansador",
        "agotador",
        "agotado",
        "bien",
        "mal",
        "genial",
        "fatal",
        "tranquilo",
        "tranquila",
        "normal",
        "raro",
        "productivo",
        "productiva",
        "sido",
        "estado",
        "fue",
        "sido",
        "vaya",
        "menudo",
        "ufff",
        "uf",
        "day",
        "days",
        "long",
        "short",
        "hard",
        "tiring",
        "tired",
        "good",
        "bad",
        "great",
        "fine",
        "busy",
        "quiet",
        "nice",
        "awful",
        "productive",
        "been",
        "was",
        "felt",
        "feel",
        "feeling",
        "really",
        "very",
        "quite",
        "pretty",
        "so",
        "much",
    ]
)


def transient_reason(text: str) -> str | None:
    """Why `text` is true only for a day (a reminder, a state of today, filler) or only while
    something lasts (a session, work in progress: `companion.dream.durability`), or None."""
    return scoped_reason(text) or day_bound_reason(text)


def scoped_reason(text: str) -> str | None:
    """Why `text` is true only while a session or some work in progress lasts, or None (the
    durability gate, `companion.dream.gates`)."""
    scope = transient_phrase(unwrap_links(text))
    if scope is not None:
        return f"scoped to the session or to work in progress ({scope!r}), not lasting knowledge"
    return None


def day_bound_reason(text: str) -> str | None:
    """Why `text` is true only for a day (a reminder, a state of that day) or says nothing
    lasting (filler), or None (the transient gate, `companion.dream.gates`)."""
    plain = unwrap_links(text)
    if _RELATIVE.search(plain) and not _LEARNED_PREFACE.match(plain):
        return "tied to a relative day (a reminder or a state of that day, not lasting knowledge)"
    from companion.vault.query import STOPWORDS  # noqa: PLC0415

    ws = [w for w in word_list(plain) if len(w) >= 3 and w not in STOPWORDS]
    if ws and all(w in _FILLER for w in ws):
        return "filler: says how the day went, nothing lasting"
    return None


_PERSONAL = re.compile(
    r"^\s*(?:prefiero|me gusta|no me gusta|me encanta|odio|llámame|llamame|me llamo|mi nombre es"
    r"|vivo en|trabajo en|trabajo como|soy|tengo \d+ años|mi (?:pronombre|idioma|zona horaria)"
    r"|i prefer|i like|i don't like|i do not like|i love|i hate|call me|my name is|i live in"
    r"|i work at|i work as|i am|i'm|my (?:pronouns|language|time ?zone))\b",
    re.I,
)


def personal_fact(text: str) -> bool:
    """True when `text` is the person speaking about themselves (a preference, their name,
    where they live): USER.md material."""
    return bool(_PERSONAL.match(unwrap_links(text)))
