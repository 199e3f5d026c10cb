"""What a statement says, beyond its words: the tokens that carry its meaning.

Word overlap cannot tell "Publish on 127.0.0.1" from "Publish on 0.0.0.0", "with emojis" from
"without emojis", or "usually at 03:00" from "at 03:00": the words that differ are digits,
stopwords or one small adverb. Three jobs need to see them, and this module is their one home:

- **grounding** (`grounding_problem`): a model's restatement keeps every value (number, time,
  date, IP address, version, path, identifier) of its proposal exactly as its quote has it, and
  the same negations, hedges and bounds ("under 40", "no pasa de 40") as the quote, both ways
  (a dropped "not" or "usually" changes what the source says), and no comparative the quote
  does not say ("slower" for "faster"). A time of day said as a word ("midnight",
  "Mitternacht") and a setting's hyphenated name or value ("maxmemory-policy",
  "volatile-lru") are values too. The `llm` distiller and `--verify` apply it;
- **sameness** (`same_statement`): a candidate is the same statement as a line when their
  word stems match (one contained in the other, or a close paraphrase), with the same values,
  negations and hedges; a line that only differs in a number is another statement;
- **paraphrase** (`paraphrase`): one lesson said in other words -- the same values (at least
  one), negations, hedges and comparatives, a looser stem overlap -- joins the dream's line
  saying it; comparatives of one direction are one ("faster", "sooner", "plus tôt",
  "früher": `_DEGREE`), and a name one wording holds and the other lacks, while the other holds
  one of its own, keeps two wordings apart ("Marta" / "Inés");
- **contradiction** (`contradicts`): the same subject (the words other than values match, or
  one line's are all in the other's) with another value, or with the opposite polarity: the
  newer line makes the older one stale; `same_subject`, looser, recognises a person's line on
  the subject that says more words around it (a disagreement to flag, never a removal).

Stems are crude on purpose (`text.stem`: folded, a plural s off, the first five letters): the
dream works offline, in six languages (en, es, fr, de, pt, it), without a language model, and
every decision built on them also checks the values and negations exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from companion.dream.text import fold, jaccard, norm_key, stem, words

_STRIP = ".,;:!?()[]{}\"'«»¿¡*"
_INNER_CAP = re.compile(r"[a-z][A-Z]")
_DOTTED = re.compile(r"\w\.\w")
_VALUE_CHARS = re.compile(r"[\d/\\_@=$~]")
_WORD = re.compile(r"[\w']+")
_CODE_SPAN = re.compile(r"`([^`]+)`")
# A lowercase name of parts joined by hyphens, "maxmemory-policy", "volatile-lru",
# "client-max-body-size": a setting or one of its values, said without backticks. Parts of at
# least three ASCII letters, so "au-dessus", "follow-up", "peut-être" stay words.
_HYPHEN_NAME = re.compile(r"[a-z]{3,}(?:-[a-z]{3,})+")
# A time of day said as a word: a time like "00:00" (folded).
_NAMED_TIMES = frozenset(
    ["midnight", "noon", "midday", "medianoche", "mediodia", "minuit", "midi", "mitternacht"]
    + ["mittag", "meianoite", "meiodia", "mezzanotte", "mezzogiorno"]
)

NEGATIONS = frozenset(
    [
        # English ("n't" forms are folded to "not")
        "no",
        "not",
        "never",
        "without",
        "none",
        "nothing",
        "nobody",
        "nor",
        "neither",
        "cannot",
        # Spanish
        "nunca",
        "jamas",
        "sin",
        "ni",
        "nada",
        "nadie",
        "ninguno",
        "ninguna",
        "ningun",
        "tampoco",
        # French ("n'" is folded to "ne")
        "ne",
        "pas",
        "jamais",
        "sans",
        "aucun",
        "aucune",
        "rien",
        # German
        "nicht",
        "kein",
        "keine",
        "keinen",
        "keinem",
        "keiner",
        "keines",
        "nie",
        "niemals",
        "ohne",
        "nichts",
        "niemand",
        "weder",
        "ausser",  # "außer P" alone is "unless P" (or "except": a negation as well)
        # Portuguese
        "nao",
        "sem",
        "nem",
        "ninguem",
        "nenhum",
        "nenhuma",
        # Italian
        "non",
        "mai",
        "senza",
        "nessuno",
        "nessuna",
        "niente",
        "nulla",
        # "unless" in each language, joined below: a negated condition ("X unless P" is
        # "if not P, X")
        "unless",
        "salvoque",
        "amenosque",
        "anoserque",
        "saufsi",
        "amoinsque",
        "essei",
        "ausserwenn",
        "anaoserque",
        "salvose",
        "trannese",
        "amenoche",
    ]
)
# Several words of a language say one negation ("ne ... pas", "no" and "not", "unless" and
# "if ... not"): two wordings are compared by the kinds of negation they hold (`polarity`).
_NEG_KIND = {
    **dict.fromkeys(["never", "nunca", "jamas", "jamais", "nie", "niemals", "mai"], "never"),
    **dict.fromkeys(["without", "sin", "sans", "ohne", "sem", "senza"], "without"),
    **dict.fromkeys(
        ["none", "nothing", "nobody", "nada", "nadie", "ninguno", "ninguna", "ningun"], "none"
    ),
    **dict.fromkeys(["aucun", "aucune", "rien", "nichts", "niemand", "ninguem"], "none"),
    **dict.fromkeys(["nenhum", "nenhuma", "nessuno", "nessuna", "niente", "nulla"], "none"),
    **dict.fromkeys(["nor", "neither", "ni", "tampoco", "weder", "nem"], "nor"),
}
HEDGES = frozenset(
    [
        "may",
        "might",
        "could",
        "possibly",
        "probably",
        "perhaps",
        "maybe",
        "likely",
        "unlikely",
        "usually",
        "often",
        "sometimes",
        "occasionally",
        "rarely",
        "seldom",
        "seems",
        "seem",
        "seemed",
        "apparently",
        "approximately",
        "roughly",
        "almost",
        "nearly",
        "generally",
        "typically",
        "quiza",
        "quizas",
        "talvez",  # "tal vez", joined below
        "aveces",  # "a veces", joined below
        "puede",
        "pueden",
        "podria",
        "podrian",
        "probablemente",
        "posiblemente",
        "seguramente",
        "normalmente",
        "generalmente",
        "suele",
        "suelen",
        "solia",
        "parece",
        "parecen",
        "aproximadamente",
        "casi",
        "raramente",
        "ocasionalmente",
        # French
        "peutetre",  # "peut-être", joined below
        "souvent",
        "parfois",
        "generalement",
        "habituellement",
        "probablement",
        "environ",
        "presque",
        "semble",
        # German
        "vielleicht",
        "wahrscheinlich",
        "oft",
        "manchmal",
        "meist",
        "meistens",
        "normalerweise",
        "gewohnlich",
        "ungefahr",
        "etwa",
        "fast",
        "moglicherweise",
        "eventuell",
        "scheint",
        # Portuguese
        "talvez",
        "provavelmente",
        "geralmente",
        "frequentemente",
        "quase",
        "costuma",
        "costumam",
        "pode",
        "podem",
        # Italian
        "forse",
        "probabilmente",
        "spesso",
        "talvolta",
        "avolte",  # "a volte", joined below
        "disolito",  # "di solito", joined below
        "quasi",
        "circa",
        "sembra",
        "puo",
        "possono",
    ]
)
_JOINED = (
    ("tal vez", "talvez"),
    ("a veces", "aveces"),
    ("a menudo", "amenudo"),
    ("peut etre", "peutetre"),
    ("as vezes", "asvezes"),
    ("a volte", "avolte"),
    ("di solito", "disolito"),
    ("salvo que", "salvoque"),
    ("a menos que", "amenosque"),
    ("a no ser que", "anoserque"),
    ("sauf si", "saufsi"),
    ("a moins que", "amoinsque"),
    ("a moins qu", "amoinsque"),
    ("es sei denn", "essei"),
    ("ausser wenn", "ausserwenn"),
    ("a nao ser que", "anaoserque"),
    ("salvo se", "salvose"),
    ("tranne se", "trannese"),
    ("a meno che", "amenoche"),
)
HEDGES_ALL = HEDGES | {"amenudo", "asvezes"}


# Function words of the six languages (folded) that `companion.vault.query.STOPWORDS` (English
# and Spanish) lacks: articles, pronouns, prepositions, conjunctions, auxiliaries (not those that
# are a word elsewhere: `die`, `war`, `son`, `sea`, `nas` for NAS), and the conjunctions of
# time that English "while" and "when" are among the stopwords for. They say nothing of a
# lesson, and left among its stems they make two wordings of it look apart.
_FUNCTION_TEXT = """
    mientras durante pendant tant lorsque solange wahrend enquanto quando mentre finche
    sean fuera sera han hemos
    les des est sont une pour avec dans sur qui que elle ils elles nous vous aux cet cette ces
    mais donc car leur leurs ses mon mes notre votre nos vos ont etre avoir ete par lui
    dont quand comme tout tous
    der das den dem des ein eine einen einem einer eines und oder aber ist sind waren
    wird werden wurde wurden haben hatte mit auf aus bei von vom zum zur beim ins
    als wie wenn dass sich sie wir ihr ich dann auch sein seine ihre ihren ihrem ihrer
    dieser diese dieses diesen wer wen wem wessen welche welcher welches welchen
    uma uns umas dos das nos aos pelo pela pelos pelas com mas seu sua seus suas ele ela
    eles elas foi estar esta estao sao isso isto esse essa
    gli una uno del della dei delle degli dello alla allo agli alle dal dalla dai nel nella
    nei nelle con sul sulla per tra fra che suo sua suoi loro essere sono stato
    stata hanno questo questa quello quella
    """
_FUNCTION = frozenset(_FUNCTION_TEXT.split())

# Words that bound the value after them ("under 6.000", "weniger als 6.000", "at least 3"):
# part of the value's meaning, not of the subject. Folded, one to four words. A negated
# "more than" or "exceeds" is an upper bound ("does not exceed 200", "no pasa de 200", "ne
# dépasse pas 200" are "at most 200"): its negation is the bound's, not the statement's.
_BOUNDS = {
    "<": """under|below|less than|fewer than|at most|up to|no more than|menos de|por debajo de
        |como maximo|moins de|sous|au plus|en dessous de|au dessous de|unter|weniger als
        |hochstens|unterhalb|unterhalb von|abaixo de|no maximo|meno di|sotto|al massimo
        |al di sotto di
        |not more than|not over|not above|not exceed|does not exceed|do not exceed
        |doesn't exceed|don't exceed|cannot exceed|can't exceed|must not exceed|never exceeds
        |never exceed|no mas de|no pasa de|no pasan de|no supera|no superan|no excede
        |no exceden|pas plus de|ne depasse pas|ne depassent pas|ne excede pas|ne excedent pas
        |nicht mehr als|nicht uber|nicht uberschreitet|nao mais de|nao passa de
        |nao passam de|nao ultrapassa|nao ultrapassam|nao excede|nao excedem|non piu di
        |non supera|non superano|non oltre|shorter than|smaller than|slower than|lower than
        |kurzer als|kleiner als|langsamer als|niedriger als""",
    ">": """over|above|more than|greater than|at least|mas de|por encima de|al menos
        |como minimo|plus de|au moins|au dessus de|au dela de|uber|mehr als|mindestens
        |oberhalb|oberhalb von|mais de|acima de|pelo menos|no minimo|piu di|sopra|oltre
        |almeno|al di sopra di
        |exceeds|exceed|exceeding|pasa de|pasan de|supera|superan|excede|exceden|depasse
        |depassent|excedent|uberschreitet|uberschreiten|passa de|passam de|ultrapassa
        |ultrapassam|superano|faster than|longer than|larger than|bigger than|higher than
        |schneller als|langer als|grosser als|hoher als""",
}
# A name in parentheses ending a line, "(Inés)", "(Dr. Weber)": who said it, not what.
_ATTRIBUTION = re.compile(r"\s*\((?:[^\W\d_][\w.'-]*)(?:\s+[^\W\d_][\w.'-]*)?\)[.!]?\s*$")
_BOUND_OF = {
    tuple(p.split()): d for d, alts in _BOUNDS.items() for p in alts.split("|") if p.strip()
}
_BOUND_LEN = max(len(k) for k in _BOUND_OF)  # "al di sotto di": four words
# Bounds that hold their value ("at most 40" is 40 or less, as "not over 40" is): said of a
# value, they agree with a line giving the value alone ("slows it to 40"), where "under 40"
# does not. A negated bound is one of them too.
_INCLUSIVE_TEXT = """at most|up to|at least|como maximo|como minimo|al menos|au plus|au moins
    |hochstens|mindestens|no maximo|no minimo|pelo menos|al massimo|almeno"""
_INCLUSIVE = frozenset(tuple(p.split()) for p in _INCLUSIVE_TEXT.split("|"))


# Comparatives: the direction a statement moves something on a scale -- time and speed
# ("faster", "sooner", "earlier", and "before" / "after" a time), amount ("more", "fewer"),
# quality ("better"). Like a negation they are meaning-critical ("arrives faster" is not
# "arrives slower"), and like "no" and "not" several words say one direction: "arrives faster"
# and "gets back sooner" are one lesson. A closed class of each language's grammar, not of one
# world's vocabulary: the comparative adjectives and adverbs of the three scales, and the
# two-word ones built on "more" (más rápido, plus tôt, mais cedo, più veloce). Folded; a word
# one language shares with another's function words (French "plus" alone, also "ne ...
# plus"; Portuguese "mais", French "but"; Spanish "más", Portuguese "mas") counts only inside
# its two-word forms. German "vor" and "nach" are prepositions of place too, and stay out.
_DEGREE_TEXT = {
    "early": """faster quicker sooner earlier before
        antes mas_rapido mas_pronto mas_deprisa
        avant plus_vite plus_tot plus_rapide plus_rapidement
        schneller fruher eher
        mais_rapido mais_cedo mais_depressa
        prima piu_veloce piu_velocemente piu_presto piu_rapido piu_rapidamente""",
    "late": """slower later after
        despues mas_tarde mas_lento mas_despacio
        apres plus_tard plus_lent plus_lente plus_lentement
        langsamer spater
        depois mais_tarde mais_lento mais_devagar
        dopo piu_tardi piu_lento piu_lentamente""",
    "more": """more higher larger bigger greater
        mayor mayores
        mehr hoher grosser
        maior maiores
        maggiore maggiori""",
    "less": """less fewer lower smaller
        menos menor menores
        moins
        weniger niedriger kleiner
        meno minore minori""",
    "better": """better mejor mejores mieux meilleur meilleure besser melhor melhores
        meglio migliore""",
    "worse": "worse peor peores pire pires schlechter pior piores peggio peggiore",
}
_DEGREE = {w: d for d, ws in _DEGREE_TEXT.items() for w in ws.split()}


@dataclass(frozen=True)
class Meaning:
    """The meaning-critical parts of a statement."""

    values: tuple[str, ...]  # numbers, times, dates, IPs, versions, paths, identifiers
    negations: frozenset[str]
    hedges: frozenset[str]
    stems: frozenset[str]  # stems of the informative words that are not values
    key: str = ""  # `text.norm_key` of the statement
    bounds: frozenset[str] = frozenset()  # "<6.000": a value with the bound said before it
    inclusive: frozenset[str] = frozenset()  # the values of `bounds` that hold their value
    degrees: frozenset[str] = frozenset()  # "early", "less": the comparatives' directions
    names: frozenset[str] = frozenset()  # stems of the capitalised words: names, acronyms

    @property
    def value_set(self) -> frozenset[str]:
        return frozenset(self.values)

    @property
    def polarity(self) -> frozenset[str]:
        """The kinds of negation (`not`, `never`, `without`, `none`, `nor`): "no" and "not",
        "ne ... pas" and "nicht", "unless" and "if ... not" are one."""
        return frozenset(_NEG_KIND.get(n, "not") for n in self.negations)


def _is_value(tok: str, in_code: bool) -> bool:
    if in_code:
        return True
    if _VALUE_CHARS.search(tok):
        return True
    if tok.startswith("-") and tok.lstrip("-")[:1].isalpha():
        return True  # a command-line flag: --limit-upload
    if _DOTTED.search(tok):
        return True  # a host or file name: station.local, state.db
    if _HYPHEN_NAME.fullmatch(tok):
        return True  # a setting's name or value: maxmemory-policy, volatile-lru
    return bool(_INNER_CAP.search(tok))  # an identifier: SystemMaxUse, pgUpgrade


def value_tokens(text: str) -> list[str]:
    """Every value-like token of `text`, in order, trimmed of sentence punctuation."""
    return list(meaning(text).values)


def _folded(plain: list[str]) -> list[str]:
    """The folded words of `plain`, French "n'" as "ne", the phrases of `_JOINED` as one."""
    folded = " " + " ".join(_WORD.findall(fold(" ".join(plain)))) + " "
    folded = re.sub(r" n'", " ne ", folded)
    for two, one in _JOINED:
        folded = folded.replace(f" {two} ", f" {one} ")
    return folded.split()


_NOUN = re.compile(r"[^\W\d_][^\W\d_A-Z]+")  # "Modelle", "Platten": a capitalised word


def _pieces(raw: str, code: set[str]) -> list[str]:
    """`raw` trimmed, or a value and the nouns glued to it by hyphens, German style
    ("lme4-Modelle": "lme4", "Modelle"; "4-TB-Platten": "4-TB", "Platten")."""
    tok = raw.strip(_STRIP)
    if not tok or "-" not in tok or tok in code:
        return [tok] if tok else []
    parts = tok.split("-")
    i = len(parts)
    while i > 1 and parts[i - 1][:1].isupper() and _NOUN.fullmatch(parts[i - 1]):
        i -= 1
    head = "-".join(parts[:i])
    if i == len(parts) or not head or head.isalpha() or not _is_value(head, False):
        return [tok]
    return [head, *parts[i:]]


def _negation(tok: str) -> str:
    """The negation `tok` is ("doesn't" is "not"), or ""."""
    if tok.endswith("n't"):
        return "not"
    return tok if tok in NEGATIONS else ""


@lru_cache(maxsize=32768)
def meaning(text: str) -> Meaning:
    code = {m.group(1).strip() for m in _CODE_SPAN.finditer(text)} if "`" in text else set()
    said = _ATTRIBUTION.search(text)
    if said and said.group(0).strip()[1:2].isupper():
        text, whole = text[: said.start()], text
    else:
        whole = text
    values: list[str] = []
    plain: list[str] = []
    bounds: set[str] = set()
    inclusive: set[str] = set()
    said_bounds: dict[int, tuple[str, ...]] = {}  # where a bound ends: its words
    for tok in (p for raw in text.replace("`", " ").split() for p in _pieces(raw, code)):
        if fold(tok).replace("-", "") in _NAMED_TIMES and tok not in code:
            values.append(fold(tok).replace("-", ""))  # "midnight", "Mitternacht": a time
        elif tok.isalpha() and tok not in code and not _INNER_CAP.search(tok):
            plain.append(tok)  # the common case: a plain word
        elif _is_value(tok, tok in code):
            value = tok.casefold()
            values.append(value)
            before = _folded([w.replace("-", " ") for w in plain[-_BOUND_LEN - 2 :]])
            for n in range(_BOUND_LEN, 0, -1):
                d = _BOUND_OF.get(tuple(before[-n:])) if len(before) >= n else None
                if d:
                    bound = tuple(before[-n:])
                    if d == ">":  # "cannot go faster than 40": a negated lower bound
                        lead = before[:-n][-2:]  # is an upper one
                        for i, w in enumerate(reversed(lead), 1):
                            if _negation(w):
                                d, bound = "<", tuple(before[-n - i :])
                                break
                    bounds.add(d + value)
                    if bound in _INCLUSIVE or any(_negation(w) for w in bound):
                        inclusive.add(value)
                    said_bounds[len(plain)] = bound  # "40 MB/s": one bound
                    break
        else:
            plain.append(tok)
    toks = _folded(plain)
    bound_words = [w for ws in said_bounds.values() for w in ws]
    negs = [_negation(t) for t in toks if _negation(t)]
    for w in bound_words:  # "no pasa de 200": the bound's negation
        if _negation(w) in negs:
            negs.remove(_negation(w))
    neg = set(negs)
    hedges = {t for t in toks if t in HEDGES_ALL}
    skip = HEDGES_ALL | NEGATIONS | _FUNCTION | set(bound_words)
    toks, degrees = _degrees(toks, set(bound_words))
    stems = frozenset(stem(w) for w in words(" ".join(toks)) if w not in skip)
    names = frozenset(
        stem(f)
        for tok in plain
        if tok[:1].isupper()
        for f in words(tok)
        if f not in skip and f not in _DEGREE
    )
    return Meaning(
        tuple(values),
        frozenset(neg),
        frozenset(hedges),
        stems | {f"~{d}" for d in degrees},  # a direction is part of what is said
        norm_key(whole),
        frozenset(bounds),
        frozenset(inclusive),
        frozenset(degrees),
        names,
    )


def _degrees(toks: list[str], bound: set[str]) -> tuple[list[str], set[str]]:
    """`toks` without their comparatives (`_DEGREE`, two-word forms first), and the directions
    those said; the words of a bound ("faster than 40") are the bound's."""
    rest: list[str] = []
    found: set[str] = set()
    i = 0
    while i < len(toks):
        pair = f"{toks[i]}_{toks[i + 1]}" if i + 1 < len(toks) else ""
        if pair in _DEGREE and toks[i] not in bound:
            found.add(_DEGREE[pair])
            i += 2
            continue
        if toks[i] in _DEGREE and toks[i] not in bound:
            found.add(_DEGREE[toks[i]])
        else:
            rest.append(toks[i])
        i += 1
    return rest, found


