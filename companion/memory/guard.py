"""Refuse memory writes that could hijack the agent: injected orders, exfiltration, hidden text.

Memory entries are pasted verbatim into the agent's system prompt at the start of every session,
so a poisoned entry keeps acting until someone removes it. A write is refused (never silently
cleaned) when its content matches one of the rules below; the error names the rule so the person
or the dream can rewrite the entry.

Rules (case-insensitive, checked on the NFKC form of the text so full-width and other
compatibility look-alikes fold to ASCII first):

Invisible or control characters (checked on the raw text):
  - any Unicode *format* character (category Cf): zero-width space / non-joiner / joiner, word
    joiner, invisible operators, soft hyphen, BOM, left-to-right / right-to-left marks, bidi
    embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), tag characters
    (U+E0000-U+E007F), interlinear annotation marks, ...;
  - control characters other than tab and newline (NUL, ESC for terminal escapes, DEL, C1);
  - line and paragraph separators (U+2028, U+2029), surrogates, noncharacters;
  - blank "letters" that render as nothing: Hangul fillers, the combining grapheme joiner,
    Khmer inherent vowels, the Braille blank;
  - supplementary variation selectors (U+E0100-U+E01EF), and a standard variation selector
    (U+FE00-U+FE0F) that does not follow a visible character (runs of them smuggle data; one
    after an emoji is ordinary). The zero-width joiner inside emoji sequences is refused too,
    as Hermes does: Hermes blanks such an entry out of the system prompt when it loads it.
Instruction hijacking (rule ids in brackets):
  - [ignore-instructions] "ignore / forget / override / bypass / disregard" followed within a
    few words by "previous|prior|above|earlier|your|system|original|all|any ... instructions|
    prompts|directives|guardrails", or by "previous|your|... rules|guidelines|policies";
  - [system-prompt] reading or changing the system prompt ("system prompt override", "new system
    prompt:", "reveal / print / repeat / override ... system|initial|hidden prompt");
  - [fake-turn] chat-template tokens that fake a conversation turn (``<|im_start|>``,
    ``[INST]``, ``<<SYS>>``, ``<system>``);
  - [role-hijack] "you are now a/an/the/no longer ...", "pretend ... to be / you are", "act as if
    ... no restrictions", "DAN mode";
  - [conceal] "do not / never ... tell the user", "without telling the user", "hide ... from the
    user";
  - [hidden-markup] HTML comments carrying instruction words, inline styles that hide text
    (``display:none``, ``visibility:hidden``, ``font-size:0``).
Exfiltration and persistence:
  - [exfil-network] a network command (curl, wget, nc, scp, rsync, Invoke-WebRequest, ...) whose
    line carries an environment variable named like a secret (``$API_KEY``, ``${GH_TOKEN}``), a
    command substitution ``$(...)``, or a credential file;
  - [exfil-substitution] ``$(cat|base64|... <credential file>)``, ``$(env)``, ``$(printenv)``,
    ``env | ... curl``;
  - [exfil-request] "send / post / upload / leak / forward / email ... <keys, tokens, passwords,
    credentials, .env> ... to <a URL, an e-mail address, a webhook, server, gist, ...>";
  - [secret-files] reading credential files with shell tools (``cat ~/.ssh/id_rsa``,
    ``cat .env``, ``.netrc``, ``.pgpass``, ``.aws/credentials``, ...) or writing to
    ``authorized_keys``;
  - [credential] anything shaped like a credential (API token, private key, password inside a
    URL) or a secret this process has registered: secrets never go into memory (the patterns of
    `companion.logs.redact`).
Attack families in eleven languages (issues 40 and 44; en, es, fr, de, pt, it, zh, ar, ru, ja,
tr), one table per family and language in `companion.memory.guard_phrases`: [run-code] (``curl …
| sh``, ``wget … && bash``, ``iex(iwr …)``, "download … and run it"), [conceal], [exfiltrate],
[role-override] ("SYSTEM:", developer mode, "ignore the previous instructions" in every
language), [persist] (never forget this instruction, re-add it), [ask-secret] (passwords, 2FA
codes) and [disable-safety] (switch off the guard, safety checks or confirmations).
Every rule runs on each view of the text (`companion.memory.guard_text.views`): NFKC without
zero-width characters, look-alike Cyrillic / Greek letters folded to Latin, spelled-out letters
(``I-g-n-o-r-e``) joined, ROT13, and base64 / hex / URL-encoded runs decoded.
Each phrase rule anchors on attack behaviour rather than bossy English, so ordinary memory such
as "always use pnpm", "never push to main" or "the user writes about system prompt design" passes.

Unsure (issue 40): `unsure(text)` says why text `check` passes still looks like an injection
-- an order or an action with an outside address, a command run as root or piped into a shell,
all but one part of a three-part family phrase, an encoded run that reads as text -- or None.
The dream proposes a MEMORY.md / USER.md change holding such text instead of applying it.

`check_write(text, where=...)` is the one entry point for every write an agent will later read
(MCP notes, journal, memory; the dream's notes, journal lines, index lines, MEMORY.md, USER.md
and the llm distiller's proposals).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from companion.logs import redact
from companion.memory import guard_phrases, guard_text, hermes_threats


@dataclass(frozen=True)
class Finding:
    """Why a text was refused: a rule id and a sentence for a person."""

    rule: str
    detail: str

    def message(self) -> str:
        return (
            f"refused: {self.detail} [rule {self.rule}]; memory is injected into the agent's "
            "system prompt, so it must not carry instructions, exfiltration or hidden characters"
        )


# --- invisible characters ---------------------------------------------------------------------

_BLANK_LETTERS = {
    0x034F: "COMBINING GRAPHEME JOINER",
    0x115F: "HANGUL CHOSEONG FILLER",
    0x1160: "HANGUL JUNGSEONG FILLER",
    0x17B4: "KHMER VOWEL INHERENT AQ",
    0x17B5: "KHMER VOWEL INHERENT AA",
    0x2800: "BRAILLE PATTERN BLANK",
    0x3164: "HANGUL FILLER",
    0xFFA0: "HALFWIDTH HANGUL FILLER",
}


def _char_name(ch: str) -> str:
    return _BLANK_LETTERS.get(ord(ch)) or str(unicodedata.name(ch, "unnamed character"))


def _is_noncharacter(cp: int) -> bool:
    return 0xFDD0 <= cp <= 0xFDEF or (cp & 0xFFFE) == 0xFFFE


_DIRECTION_MARKS = frozenset("\u200e\u200f\u061c")  # LRM, RLM, ALM


def _has_rtl_letters(text: str) -> bool:
    return any(
        unicodedata.bidirectional(ch) in ("R", "AL") and unicodedata.category(ch).startswith("L")
        for ch in text
    )


def invisible_character(text: str) -> Finding | None:
    """The first invisible or control character in `text` that the guard refuses, if any.

    Direction marks (LRM, RLM, ALM) are ordinary in text that mixes right-to-left script with
    Latin text, so they pass there; elsewhere they only hide or reorder text and are refused.
    """
    prev_visible = False
    rtl = _has_rtl_letters(text)
    for pos, ch in enumerate(text):
        cp = ord(ch)
        cat = unicodedata.category(ch)
        bad = False
        if ch in "\n\t" or (rtl and ch in _DIRECTION_MARKS):
            bad = False
        elif (
            cat in ("Cf", "Cc", "Cs", "Zl", "Zp")
            or cp in _BLANK_LETTERS
            or _is_noncharacter(cp)
            or 0xE0100 <= cp <= 0xE01EF
        ):
            bad = True
        elif 0xFE00 <= cp <= 0xFE0F:
            bad = not prev_visible
        if bad:
            return Finding(
                "invisible-unicode",
                f"invisible or control character U+{cp:04X} ({_char_name(ch)}) at position {pos}",
            )
        prev_visible = not (ch.isspace() or 0xFE00 <= cp <= 0xFE0F)
    return None


# --- phrases ----------------------------------------------------------------------------------
# Each rule anchors on attack behaviour, not on bossy English: a memory full of "always use pnpm"
# and "never push to main" is normal and must pass.

_GAP = r"(?:[^\s.!?;]+\s+){0,6}?"  # a few words in between, never across a sentence end
_NET = (
    r"\b(?:curl|wget|nc|ncat|netcat|socat|scp|rsync|ftp|sftp|Invoke-WebRequest|Invoke-RestMethod|"
    r"iwr|irm)\b"
)
_SECRET_VAR = r"\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH|COOKIE)S?\b"
_SECRET_FILE = (
    r"(?:\.ssh/|\bid_rsa|\bid_ed25519|\bid_ecdsa|\bid_dsa|authorized_keys|(?<![\w.])\.env\b|"
    r"\.netrc|\.pgpass|\.npmrc|\.pypirc|\.aws/credentials|\.git-credentials|"
    r"\.docker/config\.json|\.kube/config|\.hermes/\.env)"
)
_SECRET_NOUN = (
    r"(?:api[\s_-]?keys?|access[\s_-]?keys?|secret[\s_-]?keys?|private[\s_-]?keys?|"
    r"ssh[\s_-]?keys?|tokens?|passwords?|passphrases?|credentials?|secrets?|cookies?|"
    r"env(?:ironment)?\s+variables?|\.env(?:\s+file)?)"
)
_EXTERNAL = (
    r"(?:\S*https?://|\S+@\S+\.\w+|[^\n]{0,40}?\b(?:webhook|server|endpoint|url|pastebin|gist|"
    r"discord|telegram|ngrok|requestbin|attacker|remote\s+host)\b)"
)
_QUALIFIER = r"(?:previous|prior|above|earlier|preceding|your|system|original|initial)"
_STRONG = r"(?:instructions?|prompts?|directives|guardrails)"
_RULE_NOUN = r"(?:rules|guidelines|policies|safety\s+rules)"

_RULES: list[tuple[str, str, str]] = [
    # instruction hijacking
    (
        "ignore-instructions",
        rf"\b(?:ignore|forget|override|bypass|disregard)\s+{_GAP}(?:{_QUALIFIER}|all|any)\s+"
        rf"{_GAP}{_STRONG}\b|\b(?:ignore|forget|override|bypass|disregard)\s+{_GAP}{_QUALIFIER}"
        rf"\s+{_GAP}{_RULE_NOUN}\b",
        "an instruction to ignore or disregard earlier instructions",
    ),
    (
        "system-prompt",
        rf"\b(?:system\s+prompt\s+(?:override|injection)|new\s+system\s+prompt\s*:|"
        rf"(?:reveal|print|output|show|repeat|leak|dump|override|replace|ignore)\s+{_GAP}"
        rf"(?:system|initial|hidden|original|developer)\s+(?:prompt|instructions|message))\b",
        "an attempt to read or change the system prompt",
    ),
    (
        "fake-turn",
        r"<\|(?:im_start|im_end|system|user|assistant|endoftext|begin_of_text|start_header_id|"
        r"end_header_id|eot_id)\|>|\[/?INST\]|<</?SYS>>|<\s*/?\s*system\s*>",
        "a fake conversation turn or chat-template token",
    ),
    (
        "role-hijack",
        rf"\b(?:you\s+are\s+now\s+(?:a|an|the|no\s+longer)\b|pretend\s+{_GAP}(?:you\s+are|"
        rf"to\s+be)\s|act\s+as\s+(?:if|though)\s+{_GAP}(?:no|without)\s+{_GAP}(?:restrictions|"
        rf"limits|rules|filters|guardrails)\b|DAN\s+mode\b)",
        "an attempt to change who the agent is or lift its rules",
    ),
    (
        "conceal",
        rf"\b(?:(?:do\s+not|don'?t|never)\s+{_GAP}(?:tell|inform|alert|warn)\s+{_GAP}the\s+user|"
        rf"without\s+(?:telling|informing|alerting)\s+the\s+user|hide\s+{_GAP}from\s+the\s+"
        rf"user)\b",
        "an instruction to hide something from the user",
    ),
    (
        "hidden-markup",
        r"<!--[\s\S]{0,2000}?\b(?:ignore|instructions?|system|prompt|secret|hidden|assistant|"
        r"override|execute)\b[\s\S]{0,2000}?-->|<[^>]{0,200}\bstyle\s*=\s*[\"'][^\"'>]{0,200}"
        r"(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0)",
        "hidden markup that carries instructions",
    ),
    # exfiltration and persistence
    (
        "exfil-network",
        rf"{_NET}[^\n]{{0,400}}?(?:{_SECRET_VAR}|\$\(|{_SECRET_FILE})",
        "a network command that carries secrets, command output or credential files",
    ),
    (
        "exfil-substitution",
        rf"\$\(\s*(?:cat|base64|xxd|od|head|tail|less|more|gpg|security)\b[^)\n]{{0,200}}?"
        rf"{_SECRET_FILE}|\$\(\s*(?:printenv|env|set|export\s+-p)\s*\)|"
        rf"\b(?:printenv|env)\s*\|[^\n]{{0,200}}?{_NET}",
        "a command substitution or pipe that reads secrets or the environment",
    ),
    (
        "exfil-request",
        rf"\b(?:send|post|upload|transmit|exfiltrate|leak|forward|e-?mail|paste|beam)\s+{_GAP}"
        rf"{_SECRET_NOUN}\s+{_GAP}(?:to|at|into|via|on)\s+{_EXTERNAL}",
        "a request to send keys, tokens or credentials somewhere",
    ),
    (
        "secret-files",
        rf"\b(?:cat|less|more|head|tail|base64|xxd|od|strings|scp|rsync)\s+[^\n]{{0,200}}?"
        rf"{_SECRET_FILE}|(?:>>?|\btee\b|\becho\b|\bappend\b|\badd\b)[^\n]{{0,200}}?authorized_keys",
        "reading credential files or planting SSH keys",
    ),
]

# --- the same attacks in Spanish, and wider English forms (issue 12) -----------------------
_GAPW = r"(?:\S*[^\s.!?;]\s+){0,8}?"  # up to eight words, never across a sentence end
_ES_ORDERS = r"(?:instrucciones|indicaciones|[oó]rdenes|reglas|directrices|normas|consignas)"
_EXTERNAL_ANY = (
    r"(?:https?://|ftp://|\bpastebin\b|\bwebhooks?\b|\bgist\b|\brequestbin\b|\bngrok\b|"
    r"\btransfer\.sh\b|\bdiscord\b|\btelegram\b|\bdropbox\b|\bs3://|"
    r"\b(?:external|remote|outside)\s+(?:server|host|site|address|url|endpoint)|"
    r"\b(?:servidor|sitio|host|direcci[oó]n|url)\s+(?:externo|externa|remoto|remota)|"
    r"\S+@\S+\.\w{2,})"
)
_CONFIG_FILES = (
    r"(?:AGENTS\.md|CLAUDE\.md|GEMINI\.md|SOUL\.md|\.cursorrules|\.clinerules|"
    r"config\.ya?ml|\.claude/settings(?:\.local)?\.json|\.mcp\.json|\.hermes/)"
)
_CRED_NOUN = (
    r"(?:private\s+keys?|ssh\s+keys?|api\s+keys?|access\s+tokens?|auth\s+tokens?|"
    r"credentials?|passwords?|passphrases?|secrets?|"
    r"claves?\s+(?:privadas?|ssh|de\s+(?:api|acceso))|llaves?\s+(?:privadas?|ssh)|"
    r"credenciales|contrase[ñn]as?|secretos?|tokens?\s+de\s+acceso)"
)

_RULES += [
    (
        "ignore-instructions",
        rf"\b(?:ignora\w*|ignore[ns]?|olvida\w*|olvide[ns]?|omite\w*|descarta\w*|"
        rf"desobedece\w*|s[aá]ltate\w*|haz\s+caso\s+omiso\s+(?:a|de)|no\s+hagas\s+caso\s+"
        rf"(?:a|de))\s+{_GAPW}(?:{_ES_ORDERS}|(?:todo\s+)?lo\s+(?:anterior|que\s+te\s+"
        rf"(?:dijeron|han\s+dicho|hayan\s+dicho)))\b|"
        rf"\b(?:forget|ignore|disregard)\s+(?:everything|anything|all)\s+{_GAPW}"
        rf"(?:above|before|earlier|previously|you\s+(?:were|have\s+been)\s+told)\b|"
        rf"\b(?:obey|obedece\w*|obedezca\w*|obedecer)\b|"
        rf"\bfollow\s+only\s+{_GAPW}(?:instructions|orders|commands)\b",
        "an instruction to ignore earlier instructions or obey someone else",
    ),
    (
        "exfil-url",
        rf"\b(?:upload|send|post|transmit|forward|exfiltrate|sync|copy|push|leak|paste|mail|"
        rf"e-?mail|beam|report|contact|ping|notify|s[uú]b\w+|sube|env[ií]\w+|m[aá]nd\w+|"
        rf"reenv[ií]\w+|publica\w*|transmit\w+|filtra\w*|pega\w*|c[oó]pia\w*|"
        rf"compart\w+|sincroniz\w+|contact\w+|notific\w+)\s+"
        rf"{_GAPW}(?:to|into|onto|at|via|on|a|al|en|hacia|con|por)\s+{_GAPW}{_EXTERNAL_ANY}|"
        rf"\b(?:contact|ping|notify|beacon|contacta\w*|notifica\w*)\s+{_EXTERNAL_ANY}",
        "an instruction to send something to, or contact, an outside address",
    ),
    (
        "conceal",
        r"\bwithout\s+(?:telling|informing|notifying|alerting|letting\s+\S+\s+know)\b|"
        r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|notify|alert|let\s+\S+\s+know)\s+"
        r"(?:\w+\s+){0,2}(?:about\s+)?(?:this|it|that)\b|"
        r"\b(?:hide|conceal|keep)\s+(?:this|it|that|them|everything|all)\s+(?:\w+\s+){0,3}?"
        r"(?:from|secret|hidden|quiet)\b|\bbehind\s+\S+\s+back\b|\bsecretly\b|"
        r"\bso\s+(?:that\s+)?\S+\s+(?:doesn'?t|does\s+not|won'?t|will\s+not|never)\s+"
        r"(?:notice|find\s+out|know|see)\b|"
        r"\bsin\s+(?:dec[ií]r\w*|avisar\w*|cont[aá]r\w*|informar\w*|notificar\w*|"
        r"pregunt[aá]r\w*|consultar\w*|que\s+(?:\S+\s+)?(?:lo\s+)?(?:sepa|se\s+entere|"
        r"note|vea|se\s+d[eé]\s+cuenta))\b|"
        r"\bno\s+se\s+lo\s+(?:digas|cuentes|menciones|comentes|ense[ñn]es)\b|"
        r"\bno\s+(?:le|les)\s+(?:digas|cuentes|menciones|comentes|avises)\s+(?:nada|esto|eso)\b|"
        r"\b(?:oc[uú]lta(?:le|les|lo|la|los|las|selo|sela)?|esc[oó]nde(?:le|les|lo|la|selo)?)\s+"
        r"(?:\w+\s+){0,4}?(?:a|de)\s+\w+|"
        r"\ba\s+escondidas\b|\bque\s+no\s+se\s+entere\b|"
        r"\bpara\s+que\s+(?:\S+\s+)?no\s+(?:lo\s+|la\s+|los\s+|las\s+|se\s+)?"
        r"(?:vea|sepa|note|entere|d[eé]\s+cuenta)\b",
        "an instruction to hide something from the person",
    ),
    (
        "agent-config",
        rf"\b(?:update|modify|edit|write|change|append|add|overwrite|replace|rewrite|delete|"
        rf"remove|insert|patch|put|modific\w+|edita\w*|cambi[ae]\w*|actualiz\w+|escrib\w+|"
        rf"añad\w+|agreg\w+|sobrescrib\w+|reemplaz\w+|borr[ae]\w*|elimin\w+|insert[ae]\w*|"
        rf"pon(?:le|lo|la|er)?|mete\w*)\s+(?:[^\n]{{0,200}}?\s)?(?:~/|\S*/)?{_CONFIG_FILES}",
        "an instruction to change an agent's configuration files",
    ),
    (
        "credential-access",
        rf"(?:^|[\s\"'(=`])(?:~|\$HOME|\$\{{HOME\}}|/home/[\w.-]+|/root|/Users/[\w.-]+)/"
        rf"\.(?:ssh|gnupg|aws|kube|docker|password-store|config/gh)\b|\bid_(?:rsa|dsa|ecdsa|"
        rf"ed25519)\b|\.aws/credentials|\.git-credentials|\.ssh/|"
        rf"\b(?:read|copy|print|show|send|dump|export|reveal|leak|exfiltrate|extract|upload|"
        rf"collect|grab|steal|lee\w*|c[oó]pia\w*|m[uú][eé]stra\w*|imprime\w*|env[ií]a\w*|dame|"
        rf"revela\w*|extrae\w*|vuelca\w*|exporta\w*|s[uú]be\w*|recopila\w*|roba\w*)\s+"
        rf"{_GAPW}{_CRED_NOUN}\b",
        "an instruction to reach credentials (keys, passwords, ~/.ssh)",
    ),
]

_COMPILED = [(rule, re.compile(rx, re.IGNORECASE), why) for rule, rx, why in _RULES]


def _finding(rule: str, why: str, m: re.Match[str], label: str) -> Finding:
    snippet = " ".join(m.group(0).split())
    if len(snippet) > 60:
        snippet = snippet[:59] + "…"
    where = "" if label == "text" else f" in the {_VIEW_NAMES.get(label, label)} text"
    return Finding(rule, f'{why} ("{snippet}"){where}')


_VIEW_NAMES = {"folded": "de-obfuscated", "rot13": "ROT13-decoded", "base64": "base64-decoded",
               "hex": "hex-decoded", "url-encoded": "URL-decoded"}  # fmt: skip

# a sentence ends at . ! ? followed by a space, at a line end, or at CJK / Arabic full stops
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+|(?<=[。！？؟])")
_MAX_SENTENCE = 2000


@dataclass(frozen=True)
class _Compiled:
    all_of: tuple[re.Pattern[str], ...]
    unless: re.Pattern[str] | None


_PATTERNS: dict[str, re.Pattern[str]] = {}  # one compiled pattern per distinct source


def _rx(source: str) -> re.Pattern[str]:
    rx = _PATTERNS.get(source)
    if rx is None:
        rx = _PATTERNS[source] = re.compile(source, re.IGNORECASE | re.MULTILINE)
    return rx


def _compile(phrase: guard_phrases.Phrase) -> _Compiled:
    return _Compiled(
        tuple(_rx(rx) for rx in phrase.all_of), _rx(phrase.unless) if phrase.unless else None
    )


_FAMILIES = [
    (rule, why, [_compile(p) for phrases in table.values() for p in phrases])
    for rule, why, table in guard_phrases.FAMILIES
]


def _sentences(text: str) -> list[str]:
    out = []
    for s in _SENTENCE_END.split(text):
        s = s.strip()
        while len(s) > _MAX_SENTENCE:  # bounded windows, overlapping so nothing falls between
            out.append(s[:_MAX_SENTENCE])
            s = s[_MAX_SENTENCE // 2 :]
        if s:
            out.append(s)
    return out


def _family_finding(view: str, label: str) -> Finding | None:
    sentences: list[str] | None = None
    seen: dict[re.Pattern[str], bool] = {}

    def occurs(rx: re.Pattern[str]) -> bool:
        hit = seen.get(rx)
        if hit is None:
            hit = seen[rx] = rx.search(view) is not None
        return hit

    for rule, why, phrases in _FAMILIES:
        # a phrase whose patterns do not all occur somewhere in the view cannot match a sentence
        live = [p for p in phrases if all(occurs(rx) for rx in p.all_of)]
        if not live:
            continue
        if sentences is None:
            sentences = _sentences(view)
        for sentence in sentences:
            for phrase in live:
                first = None
                for rx in phrase.all_of:
                    m = rx.search(sentence)
                    if m is None:
                        break
                    first = first or m
                else:
                    if phrase.unless is not None and phrase.unless.search(sentence):
                        continue
                    if first is not None:
                        return _finding(rule, why, first, label)
    return None


def dangerous_phrase(text: str, *, skip: frozenset[str] = frozenset()) -> Finding | None:
    """The first instruction-hijacking, exfiltration or other attack rule `text` matches, in
    the text or in any of its de-disguised views (`guard_text.views`), if any; rules named in
    `skip` are not applied."""
    views = guard_text.views(text)
    for label, view in views:
        for rule, rx, why in _COMPILED:
            if rule in skip:
                continue
            m = rx.search(view)
            if m:
                return _finding(rule, why, m, label)
    for label, view in views:
        found = _family_finding(view, label)
        if found is not None:
            return found
    return None


def credential(text: str) -> Finding | None:
    """A credential-shaped string (or a secret this process knows) in `text`, if any."""
    if redact(text) != text:
        return Finding("credential", "text shaped like a credential (token, key or password)")
    return None


def hermes_finding(text: str) -> Finding | None:
    """What Hermes's own scanner refuses (`companion.memory.hermes_threats`): refusing at least
    that keeps an entry the agent would only see as ``[BLOCKED: ...]`` out of memory."""
    found = hermes_threats.scan(text)
    if not found:
        return None
    return Finding(
        f"hermes:{found[0]}",
        f"Hermes Agent's threat scanner refuses this ({', '.join(found)}) and would hide it "
        "from the agent",
    )


MEMORY_PLACES = frozenset({"memory", "user", "mcp:memory", "mcp:user", "proposal"})
VAULT_PLACES = frozenset({"note", "journal", "index", "mcp:note", "mcp:journal"})
WHERE = MEMORY_PLACES | VAULT_PLACES

# Rules that refuse a *mention* (a path to secrets, a config file name, an API call carrying a
# token variable) rather than an instruction. In the injected memory nothing like that belongs
# (and Hermes hides such an entry); in a note it is ordinary documentation ("my SSH config is in
# ~/.ssh/config", "curl -H "Authorization: Bearer $TOKEN" …", "update CLAUDE.md"), so vault
# writes skip them and Hermes's memory scan, and keep every instruction rule and family.
MENTION_RULES = frozenset(
    {"credential-access", "secret-files", "agent-config", "exfil-network", "exfil-substitution"}
)


def check_write(text: str, where: str) -> Finding | None:
    """Why `text` may not be written at `where` (one of `WHERE`), or None when it may.

    The one gate every write an agent will later read passes. Memory places (MEMORY.md,
    USER.md, model proposals) get `check`; vault places (notes, journal, Home.md's index) get
    the same rules but `MENTION_RULES` and Hermes's memory scan, because an agent reads them back
    as it reads memory, but they also document ordinary work.
    """
    if where in MEMORY_PLACES:
        return check(text)
    if where not in VAULT_PLACES:
        raise ValueError(f"unknown write place {where!r}")
    return (
        invisible_character(text) or credential(text) or dangerous_phrase(text, skip=MENTION_RULES)
    )


def check(text: str) -> Finding | None:
    """The first reason to refuse `text` as a memory entry, or None when it is safe to store."""
    return (
        invisible_character(text)
        or credential(text)
        or dangerous_phrase(text)
        or hermes_finding(text)
    )


# --- unsure: no clear injection, but it looks like one (issue 40) ------------------------------
# `check` refuses or passes. Some text it passes still has the shape of an attack: an order or
# an action with an outside address, a command run as root or piped into a shell, most of a
# family phrase, an encoded run that reads as text. The dream does not apply a MEMORY.md /
# USER.md change holding such text: it proposes it to the person
# (`companion.dream.proposals`). Measured on the guard's corpus (`bench/bench_guard.py`): a few
# look-alikes are unsure, no fact or lesson of the generated worlds is.

_ACTION = re.compile(
    "|".join(
        f"(?:{rx})"
        for table in (guard_phrases._SEND, guard_phrases._DOWNLOAD, guard_phrases._RUN)
        for lang, rx in table.items()
        if lang in ("en", "es", "fr", "de", "pt", "it")
    ),
    re.IGNORECASE,
)
_TARGET = re.compile(guard_phrases.EXTERNAL, re.IGNORECASE)
# Words that make a sentence a standing order, in the dream's six languages.
_ORDER = re.compile(
    r"\b(?:always|every\s+time|whenever|from\s+now\s+on|remember\s+to|make\s+sure|"
    r"you\s+(?:must|should|need\s+to|have\s+to)|siempre|cada\s+vez|a\s+partir\s+de\s+ahora|"
    r"aseg[uú]rate|tienes\s+que|debes|toujours|chaque\s+fois|d[ée]sormais|assure-toi|"
    r"tu\s+dois|il\s+faut|immer|jedes\s+mal|ab\s+jetzt|von\s+nun\s+an|stell\s+sicher|"
    r"du\s+musst|sempre|toda\s+vez|a\s+partir\s+de\s+agora|certifique-se|voc[êe]\s+deve|"
    r"ogni\s+volta|d'ora\s+in\s+poi|da\s+ora\s+in\s+poi|assicurati|devi)\b",
    re.IGNORECASE,
)
_AS_ROOT = re.compile(
    r"\b(?:as|als|como|en\s+tant\s+que|come)\s+root\b|\bsudo\b|\|\s*(?:ba|z)?sh\b|"
    r"\bchmod\s+\+x\b",
    re.IGNORECASE,
)


def _partial_family(sentence: str) -> str | None:
    """The family two of whose three parts (or more, all but one) `sentence` holds."""
    for rule, _why, table in guard_phrases.FAMILIES:
        for phrases in table.values():
            for p in phrases:
                if len(p.all_of) < 3 or (p.unless and _rx(p.unless).search(sentence)):
                    continue
                if sum(1 for rx in p.all_of if _rx(rx).search(sentence)) == len(p.all_of) - 1:
                    return rule
    return None


def unsure(text: str) -> str | None:
    """Why the guard is unsure of `text` (it looks like an injection without being a clear one),
    or None. Meant for text `check` passes; the dream proposes a memory change it is unsure of
    instead of applying it."""
    found = guard_text.decoded(guard_text._strip(text))
    if found:
        return f"an encoded run ({found[0][0]}) that decodes to readable text"
    views = guard_text.views(text)[:2]  # the text, and the text de-obfuscated
    for _label, view in views:
        for sentence in _sentences(view):
            acts = bool(_ACTION.search(sentence) or _ORDER.search(sentence))
            if acts and _TARGET.search(sentence):
                return "an order or an action with an outside address"
            if acts and _AS_ROOT.search(sentence):
                return "an order to run a command as root or into a shell"
            family = _partial_family(sentence)
            if family:
                return f"most of a {family} phrase"
    return None
