"""The person's statements about themselves, in the voice Hermes writes USER.md in.

Hermes's user profile speaks of the person in the third person ("User prefers concise
answers", "El usuario vive en Bilbao"); a marked "remember: I prefer short answers" promoted as
it was said would read, in the agent's injected context, as the agent speaking about itself.
`third_person` rewrites the openings `quality.personal_fact` recognises ("I prefer", "I'm",
"my name is", "prefiero", "me gusta", "vivo en"...) into "The user prefers ..." / "El usuario
prefiere ...", and the person's pronouns after them ("me", "my" / "me", "mi"). A statement
that does not open that way is returned as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_EN: list[tuple[str, str]] = [
    (r"i am|i'm", "The user is"),
    (r"i do not like|i don't like", "The user does not like"),
    (r"i prefer", "The user prefers"),
    (r"i like", "The user likes"),
    (r"i love", "The user loves"),
    (r"i hate", "The user hates"),
    (r"i live in", "The user lives in"),
    (r"i work at", "The user works at"),
    (r"i work as", "The user works as"),
    (r"call me", "Call the user"),
    (r"my name is", "The user's name is"),
    (r"my (pronouns|language|time ?zone)", "The user's {0}"),
]
_ES: list[tuple[str, str]] = [
    (r"no me gusta", "Al usuario no le gusta"),
    (r"me gusta", "Al usuario le gusta"),
    (r"me encanta", "Al usuario le encanta"),
    (r"prefiero", "El usuario prefiere"),
    (r"odio", "El usuario odia"),
    (r"ll[aá]mame", "Al usuario hay que llamarle"),
    (r"me llamo", "El usuario se llama"),
    (r"mi nombre es", "El nombre del usuario es"),
    (r"vivo en", "El usuario vive en"),
    (r"trabajo en", "El usuario trabaja en"),
    (r"trabajo como", "El usuario trabaja como"),
    (r"soy", "El usuario es"),
    (r"tengo (\d+) años", "El usuario tiene {0} años"),
    (r"mi pronombre", "El pronombre del usuario"),
    (r"mi idioma", "El idioma del usuario"),
    (r"mi zona horaria", "La zona horaria del usuario"),
]
# the person's own words after the opening, as the profile says them
_EN_REST = {
    "me": "them",
    "my": "their",
    "mine": "theirs",
    "myself": "themselves",
    "i": "they",
    "i'm": "they're",
    "am": None,
}
_ES_REST = {"me": "le", "mi": "su", "mis": "sus", "conmigo": "con el usuario"}


def _rest_en(rest: str) -> str:
    def swap(m: re.Match[str]) -> str:
        w = m.group(0)
        low = w.lower()
        if low == "i am":
            return "they are"
        out = _EN_REST.get(low)
        return w if out is None else out

    return re.sub(r"(?<![\w'])(?:i am|i'm|myself|mine|my|me|i)(?![\w'])", swap, rest, flags=re.I)


def _rest_es(rest: str) -> str:
    return re.sub(
        r"(?<!\w)(?:conmigo|mis|mi|me)(?!\w)",
        lambda m: _ES_REST[m.group(0).lower()],
        rest,
        flags=re.I,
    )


def _rewrite(
    text: str, table: list[tuple[str, str]], rest: Callable[[str], str], capital: bool
) -> str | None:
    for pattern, form in table:
        m = re.match(rf"\s*(?:{pattern})(?!\w)", text, re.I)
        if m is None:
            continue
        head = form.format(*(g.lower() for g in m.groups()))
        if capital:
            head = head[:1].upper() + head[1:]
        return head + rest(text[m.end() :])
    return None


def third_person(text: str) -> str:
    """`text` as USER.md says it: "I prefer short answers." -> "The user prefers short
    answers."; "Prefiero que me llames Lu" -> "El usuario prefiere que le llames Lu"."""
    out = _rewrite(text, _EN, _rest_en, capital=False)
    if out is None:
        out = _rewrite(text, _ES, _rest_es, capital=True)
    return text if out is None else out