def _apart(a: Meaning, b: Meaning) -> bool:
    """True when `a` and `b` cannot be one statement whatever their overlap: comparatives of
    other directions, or each naming someone (something) the other does not ("Marta returns
    each chapter" is not "Inés returns each chapter")."""
    if a.degrees != b.degrees:
        return True
    return bool(a.names - b.stems) and bool(b.names - a.stems)


def grounding_problem(text: str, quote: str) -> str | None:
    """Why `text` does not say what `quote` says (None: it does, as far as values, negations,
    hedges, bounds and comparatives go)."""
    t, q = meaning(text), meaning(quote)
    missing = [v for v in t.values if v not in q.value_set]
    if missing:
        return f"{missing[0]!r} is not in its quote"
    if t.negations != q.negations:
        extra = sorted(t.negations - q.negations) or sorted(q.negations - t.negations)
        where = "its text" if t.negations - q.negations else "its quote"
        return f"the negation {extra[0]!r} is only in {where}"
    if t.hedges != q.hedges:
        extra = sorted(t.hedges - q.hedges) or sorted(q.hedges - t.hedges)
        where = "its text" if t.hedges - q.hedges else "its quote"
        return f"the hedge {extra[0]!r} is only in {where}"
    if t.bounds != q.bounds:  # "no pasa de 40" is "at most 40", "pasa de 40" "more than 40"
        said = ", ".join(sorted(q.bounds)) or "none"
        return f"its text bounds a value otherwise than its quote ({said})"
    if t.degrees - q.degrees:  # "arrives slower" against "arrives faster" (a clause left
        said = ", ".join(sorted(q.degrees)) or "none"  # out, "after the dream", is no change)
        return f"its comparative is not its quote's ({said})"
    return None


