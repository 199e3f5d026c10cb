"""detect-secrets, run in-process on the lines our prefilter selects.

We use detect-secrets' plugin objects directly (`analyze_string`) rather than its file scanner:
no baseline, no global settings, no network verification, and only on candidate lines, which
keeps a 10,000-note scan within a few seconds. Its heuristic filters (sequential strings, UUIDs,
templates, `$VAR`, indirect references, id-like names) are applied as it applies them.

Plugins left out, and why (measured on tests/corpus/secrets/negative):
- HexHighEntropyString: every git SHA and sha256 in a note is "high-entropy hex".
- IPPublicDetector: an IP address is not a credential.
- PrivateKeyDetector: reports the BEGIN label, not the key; our multi-line rule reports the
  whole block so `move` can take it out.
- TwilioKeyDetector: `AC...`/`SK...` are account and key SIDs (identifiers), not secrets.
- BasicAuthDetector, TelegramBotTokenDetector: our rules for the same formats are stricter
  (placeholders like `user:pass@` in documentation; Telegram's `AA` marker and token bounds).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.filters import heuristic
from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin

from companion.secrets.rules import (
    is_placeholder,
    looks_secret,
    name_names_non_secret,
    shannon_entropy,
)

# detect-secrets plugin class name -> our kind
_KINDS = {
    "AWSKeyDetector": "aws-access-key-id",
    "ArtifactoryDetector": "artifactory-token",
    "AzureStorageKeyDetector": "azure-storage-key",
    "BasicAuthDetector": "url-password",
    "CloudantDetector": "cloudant-credentials",
    "DiscordBotTokenDetector": "discord-bot-token",
    "GitHubTokenDetector": "github-token",
    "GitLabTokenDetector": "gitlab-token",
    "IbmCloudIamDetector": "ibm-cloud-iam-key",
    "IbmCosHmacDetector": "ibm-cos-hmac-key",
    "JwtTokenDetector": "jwt",
    "MailchimpDetector": "mailchimp-key",
    "NpmDetector": "npm-token",
    "OpenAIDetector": "openai-api-key",
    "PypiTokenDetector": "pypi-token",
    "SendGridDetector": "sendgrid-key",
    "SlackDetector": "slack-token",
    "SoftlayerDetector": "softlayer-credentials",
    "SquareOAuthDetector": "square-oauth-secret",
    "StripeDetector": "stripe-key",
    "TelegramBotTokenDetector": "telegram-bot-token",
    "TwilioKeyDetector": "twilio-key",
    "KeywordDetector": "secret-keyword",
    "Base64HighEntropyString": "high-entropy-string",
}
_SKIPPED = {
    "HexHighEntropyString",
    "IPPublicDetector",
    "PrivateKeyDetector",
    "BasicAuthDetector",
    "TelegramBotTokenDetector",
    "TwilioKeyDetector",
}
BASE64_ENTROPY_LIMIT = 4.5  # detect-secrets' default; random base64 of 20+ chars is ~4.6-5.5


@dataclass(frozen=True)
class DsHit:
    kind: str
    value: str
    plugin: str
    start: int
    end: int


def _load_plugins() -> list[BasePlugin]:
    plugins: list[BasePlugin] = []
    cls: Any  # detect-secrets' plugin classes (their constructors take plugin-specific keywords)
    for cls in get_mapping_from_secret_type_to_class().values():
        name = cls.__name__
        if name in _SKIPPED or name not in _KINDS:
            continue
        if name == "Base64HighEntropyString":
            plugins.append(cls(limit=BASE64_ENTROPY_LIMIT))
        else:
            plugins.append(cls())
    # specific formats first, then keyword, then entropy: overlap resolution keeps the first
    plugins.sort(
        key=lambda p: (
            isinstance(p, HighEntropyStringsPlugin),
            type(p).__name__ == "KeywordDetector",
        )
    )
    return plugins


PLUGINS = _load_plugins()

# Cheap gates: a plugin runs on a line only if one of its literals is in it (as is / lower).
GATES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "AWSKeyDetector": (("AKIA", "ASIA", "ABIA", "ACCA", "A3T"), ("aws",)),
    "ArtifactoryDetector": (("AKC", "AP"), ()),
    "AzureStorageKeyDetector": (("AccountKey",), ()),
    "CloudantDetector": ((), ("cl",)),
    "DiscordBotTokenDetector": ((), ("discord", "token", "bot")),
    "GitHubTokenDetector": (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), ()),
    "GitLabTokenDetector": (("gl", "GR1348941"), ()),
    "IbmCloudIamDetector": ((), ("key", "pwd", "pass", "token")),
    "IbmCosHmacDetector": ((), ("secret",)),
    "JwtTokenDetector": (("eyJ",), ()),
    "MailchimpDetector": (("-us",), ()),
    "NpmDetector": (("_authToken",), ()),
    "OpenAIDetector": (("T3BlbkFJ",), ()),
    "PypiTokenDetector": (("pypi-",), ()),
    "SendGridDetector": (("SG.",), ()),
    "SlackDetector": (("xox", "hooks.slack"), ()),
    "SoftlayerDetector": ((), ("softlayer", "sl")),
    "SquareOAuthDetector": (("sq0csp-",), ()),
    "StripeDetector": (("k_live_",), ()),
    "KeywordDetector": ((), ("key", "pass", "pwd", "secret", "contrase")),
    "Base64HighEntropyString": (("'", '"'), ()),
}
# these plugins only ever match quoted values
_NEEDS_QUOTES = {"KeywordDetector", "Base64HighEntropyString"}
_BY_LITERAL: dict[str, set[int]] = {}
_BY_LOWER: dict[str, set[int]] = {}
_UNGATED: set[int] = set()
for _i, _p in enumerate(PLUGINS):
    _case, _low = GATES.get(type(_p).__name__, ((), ()))
    if not _case and not _low:
        _UNGATED.add(_i)
    for _lit in _case:
        _BY_LITERAL.setdefault(_lit, set()).add(_i)
    for _lit in _low:
        _BY_LOWER.setdefault(_lit, set()).add(_i)


def _plugins_for(present: set[str], present_lower: set[str]) -> list[int]:
    idx = set(_UNGATED)
    for lit in present:
        idx |= _BY_LITERAL.get(lit, set())
    for lit in present_lower:
        idx |= _BY_LOWER.get(lit, set())
    return sorted(idx)


_HASH_PREFIX = re.compile(r"^(?:sha\d+|md5)-", re.I)
# the key a quoted value is assigned to: `"JobId": "..."`, `etag = '...'`, `--upload-id "..."`
_KEY_BEFORE = re.compile(r"(?:([A-Za-z_][\w\-.]*)[\"'\]]?\s*(?:=>|:=|[:=])|--([\w\-]+))\s*[\"']$")


def _slug_like(value: str) -> bool:
    """`export-ami-1234567890abcdef0`, `awseb-e-stack-AutoScalingGroup-QSB2`: named resources."""
    words = [p for p in re.split(r"[-_./]", value) if len(p) >= 3 and p.isalpha()]
    return len(words) >= 2


def _entropy_context_ok(value: str, line: str, start: int) -> bool:
    m = _KEY_BEFORE.search(line, 0, start)
    name = (m.group(1) or m.group(2)) if m else None
    if name and name_names_non_secret(name):
        return False
    if "=" in value.rstrip("="):
        return False  # key=value text, not an encoded secret
    return not _slug_like(value) and not value.startswith("/")


@lru_cache(maxsize=256)
def _indirect_reference(line: str) -> bool:
    return heuristic.is_indirect_reference(line)


def _filtered(plugin: BasePlugin, value: str, line: str, start: int) -> bool:
    """detect-secrets' own heuristic filters, plus our placeholder check."""
    if not value or is_placeholder(value):
        return True
    if heuristic.is_sequential_string(value) or heuristic.is_templated_secret(value):
        return True
    if heuristic.is_prefixed_with_dollar_sign(value) or heuristic.is_not_alphanumeric_string(value):
        return True
    if isinstance(plugin, RegexBasedDetector):
        return False  # a specific format: only the value checks above apply
    if heuristic.is_potential_uuid(value) or heuristic.is_likely_id_string(value, line, plugin):
        return True
    if _indirect_reference(line):
        return True
    if isinstance(plugin, HighEntropyStringsPlugin):
        if shannon_entropy(value) <= plugin.entropy_limit:
            return True
        # a digest with its algorithm prefix (npm integrity), or a value with no digits
        if _HASH_PREFIX.match(value) or not any(c.isdigit() for c in value) or len(value) > 200:
            return True  # a digest, a word, or encoded data (credentials are short)
        return not _entropy_context_ok(value, line, start)
    # KeywordDetector
    m = _KEY_BEFORE.search(line, 0, start)
    if m and name_names_non_secret(m.group(1) or m.group(2)):
        return True
    return not looks_secret(value, min_len=6)


