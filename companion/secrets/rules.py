"""Our own high-signal credential rules and the heuristics that keep them quiet on prose.

Each `Rule` is a regular expression for one credential format people paste into notes (cloud
keys, forge tokens, AI-provider keys, chat tokens, JWTs, passwords in URLs, `NAME=value` lines
whose NAME says "secret"). The rules run only on lines selected by `candidate_offsets` (long
tokens, secret-sounding words before an assignment, URLs with a password, key headers), and
only if one of their `needs` literals is on the line, so a vault of ordinary notes is scanned at
regex-engine speed. Multi-line private-key blocks are handled by `match_private_key`.

Rules are tried in order; when two findings overlap on a line the earlier (more specific) rule
wins, so `export GITHUB_TOKEN=ghp_...` is reported once, as a GitHub token.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# ----------------------------------------------------------------------------------------------
# Heuristics shared by the rules (and applied to detect-secrets' findings too)
# ----------------------------------------------------------------------------------------------

_PLACEHOLDER_WORDS = _words(
    """
    password passwd pass pwd secret token apikey api_key key changeme change_me
    change-me example placeholder redacted none null nil true false undefined todo tbd
    dummy sample test testing foo bar baz qwerty contraseña contrasena clave secreto
    admin root guest postgres user usuario hidden oculto empty required string value
    valor mysecret mypassword letmein
    """
)
_PLACEHOLDER_RE = re.compile(
    r"""(?ix)
    ^(?: [x*•·.#_\-]{3,}                # xxxx, ****, ...., ----
       | <[^>]*>                        # <your-token>
       | \{\{?[^}]*\}\}?                # {token}, {{ token }}
       | \[[^\]]*\]                     # [token]
       | \$\{[^}]*\}                    # ${TOKEN}
       | \$\(?[A-Za-z_][A-Za-z0-9_]*\)? # $TOKEN, $(cmd
       | %[A-Za-z_][A-Za-z0-9_]*%       # %TOKEN%
       | (?:your|my|tu|su|mi)[_\-.][\w\-.]*   # your_token_here, tu-clave
       | (?:keyring|env|op|vault|secret|secrets|file|pass|bw|sops|aws-sm|gcp-sm):\S*
                                        # references to a secret store, not the secret
       | ENC\[.*\]                      # sops-encrypted value
       )$
    """
)
_PLACEHOLDER_INSIDE = re.compile(
    r"(?i)example|placeholder|dummy|redacted|changeme|change_me|xxxx|\*\*\*|\.\.\.|<[a-z_\- ]+>"
    r"|your[_\-]?(?:token|key|secret|password)|tu[_\-]?(?:token|clave|contrase)|fake|notreal|not_real"
)
_NOT_SECRET_VALUE = re.compile(
    r"^(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-\S+|sk-ssh-\S+|sk-ecdsa-\S+|arn:\S+)$"
)
# a word for a secret plus letters/digits only: "generatedwebdavpassword1", "secret123"
_NAMED_PLACEHOLDER = re.compile(
    r"(?i)^[a-z0-9_\-]*(?:password|passwd|contrase(?:ñ|n)a|secret|token|apikey)[a-z0-9_\-]*$"
)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")
_NUMBERISH = re.compile(r"^[\d\s\-/:.,+%]+$")  # numbers, dates, times, versions, phone numbers
_IDENTIFIER_LIKE = re.compile(
    r"""^(?:
        [A-Za-z_]+(?:\.[A-Za-z_]+)+           # settings.SECRET_KEY, os.environ
      | [a-z]+(?:[_\-][a-z]+)+                # snake_case / kebab-case words
      | [A-Z]+(?:_[A-Z]+)+                    # CONSTANT_CASE
      | [a-z]+(?:[A-Z][a-z]+)+                # camelCase
      | (?:[A-Z][a-z]+){2,}                   # PascalCase
    )$""",
    re.X,
)
# Trailing characters that end a sentence or a Markdown construct rather than a secret.
_TRAILING = ".,;:)]}>`'\"*"


def shannon_entropy(value: str) -> float:
    """Bits per character of `value`'s own character distribution."""
    if not value:
        return 0.0
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def is_placeholder(value: str) -> bool:
    """True for values that stand for a secret without being one (`<token>`, `${X}`, `xxxx`)."""
    v = value.strip().strip("\"'`")
    if not v:
        return True
    low = v.lower()
    if low in _PLACEHOLDER_WORDS:
        return True
    if _PLACEHOLDER_RE.match(v) or _PLACEHOLDER_INSIDE.search(v):
        return True
    # one repeated character, or a value made of a single repeated short unit ("abcabcabc")
    if len(set(v)) <= 2:
        return True
    return bool(_NAMED_PLACEHOLDER.match(v))