SAME_STEMS = 0.8  # stem overlap for a paraphrase
SAME_SUBJECT = 0.8  # stem overlap of the non-value words for "the same subject"
MIN_STEMS = 3


def same_statement(candidate: str, line: str) -> bool:
    """True when `candidate` says nothing `line` does not: the same normalised text, or its
    stems contained in the line's (or overlapping by `SAME_STEMS`), with the line holding
    each of its values and the same negations and hedges."""
    a, b = meaning(candidate), meaning(line)
    if a.key == b.key:
        return True
    if len(a.stems) < MIN_STEMS or not a.stems & b.stems:
        return False
    if a.polarity != b.polarity or a.hedges != b.hedges or a.bounds != b.bounds:
        return False
    if _apart(a, b):
        return False
    if not a.value_set <= b.value_set:
        return False
    if a.stems <= b.stems:
        return True
    return a.value_set == b.value_set and jaccard(set(a.stems), set(b.stems)) >= SAME_STEMS


def contradicts(new: str, old: str) -> str | None:
    """How `new` makes `old` stale, or None: the same subject (their non-value stems overlap
    by `SAME_SUBJECT`, at least two of them shared) with another value ("value"), or the
    opposite polarity ("negation")."""
    a, b = meaning(new), meaning(old)
    shared = a.stems & b.stems
    small = min(len(a.stems), len(b.stems))
    contained = small >= MIN_STEMS and len(shared) == small  # "ahora", "now" added, say
    if len(shared) < 2 or not (contained or jaccard(set(a.stems), set(b.stems)) >= SAME_SUBJECT):
        return None
    if a.values and b.values and a.value_set != b.value_set:
        return "value"
    if a.value_set == b.value_set and bool(a.negations) != bool(b.negations):
        return "negation"
    return None