def _regex_values(plugin: RegexBasedDetector, line: str) -> Iterator[tuple[str, int, int]]:
    """(value, start, end) of each denylist match. A plugin's capture group is the secret when
    it is long enough; a short group is just the format's prefix (`ghp`), so the whole match is."""
    for regex in plugin.denylist:
        for m in regex.finditer(line):
            groups = [i for i in range(1, (regex.groups or 0) + 1) if m.group(i)]
            best = max(groups, key=lambda i: len(m.group(i)), default=0)
            g = best if best and len(m.group(best)) >= 8 else 0
            yield m.group(g), m.start(g), m.end(g)


def _entropy_values(plugin: BasePlugin, line: str) -> Iterator[tuple[str, int, int]]:
    for value in plugin.analyze_string(line):
        at = line.find(value)
        while at != -1:
            yield value, at, at + len(value)
            at = line.find(value, at + 1)


def scan_line(line: str, present: set[str], present_lower: set[str]) -> Iterator[DsHit]:
    """detect-secrets' findings on one line, filtered, with their spans in the line.

    `present`/`present_lower`: the gate literals in the line (see `companion.secrets.gates`).
    """
    quoted = '"' in line or "'" in line or "`" in line
    for i in _plugins_for(present, present_lower):
        plugin = PLUGINS[i]
        name = type(plugin).__name__
        if name in _NEEDS_QUOTES and not quoted:
            continue
        try:
            if isinstance(plugin, RegexBasedDetector):
                found = list(_regex_values(plugin, line))
            else:
                found = list(_entropy_values(plugin, line))
        except Exception:  # a plugin bug must not stop a scan (and must not echo the line)
            continue
        for value, start, end in found:
            if _filtered(plugin, value, line, start):
                continue
            kind = _KINDS[name]
            if kind == "aws-access-key-id" and len(value) == 40:
                kind = "aws-secret-access-key"
            yield DsHit(kind, value, name, start, end)