def char_classes(value: str) -> int:
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    digit = any(c.isdigit() for c in value)
    symbol = any(not c.isalnum() for c in value)
    return lower + upper + digit + symbol


def looks_secret(value: str, min_len: int = 8) -> bool:
    """Does a value found after a secret-sounding name look like a real credential?

    Rejects placeholders, references, paths, URLs, e-mail addresses, numbers/dates, code
    expressions and plain words or identifiers; keeps anything with the mix of character
    classes that passwords and tokens have.
    """
    v = value
    if len(v) < min_len or len(v) > 1024:
        return False
    if is_placeholder(v):
        return False
    if "://" in v or v.startswith(("/", "./", "../", "~/", "[[", "\\\\", "#", "@")):
        return False
    if re.match(r"^[A-Za-z]:\\", v):  # C:\path
        return False
    if _EMAIL.match(v) or _NUMBERISH.match(v) or _NOT_SECRET_VALUE.match(v):
        return False
    if any(c in v for c in "()[]{}<>") or any(c.isspace() for c in v):
        return False  # call expressions, indexing, templates, sentences
    if v.isalpha() or _IDENTIFIER_LIKE.match(v):
        return False
    return char_classes(v) >= 2


def looks_random(value: str, min_len: int = 16) -> bool:
    """A token-like value: long, mixed letters and digits, not a hash, not a word."""
    if len(value) < min_len or is_placeholder(value):
        return False
    if re.fullmatch(r"[0-9a-fA-F\-]+", value):  # hex digests, UUIDs
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return has_digit and has_alpha and shannon_entropy(value) >= 3.0


# ----------------------------------------------------------------------------------------------
# Secret-sounding names (for NAME=value, NAME: value, "name": "value")
# ----------------------------------------------------------------------------------------------

_SECRET_WORDS = _words(
    """
    password passwd pass pwd passphrase secret secrets token tokens apikey credential
    credentials contrasena contraseña clave privatekey accesskey secretkey authkey pat
    sig signingkey webhook
    """
)
_KEY_QUALIFIERS = _words(
    """
    api access private secret client master encryption signing auth license account
    service app shared storage admin deploy session
    """
)
_NOT_SECRET_LAST = _words(
    """
    url uri urls endpoint host hostname port file path dir name user username usuario id
    ids type mode length len ttl expiry expires expiration header field env var enabled
    count size limit limits timeout prefix hint policy algorithm alg format location ref
    reference store backend provider min max regex pattern label description version
    scope scopes required rotation hash reset manager budget usage cost estimate source
    sources process helper command cmd method kind class time at date expression
    selection arn data reason status state digest checksum fingerprint rotated created
    updated spec revision
    """
)
# a name with one of these words names a non-secret token (pagination, idempotency, counts)
_NOT_SECRET_WORDS = _words(
    """
    next page continuation cursor pagination idempotency purchase csrf xsrf max min num
    input output prompt completion total public pub update request generation validity
    check change
    """
)
_DIGEST_WORD = re.compile(r"^(?:sha\d*|md5|crc\d*|hash\w*|digest|checksum)$")


@lru_cache(maxsize=4096)
def name_names_non_secret(name: str) -> bool:
    """A key like `JobId`, `nextPageToken`, `etag`, `location`: its value is not a secret."""
    words = _name_words(name)
    return bool(words) and (
        words[-1] in _NOT_SECRET_LAST
        or any(w in _NOT_SECRET_WORDS for w in words)
        or words[-2:] == ["client", "token"]
        or any(_DIGEST_WORD.match(w) for w in words)
    )


_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_NAME_SEP = re.compile(r"[\s_.\-]+")


