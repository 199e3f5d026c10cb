"""Durability: is a remark scoped to the session, or to work in progress, rather than lasting?

"For this session only, test with the staging bucket", "while we debug the uploader, use
bucket Y", "for now the relay runs on 8443": true while something lasts, then wrong. Such a
remark never becomes a note or a memory entry (issue 40). The gate is one table of phrases per
language, and one pure function, `is_transient(text, lang)`, which the dream applies where its
candidates are made (the durability gate of `companion.dream.gates`, through
`companion.dream.quality.scoped_reason`, run by the distillers' common screen), so the journal,
the transcripts and the model's proposals pass the same gate.

`lang` picks one table; `None` (the default) tries every table: a vault written in one
language quotes sessions held in others. Each phrase is matched on the folded text (lower
case, accents removed, `’` as `'`), on word boundaries. Phrases are the remark's scope, not
its topic: "this time" counts, "this time of night" does not; "session" alone never does.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Written folded: lower case, no accents. A phrase may hold a regular expression.
TABLES: dict[str, tuple[str, ...]] = {
    "en": (
        r"for (?:this|the current|the) session(?: only)?",
        r"(?:only|just) (?:for|in) this (?:session|conversation|chat)",
        r"in this (?:session|conversation|chat) only",
        r"for (?:now|the time being|the moment)",
        r"(?:while|whilst|until) (?:we|i|you) (?:are )?(?:debug|test|fix|investigat|troubleshoot"
        r"|migrat|sort out|figur)\w*",
        r"(?:we are|we're|i am|i'm) still (?:debugg|test|fix|investigat|troubleshoot|migrat)\w*",
        r"until (?:tomorrow|tonight|later|further notice|the fix|it is fixed|it's fixed"
        r"|this is fixed|next week|monday|we)\b",
        r"(?:just |only )?this (?:one )?time(?! of)(?! zone)",
        r"(?:just |only )?for today",
        r"temporar(?:y|ily)",
        r"as a (?:stopgap|workaround for now)",
        r"in the meantime",
    ),
    "es": (
        r"(?:solo|solamente|unicamente) (?:para|en|durante) (?:esta|la) (?:sesion|conversacion"
        r"|charla)",
        r"(?:para|en|durante) esta (?:sesion|conversacion)(?: nada mas| solamente| solo)?",
        r"por ahora",
        r"de momento",
        r"por el momento",
        r"mientras (?:tanto|depur\w*|prob\w*|arregl\w*|investig\w*|migr\w*)",
        r"hasta (?:manana|esta noche|luego|nuevo aviso|que (?:lo )?arregl\w*|que funcione"
        r"|la semana que viene)",
        r"(?:solo )?esta vez",
        r"(?:solo )?por hoy",
        r"temporal(?:mente)?",
        r"provisional(?:mente)?",
        r"(?:todavia|aun) (?:estamos|estoy) (?:depurando|probando|arreglando|investigando)",
    ),
    "fr": (
        r"(?:seulement |uniquement )?pour (?:cette|la) session(?: seulement| uniquement)?",
        r"pour (?:l'instant|le moment)",
        r"en attendant",
        r"pendant qu'(?:on|il|elle|ils)\s?\w*\s?(?:debogu|test|repar|corrig)\w*",
        r"pendant que (?:nous|je|tu|vous) (?:debogu|test|repar|corrig)\w*",
        r"jusqu'a (?:demain|ce soir|nouvel ordre|la correction)",
        r"(?:juste )?cette fois(?:-ci)?",
        r"(?:juste )?pour aujourd'hui",
        r"temporaire(?:ment)?",
        r"provisoire(?:ment)?",
    ),
    "de": (
        r"(?:nur )?fur diese (?:sitzung|session|unterhaltung)",
        r"vorerst",
        r"vorlaufig",
        r"fur den moment",
        r"furs erste",
        r"(?:solange|wahrend) wir (?:\w+ )*?(?:debuggen|testen|reparieren|untersuchen)",
        r"bis morgen",
        r"bis auf weiteres",
        r"(?:nur )?dieses (?:eine )?mal",
        r"(?:nur )?fur heute",
        r"voruebergehend|vorubergehend",
        r"temporar",
    ),
    "pt": (
        r"(?:so|somente|apenas) (?:para|nesta|durante) (?:esta|a) sessao",
        r"(?:para|nesta|durante) esta sessao",
        r"por (?:enquanto|agora|ora)",
        r"de momento",
        r"enquanto (?:depur|test|corrig|investig)\w*",
        r"ate amanha",
        r"ate (?:novo aviso|corrigirmos)",
        r"(?:so )?desta vez",
        r"(?:so )?por hoje",
        r"temporari(?:o|a|amente)",
        r"provisori(?:o|a|amente)",
    ),
    "it": (
        r"(?:solo|soltanto) (?:per|in|durante) (?:questa|la) sessione",
        r"per questa sessione",
        r"per ora",
        r"per il momento",
        r"(?:mentre|finche) (?:facciamo il debug|debugg\w*|test\w*|corregg\w*|indag\w*)",
        r"fino a domani",
        r"fino a nuovo ordine",
        r"(?:solo )?questa volta",
        r"(?:solo )?per oggi",
        r"temporane(?:o|a|amente)",
        r"provvisori(?:o|a|amente)",
    ),
}
LANGUAGES = tuple(TABLES)


def fold(text: str) -> str:
    """Lower case, accents removed, typographic apostrophes as `'`, runs of spaces as one."""
    t = unicodedata.normalize("NFKD", text.replace("’", "'").replace("‘", "'"))
    t = "".join(ch for ch in t if not unicodedata.combining(ch)).casefold()
    return re.sub(r"\s+", " ", t)


@lru_cache(maxsize=16)
def _pattern(lang: str | None) -> re.Pattern[str]:
    phrases = [p for code, table in TABLES.items() if lang in (None, code) for p in table]
    return re.compile(r"(?<![\w'])(?:" + "|".join(phrases) + r")(?![\w'])")


def transient_phrase(text: str, lang: str | None = None) -> str | None:
    """The session-scoped or in-progress phrase of `text` (folded), or None."""
    if lang is not None and lang not in TABLES:
        lang = None
    m = _pattern(lang).search(fold(text))
    return m.group(0) if m else None


def is_transient(text: str, lang: str | None = None) -> bool:
    """True when `text` is scoped to the session or to work in progress ("for this session
    only", "for now", "while we debug", "until tomorrow", "this time", "temporarily"...), in
    `lang`'s table, or in any language's when `lang` is None or has no table."""
    return transient_phrase(text, lang) is not None
