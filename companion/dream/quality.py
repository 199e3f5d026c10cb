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

`promotion_problem` decides what may enter MEMORY.md / USER.md, which the agent loads into every
session: never code or commands (backticks, shell prompts, a leading command word, code
punctuation), never paths to secrets (`~/.ssh`, `id_rsa`, `.env`, `*.pem`, ...), never a secret
(the secret gate runs before this), and never text the memory store's injection guard refuses.
"""

from __future__ import annotations

import re

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