def _name_words(name: str) -> list[str]:
    spaced = _CAMEL.sub(r"\1 \2", name)
    return [w for w in _NAME_SEP.split(spaced.lower()) if w]


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Does a variable/key name say its value is a credential? (`DB_PASSWORD`, `apiKey`)"""
    words = _name_words(name)
    if not words or name_names_non_secret(name):
        return False
    if any(w in _SECRET_WORDS for w in words):
        return True
    if "key" in words or "keys" in words:
        i = words.index("key") if "key" in words else words.index("keys")
        return i > 0 and words[i - 1] in _KEY_QUALIFIERS
    joined = "".join(words)
    return any(s in joined for s in ("password", "passwd", "apikey", "secretkey", "accesstoken"))


# ----------------------------------------------------------------------------------------------
# The rules
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One credential format. `needs`/`needs_lower`: literals one of which must be in the line
    (as is / lower-cased) before the regex is tried; they also feed the prefilter."""

    kind: str
    regex: re.Pattern[str]
    group: int | str = 1
    check: Callable[[str, re.Match[str]], bool] | None = None
    needs: tuple[str, ...] = ()
    needs_lower: tuple[str, ...] = ()


def _jwt_ok(value: str, _m: re.Match[str]) -> bool:
    head = value.split(".", 1)[0]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(decoded, dict) and ("alg" in decoded or "typ" in decoded)


def _random_ok(value: str, _m: re.Match[str]) -> bool:
    return not is_placeholder(value) and shannon_entropy(value) >= 3.0


def _mixed_ok(value: str, _m: re.Match[str]) -> bool:
    """Provider keys are random: upper, lower and digits after the fixed prefix."""
    core = re.sub(r"^[a-z]+[\-_](?:[A-Za-z]+-)?", "", value)  # sk-, sk-proj-, hf_
    alnum = re.sub(r"[^A-Za-z0-9]", "", core)
    return not is_placeholder(value) and char_classes(alnum) >= 3 and shannon_entropy(core) >= 3.5


def _url_password_ok(value: str, m: re.Match[str]) -> bool:
    user = m.group("user")
    if value == user or is_placeholder(value) or value.lower() in _PLACEHOLDER_WORDS:
        return False
    return len(value) >= 6 or char_classes(value) >= 2  # not a:b@, abc:xyz@ of documentation


def _assignment_ok(value: str, m: re.Match[str]) -> bool:
    return is_secret_name(m.group("name")) and looks_secret(value.rstrip(_TRAILING), min_len=6)


def _prose_password_ok(value: str, _m: re.Match[str]) -> bool:
    return looks_secret(value.rstrip(_TRAILING), min_len=6)


def _prose_token_ok(value: str, _m: re.Match[str]) -> bool:
    v = value.rstrip(_TRAILING)
    return looks_secret(v, min_len=16) and shannon_entropy(v) >= 3.0


def _bearer_ok(value: str, _m: re.Match[str]) -> bool:
    return looks_random(value.rstrip(_TRAILING), min_len=16)


def _aws_secret_ok(value: str, _m: re.Match[str]) -> bool:
    return char_classes(value) >= 3 and not is_placeholder(value)


_B = r"(?<![A-Za-z0-9_\-])"  # token start
_E = r"(?![A-Za-z0-9_\-])"  # token end
_NAME = r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,80})"
_VALUE = r"(?P<value>[^\s\"'`,;]+)"

_AWS_PREFIXES = (
    "AKIA",
    "ASIA",
    "ABIA",
    "ACCA",
    "AGPA",
    "AIDA",
    "AROA",
    "AIPA",
    "ANPA",
    "ANVA",
    "A3T",
)
_GITLAB_PREFIXES = (
    "glpat",
    "gldt",
    "glrt",
    "glcbt",
    "glptt",
    "glft",
    "glsoat",
    "gloas",
    "glimt",
    "glagent",
)
# words whose presence (lower-cased) lets the name-based rules run (a NAME=value line whose
# value is a long token is found by the long-token anchor even without one of these)
_SECRET_HINTS = (
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "contrase",
    "clave",
    "credential",
    "auth",
    "sig",
    "pat",
    "webhook",
)

