"""The README stays what a newcomer needs, and every relative link in the docs resolves (#39:
a 46 KB README buried the server setup under pages of benchmark analysis)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
EXAMPLES = {("docs/vault.md", "Note.md")}  # a wikilink shown as an example, not a link


def test_the_readme_is_short_and_links_to_the_detail() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) < 8_000
    for page in (
        "docs/benchmarks.md",
        "docs/server-setup.md",
        "docs/commands.md",
        "CONTRIBUTING.md",
    ):
        assert f"]({page})" in text, page
    assert "relay" in text and "phone" in text and "server" in text  # the four-device picture
    assert "![" in text  # a screenshot


def test_every_relative_link_in_the_docs_resolves() -> None:
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            rel = (str(page.relative_to(ROOT)), target)
            if target.startswith(("http://", "https://", "mailto:")) or rel in EXAMPLES:
                continue
            if not (page.parent / target).exists():
                broken.append(rel)
    assert broken == []
