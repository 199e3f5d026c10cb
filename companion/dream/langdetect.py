"""Which of the dream's languages a text is written in: a function-word scorer, no model.

The dream knows English, Spanish, French, German, Portuguese and Italian (`LANGUAGES`): it
reads their markers, journal sections and relative days, and writes in each (gettext
catalogues in `companion/locale/`). `detect(text)` decides among them from the words every
sentence of a language is full of and no other language uses the same way (articles,
prepositions, pronouns, auxiliaries), plus a few letters only some of them write (`ñ`, `ß`,
`ã`). A word two languages share counts for both, at half weight; what decides French against
Spanish is `le`/`les`/`des`/`du`/`est`/`et`/`je`/`pas`/`avec` against `el`/`los`/`del`/`y`/`es`/
`con`/`para`. `tests/test_dream_languages.py` holds 20+ sentences per language and checks
there is no confusion. No library was used: those that run offline either ship a model of
several megabytes or guess among a hundred languages, and the dream needs six, reliably.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

LANGUAGES: tuple[str, ...] = ("en", "es", "fr", "de", "pt", "it")

# Function words, lower case, accents as written. Keep them frequent and short: a journal
# line is a sentence or two.
WORDS: dict[str, str] = {
    "en": """
        the a an and of to is are was were be been being with that this these those it its for
        on at by from have has had not but or you we they i my our your their he she his her
        will would can could should must when which what who after before if than then there
        into about also always never do does did don't it's i'm we're isn't doesn't how
        """,
    "es": """
        el los las del y que por para con una es son está están estaba era fue pero más
        hacer tenemos no dos tres otra otro
        como cuando hay muy también siempre nunca se lo al su sus mi mis nos ya esta este
        estos estas hoy mañana sin sobre hasta desde porque ha han he hemos tengo tiene
        hace después ahora eso esto todo cada ese esa le les yo usted ni aquí donde qué la de en
        un
        """,
    "fr": """
        le la les des du de et est sont une un pour avec dans sur pas ne qui que il elle nous
        vous je j c d l n qu s au aux ce cet cette ces mais plus très aussi toujours jamais
        quand ou où y être avoir a à été fait peut doit faut sans chez après avant leur son
        sa ses mon ma mes notre votre on tout tous rien ça était sera demain aujourd hier
        deux trois moins bien encore comme fois toute toutes lui dont leurs ceux
        """,
    "de": """
        der die das und ist sind nicht mit für auf ein eine einen einem einer dem den des zu
        im ich wir sie du auch immer nie wenn aber oder nach vor bei von vom zum zur wird
        werden kann muss hat haben war noch schon nur dass man sich wie was wo es mir mich
        uns unser mein meine heute morgen gestern sehr dann kein keine ohne über zwei drei
        """,
    "pt": """
        o os as do da dos das e é não com para por uma um em no na nos nas ao aos que se
        mais muito também sempre nunca quando como mas são está estão foi tem têm já ainda
        depois antes isso isto ele ela eu você meu minha pelo pela sua seu hoje amanhã ontem
        vou vai fazer precisa porque sem então aqui onde até a à às ao num numa nosso nossa
        eles elas ser ter faz há mesmo duas três outra outro
        """,
    "it": """
        il lo la gli le i di del della dei delle degli e è non con per una un in nel nella
        nei sul sulla che si ma più anche sempre mai quando come sono ha hanno questo questa
        quello mio mia io noi lui lei ci ne al alla dal dalla dopo prima ancora già solo ogni
        tutto molto perché oggi domani ieri va fatto bisogna sto stato deve senza meno così
        poi cosa tra fra ho hai abbiamo siamo essere uno quella quelli questi nostro loro
        due tre altro altra
        """,
}

# Letters (or letter pairs) only some of the languages write, and the weight they add.
LETTERS: dict[str, tuple[tuple[str, float], ...]] = {
    "es": (("ñ", 2.0), ("¿", 3.0), ("¡", 3.0), ("ió", 1.0), ("ción", 1.0)),
    "fr": (
        ("ç", 0.5),
        ("è", 0.5),
        ("ê", 0.5),
        ("œ", 2.0),
        ("î", 1.0),
        ("û", 1.0),
        ("â", 0.5),
        ("eau", 0.5),
        ("aujourd'hui", 3.0),
    ),
    "de": (("ß", 2.0), ("ä", 1.0), ("ö", 1.0), ("ü", 1.0), ("sch", 0.5)),
    "pt": (("ã", 2.0), ("õ", 2.0), ("ç", 0.5), ("lh", 0.5), ("nh", 0.5), ("ções", 2.0)),
    "it": (("zz", 0.5), ("gli", 0.5), ("ò", 1.0), ("ù", 1.0), ("ì", 1.0), ("zione", 1.0)),
}

# Endings of content words (four letters or more) typical of each language, each adding
# `ENDING_WEIGHT` (split between the languages that share it).
ENDINGS: dict[str, str] = {
    "en": "ing ed ly ness ght tion ful less ous",
    "es": "ción ciones dad dades aba aban ían ado ados ada adas ido idos ida idas os amos emos",
    "fr": "eau eaux aux oir eur euse ée ées ais ait aient ment tion ique ons ez ère",
    "de": "ung ungen lich keit heit chen isch en er ig tz ck",
    "pt": "ção ções ão ões inha inho ado ados ada adas ido idos os amos emos eiro eira",
    "it": "zione zioni ato ati ata ate ito iti uto are ere ire ino ina etto ggio cchi gli ano",
}
ENDING_WEIGHT = 0.4

_TABLE: dict[str, set[str]] = {}
for _lang, _words in WORDS.items():
    for _w in _words.split():
        _TABLE.setdefault(_w, set()).add(_lang)
_ENDS: dict[str, set[str]] = {}
for _lang, _ends in ENDINGS.items():
    for _e in _ends.split():
        _ENDS.setdefault(_e, set()).add(_lang)
_MAX_END = max(len(e) for e in _ENDS)
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_APOS = re.compile(r"[’‘`]")


def scores(text: str) -> dict[str, float]:
    """Each language's score for `text` (higher is likelier)."""
    low = _APOS.sub("'", text.casefold())
    out = dict.fromkeys(LANGUAGES, 0.0)
    for token in _WORD.findall(low):
        for w in (token, *token.split("'")) if "'" in token else (token,):
            langs = _TABLE.get(w)
            if langs:
                for lang in langs:
                    out[lang] += 1.0 / len(langs)
            elif len(w) >= 4:
                for n in range(min(_MAX_END, len(w) - 2), 0, -1):
                    langs = _ENDS.get(w[-n:])
                    if langs:
                        for lang in langs:
                            out[lang] += ENDING_WEIGHT / len(langs)
                        break
    for lang, marks in LETTERS.items():
        for mark, weight in marks:
            n = low.count(mark)
            if n:
                out[lang] += weight * n
    return out


def detect(texts: str | Iterable[str], default: str | None = None) -> str | None:
    """The language of `texts` (one text, or several read as one), or `default` when there is
    nothing to go by (no function word of any language)."""
    total = dict.fromkeys(LANGUAGES, 0.0)
    for text in [texts] if isinstance(texts, str) else texts:
        for lang, s in scores(text).items():
            total[lang] += s
    best = max(LANGUAGES, key=lambda lang: total[lang])
    if total[best] <= 0:
        return default
    return best