# Prose that hands out a credential, one table per language the dream knows: the words for
# the credential, and the verbs that introduce its value ("the password is X", "mon mot de
# passe est X", "das Passwort lautet X", "a senha é X", "la password è X"). A colon or `=`
# introduces it in every language. Written lower case; matched without regard to case.
PROSE_PASSWORD_WORDS: dict[str, tuple[str, ...]] = {
    "en": ("password", "passwd", "passphrase", "pass", "pwd"),
    "es": ("contraseña", "contrasena", "clave"),
    "fr": ("mot de passe", "mot-de-passe", "mdp", "phrase de passe", "phrase secrète"),
    "de": ("passwort", "kennwort", "passphrase", "zugangswort"),
    "pt": ("senha", "palavra-passe", "palavra passe"),
    "it": ("password", "parola d'ordine", "parola chiave"),
}
PROSE_PIN_WORDS: dict[str, tuple[str, ...]] = {
    "en": ("pin", "pin code", "pin number"),
    "es": ("pin", "código pin", "codigo pin"),
    "fr": ("code pin", "code secret", "pin"),
    "de": ("pin", "pin-code", "pin code", "geheimzahl", "pin-nummer"),
    "pt": ("pin", "código pin", "codigo pin"),
    "it": ("pin", "codice pin"),
}
PROSE_TOKEN_WORDS: dict[str, tuple[str, ...]] = {
    "en": ("api key", "api-key", "api_key", "apikey", "token", "secret", "access key",
           "access-key", "access_key", "client secret", "client-secret", "client_secret"),
    "es": ("secreto", "clave api", "clave de api", "clave de acceso"),
    "fr": ("jeton", "clé api", "clé d'api", "clé d'accès", "clé secrète"),
    "de": ("api-schlüssel", "api schlüssel", "zugangsschlüssel", "geheimer schlüssel"),
    "pt": ("chave api", "chave de api", "chave de acesso", "chave secreta"),
    "it": ("chiave api", "chiave di accesso", "chiave segreta"),
}  # fmt: skip
PROSE_VERBS: dict[str, tuple[str, ...]] = {
    "en": ("is", "was"),
    "es": ("es", "era"),
    "fr": ("est", "était", "etait", "c'est", "sera"),
    "de": ("ist", "lautet", "war", "heißt", "heisst", "lautete"),
    "pt": ("é", "era", "foi"),
    "it": ("è", "e'", "era", "é"),
}


def _alt(words: Iterable[str]) -> str:
    """A regex alternation of phrases (longest first; a space matches any run of spaces)."""
    uniq = sorted(set(words), key=len, reverse=True)
    return "|".join(re.escape(w).replace(r"\ ", r"[ \t]+") for w in uniq)


def _every(table: dict[str, tuple[str, ...]]) -> list[str]:
    return [w for ws in table.values() for w in ws]


_VERB = r"(?:=|:(?=[ \t])|(?<![\w'])(?:" + _alt(_every(PROSE_VERBS)) + r")(?![\w'])(?:[ \t]*:)?)"
_PIN_VALUE = r"(?P<value>\d{4,8})(?![\w\-])"