SUBJECT_COVER = 0.8  # share of the shorter line's subject words the other holds


def same_subject(new: str, old: str) -> str | None:
    """How `new` disagrees with a person's line `old`, or None: `contradicts`, or the same
    subject said with more (or other) words around it -- at least `MIN_STEMS` subject words
    shared, covering `SUBJECT_COVER` of the shorter line's -- with another value. Looser than
    `contradicts` on purpose: it only ever flags a disagreement for the person, never removes
    a line."""
    how = contradicts(new, old)
    if how:
        return how
    a, b = meaning(new), meaning(old)
    shared = a.stems & b.stems
    small = min(len(a.stems), len(b.stems))
    if len(shared) < MIN_STEMS or len(shared) < SUBJECT_COVER * small:
        return None
    if a.values and b.values and a.value_set != b.value_set:
        return "value"
    return None


def _bound_agrees(bounded: Meaning, plain: Meaning) -> bool:
    """`bounded` bounds only values that hold their value ("at most 40", "does not exceed 40")
    and `plain` bounds none: "slows the NAS to 40 MB/s" says "at most 40 MB/s" too."""
    return (
        not plain.bounds
        and bool(bounded.bounds)
        and bounded.inclusive == {b[1:] for b in bounded.bounds}
    )


PARAPHRASE_STEMS = 0.5  # stem overlap of two wordings of one lesson holding the same values


def paraphrase(new: str, old: str) -> bool:
    """True when `new` says what `old` says in other words: `same_statement`, or the same
    values (at least one: "--limit-upload 2000", "03:30"), negations and hedges (a bound said
    on one side only, "at most 40 MB/s" against "slows it to 40 MB/s", is no other one), with at
    least `MIN_STEMS` subject words shared, overlapping by `PARAPHRASE_STEMS` ("On the home
    uplink restic must run with --limit-upload 2000" and "Restic needs --limit-upload 2000 on
    the home uplink"). Without a value two wordings must be `same_statement`: "Ana prefers
    short answers" is not "Ana prefers answers in Spanish"."""
    if same_statement(new, old):
        return True
    a, b = meaning(new), meaning(old)
    if not a.values or a.value_set != b.value_set:
        return False
    if a.polarity != b.polarity or a.hedges != b.hedges or _apart(a, b):
        return False
    if a.bounds != b.bounds and not _bound_agrees(a, b) and not _bound_agrees(b, a):
        return False  # "under 5,000" is not "over 5,000", nor "5,000"
    shared = a.stems & b.stems
    return len(shared) >= MIN_STEMS and jaccard(set(a.stems), set(b.stems)) >= PARAPHRASE_STEMS