def _needs(table: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The shortest literal of each phrase that the prefilter can look for."""
    return tuple(sorted({w.split()[0].split("-")[0][:6] for w in _every(table)}))


RULES: list[Rule] = [
    Rule(
        "gcp-service-account-key",
        re.compile(
            r'"private_key"\s*:\s*"(-----BEGIN [A-Z ]*PRIVATE KEY-----(?:\\.|[^"\\])*?'
            r'-----END [A-Z ]*PRIVATE KEY-----(?:\\n)?)"'
        ),
        needs=('"private_key"',),
    ),
    Rule(
        "aws-access-key-id",
        re.compile(rf"{_B}((?:{'|'.join(_AWS_PREFIXES[:-1])}|A3T[A-Z0-9])[A-Z0-9]{{16}}){_E}"),
        check=_random_ok,
        needs=_AWS_PREFIXES,
    ),
    Rule(
        "aws-secret-access-key",
        re.compile(
            r"(?i)aws[\w\-. ]{0,20}?(?:secret|key)[\w\-]*[\"'`\]]?\s*(?:=|:=|=>|:)\s*[\"'`]?"
            r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        check=_aws_secret_ok,
        needs_lower=("aws",),
    ),
    Rule(
        "gcp-api-key",
        re.compile(rf"{_B}(AIza[0-9A-Za-z_\-]{{35}}){_E}"),
        check=_random_ok,
        needs=("AIza",),
    ),
    Rule(
        "azure-storage-key",
        re.compile(r"(?i)\bAccountKey\s*=\s*([A-Za-z0-9+/]{40,}={0,2})"),
        needs_lower=("accountkey",),
    ),
    Rule(
        "azure-shared-access-key",
        re.compile(r"(?i)\bSharedAccessKey\s*=\s*([A-Za-z0-9+/]{30,}={0,2})"),
        needs_lower=("sharedaccesskey",),
    ),
    Rule(
        "azure-sas-signature",
        re.compile(r"[?&]sv=\d{4}-\d\d-\d\d&[^\s]*?\bsig=([A-Za-z0-9%+/=]{30,})"),
        needs=("sig=",),
    ),
    Rule(
        "github-token",
        re.compile(rf"{_B}((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{{36,251}}){_E}"),
        check=_random_ok,
        needs=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    Rule(
        "github-token",
        re.compile(rf"{_B}(github_pat_[A-Za-z0-9_]{{50,250}}){_E}"),
        check=_random_ok,
        needs=("github_pat_",),
    ),
    Rule(
        "gitlab-token",
        re.compile(rf"{_B}((?:{'|'.join(_GITLAB_PREFIXES)})-[A-Za-z0-9_\-]{{20,}}){_E}"),
        check=_random_ok,
        needs=tuple(p + "-" for p in _GITLAB_PREFIXES),
    ),
    Rule(
        "anthropic-api-key",
        re.compile(rf"{_B}(sk-ant-[a-z]{{2,8}}\d{{0,3}}-[A-Za-z0-9_\-]{{32,}}){_E}"),
        check=_random_ok,
        needs=("sk-ant-",),
    ),
    Rule(
        "openai-api-key",
        re.compile(rf"{_B}(sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{{32,}}){_E}"),
        check=_mixed_ok,
        needs=("sk-",),
    ),
    Rule(
        "slack-token",
        re.compile(rf"{_B}(xox[abposre]-[0-9A-Za-z\-]{{10,}}){_E}"),
        check=lambda v, m: any(c.isdigit() for c in v) and _random_ok(v, m),
        needs=("xox",),
    ),
    Rule(
        "slack-token",
        re.compile(rf"{_B}(xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{{32,}}){_E}"),
        needs=("xapp-",),
    ),
    Rule(
        "slack-webhook",
        re.compile(
            r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,})"
        ),
        needs=("hooks.slack.com",),
    ),
    Rule(
        "discord-webhook",
        re.compile(
            r"(https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{40,})"
        ),
        needs=("/api/webhooks/",),
    ),
    Rule(
        "stripe-key",
        re.compile(rf"{_B}((?:sk|rk)_(?:live|test)_[0-9A-Za-z]{{20,}}){_E}"),
        check=_random_ok,
        needs=("k_live_", "k_test_"),
    ),
    Rule(
        "stripe-webhook-secret",
        re.compile(rf"{_B}(whsec_[0-9A-Za-z]{{24,}}){_E}"),
        check=_random_ok,
        needs=("whsec_",),
    ),
    Rule(
        "sendgrid-key",
        re.compile(rf"{_B}(SG\.[A-Za-z0-9_\-]{{16,}}\.[A-Za-z0-9_\-]{{30,}}){_E}"),
        needs=("SG.",),
    ),
    Rule("pypi-token", re.compile(rf"{_B}(pypi-AgE[A-Za-z0-9_\-]{{50,}}){_E}"), needs=("pypi-",)),
    Rule(
        "npm-token",
        re.compile(rf"{_B}(npm_[A-Za-z0-9]{{36}}){_E}"),
        check=_random_ok,
        needs=("npm_",),
    ),
    Rule(
        "huggingface-token",
        re.compile(rf"{_B}(hf_[A-Za-z0-9]{{30,}}){_E}"),
        check=_mixed_ok,
        needs=("hf_",),
    ),
    Rule(
        "telegram-bot-token",
        re.compile(rf"{_B}(\d{{8,10}}:AA[0-9A-Za-z_\-]{{33}}){_E}"),
        needs=(":AA",),
    ),
    Rule(
        "jwt",
        re.compile(
            rf"{_B}(eyJ[A-Za-z0-9_\-]{{8,}}\.eyJ[A-Za-z0-9_\-]{{8,}}\.[A-Za-z0-9_\-]{{16,}}){_E}"
        ),
        check=_jwt_ok,
        needs=("eyJ",),
    ),
    Rule(
        "url-password",
        re.compile(
            r"\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://(?P<user>[^\s:/?#@\[\]\"'<>]*):"
            r"(?P<value>[^\s/?#@\"'<>]+)@(?=[A-Za-z0-9\[])"
        ),
        group="value",
        check=_url_password_ok,
        needs=("://",),
    ),
    Rule(
        "bearer-token",
        re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/\-]{16,}=*)"),
        check=_bearer_ok,
        needs_lower=("bearer",),
    ),
    Rule(
        "basic-auth",
        re.compile(r"(?i)\bauthorization:?\s*[\"']?basic\s+([A-Za-z0-9+/]{12,}={0,2})"),
        check=_random_ok,
        needs_lower=("basic",),
    ),
    # NAME=value (shell, .env), NAME: value (YAML), "name": "value" (JSON), name = "value" (code)
    Rule(
        "secret-assignment",
        re.compile(
            r"(?:^|(?<=[\s;{,(\[`]))(?:export\s+|set\s+|setx\s+|\$env:)?[\"']?"
            + _NAME
            + r"[\"']?[ \t]*(?:=|:=|=>|:(?=[ \t\"']))[ \t]*(?P<q>[\"'`]?)"
            + _VALUE
            + r"(?P=q)"
        ),
        group="value",
        check=_assignment_ok,
        needs_lower=_SECRET_HINTS,
    ),
    # prose: "password: X", "la contraseña del wifi es X", "the password is X", "mon mot de
    # passe est X", "das Kennwort lautet X", "a senha é X", "la password è X"
    Rule(
        "password",
        re.compile(
            r"(?i)\b(?:" + _alt(_every(PROSE_PASSWORD_WORDS)) + r")\b"
            r"(?![ \t]+(?:p[úu]blica|public)\b)"
            r"(?:[ \t]+[^\s:=]+){0,6}?[ \t]*" + _VERB + r"[ \t]*[`\"'*]*" + _VALUE
        ),
        group="value",
        check=_prose_password_ok,
        needs_lower=_needs(PROSE_PASSWORD_WORDS),
    ),
    # prose: "the PIN is 4821", "le code PIN de la carte est 4821", "die PIN lautet 4821"
    Rule(
        "pin",
        re.compile(
            r"(?i)(?<![\w\-])(?:" + _alt(_every(PROSE_PIN_WORDS)) + r")(?![\w\-])"
            r"(?:[ \t]+[^\s:=\d]+){0,6}?[ \t]*" + _VERB + r"[ \t]*[`\"'*]*" + _PIN_VALUE
        ),
        group="value",
        check=lambda v, _m: not is_placeholder(v) and len(set(v)) > 1,
        needs_lower=_needs(PROSE_PIN_WORDS),
    ),
    Rule(
        "api-key",
        re.compile(
            r"(?i)(?<![\w\-])(?:" + _alt(_every(PROSE_TOKEN_WORDS)) + r")(?![\w\-])"
            r"(?:[ \t]+[^\s:=]+){0,4}?[ \t]*" + _VERB + r"[ \t]*[`\"'*]*" + _VALUE
        ),
        group="value",
        check=_prose_token_ok,
        needs_lower=_needs(PROSE_TOKEN_WORDS),
    ),
]

# ----------------------------------------------------------------------------------------------
# Prefilter: four cheap passes over the whole text select the candidate lines
# ----------------------------------------------------------------------------------------------
#
# Every rule above, and every detect-secrets plugin we run, needs one of these to match on its
# line: a long token (all provider keys, JWTs, webhooks and quoted high-entropy strings are 20+
# characters of this alphabet), a secret-sounding word followed by an assignment (passwords,
# NAME=value lines, `Authorization:` headers), a URL with a password, or a private-key header.
# Known gaps, by design: provider tokens shorter than 20 characters and Bearer/Basic values
# shorter than 20 without an `Authorization:` on their line.

LONG_TOKEN_ANCHOR = re.compile(r"[A-Za-z0-9_+/=%\-]{20,}")
KEYWORD_ANCHOR = re.compile(  # run on the lower-cased text; few alternatives keep it fast
    r"(?:pass|pwd|secret|token|key|contrase|clave|credential|auth|kennwort|senha|mdp|pin"
    r"|geheim|jeton|clé|schlüssel|chave|chiave|parola d)"
    r"[\w\-.' ]{0,40}?[\"'`\]]?[ \t]*(?:[:=(]|(?<![\w'])(?:"
    + _alt(_every(PROSE_VERBS))
    + r")(?![\w']))"
)
_KEYWORD_ANCHOR_I = re.compile(KEYWORD_ANCHOR.pattern, re.I)
URL_PASSWORD_ANCHOR = re.compile(r"://[^\s/@]*:[^\s/@]*@")
BLOCK_LITERALS = ("BEGIN", "PuTTY-User-Key-File")  # str.find is faster than a regex here


_DIGEST_TOKEN = re.compile(r"[0-9a-fA-F\-]+")  # git SHAs, sha256 sums, UUIDs


def candidate_offsets(text: str) -> list[int]:
    """Offsets of every anchor in `text`, sorted; a line with none holds no finding.

    Long tokens that are plain hex (digests, UUIDs) or the payload of a `data:...;base64,` URI
    do not select their line by themselves: hex secrets come with a name (`API_TOKEN=...`),
    which the keyword anchor selects.
    """
    offsets = []
    for m in LONG_TOKEN_ANCHOR.finditer(text):
        start = m.start()
        if _DIGEST_TOKEN.fullmatch(m.group()) or text.endswith("base64,", 0, start):
            continue
        offsets.append(start)
    lower = text.lower()
    if len(lower) == len(text):
        offsets += [m.start() for m in KEYWORD_ANCHOR.finditer(lower)]
    else:  # a few characters change length when lower-cased: use the slower regex
        offsets += [m.start() for m in _KEYWORD_ANCHOR_I.finditer(text)]
    offsets += [m.start() for m in URL_PASSWORD_ANCHOR.finditer(text)]
    for lit in BLOCK_LITERALS:
        at = text.find(lit)
        while at != -1:
            offsets.append(at)
            at = text.find(lit, at + 1)
    offsets.sort()
    return offsets


_PEM = re.compile(
    r"(?P<begin>-{4,5} ?BEGIN (?P<label>(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?) ?-{4,5})"
    r"(?P<body>[\s\S]{0,40000}?)"
    r"(?P<end>-{4,5} ?END (?P=label) ?-{4,5})"
)
_PEM_OPEN = re.compile(r"-{4,5} ?BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_PUTTY = re.compile(
    r"PuTTY-User-Key-File-\d+:[^\n]*\n(?:[^\n]*\n){0,60}?Private-MAC:[ \t]*[0-9a-fA-F]+"
)


_B64_LINE = re.compile(r"^[\s>\"'`]*([A-Za-z0-9+/=]{40,})[\s\"'`,]*$")


def _body_is_key(body: str) -> bool:
    """At least one full line of base64, as in every real key (not code that builds one)."""
    if _PLACEHOLDER_INSIDE.search(body):
        return False
    return any(_B64_LINE.match(ln) for ln in body.replace("\\n", "\n").splitlines())


_BLANK_LINE = re.compile(r"\n[ \t>]*\n")


def match_private_key(text: str, line_start: int, line_end: int) -> tuple[int, int] | None:
    """The span of a private-key block whose BEGIN (or PuTTY header) is on the given line.

    A PEM block without its END line (a truncated paste) runs to the first blank line.
    """
    m = _PEM_OPEN.search(text, line_start, line_end)
    if m is None:
        at = text.find("PuTTY-User-Key-File-", line_start, line_end)
        putty = _PUTTY.match(text, at) if at != -1 else None
        return (putty.start(), putty.end()) if putty else None
    full = _PEM.match(text, m.start())
    if full is not None:
        return (full.start(), full.end()) if _body_is_key(full.group("body")) else None
    blank = _BLANK_LINE.search(text, m.end())
    end = blank.start() if blank else len(text.rstrip("\n"))
    return (m.start(), end) if _body_is_key(text[m.end() : end]) else None


TRAILING = _TRAILING
