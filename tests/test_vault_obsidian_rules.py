"""Obsidian's reading of a note where it differs from a naive one (issue 21).

- Inline code inside a link does not hide the link (``[[#`move`|move]]``), and a heading
  written in code (``### `hasTag()` ``) is a heading: Obsidian matches heading links against
  the heading's text with its Markdown left out.
- A block id right after an embed (``![[x.png]]^id``) is a block id.
- Links in an indented code block (CommonMark: four columns in, not inside a paragraph, relative
  to the list item it belongs to) are not links.

The patterns are written here from those rules, not copied from any vault.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.vault.check import run_check
from companion.vault.code import fence_mask, inline_masks, mask_blocks, mask_code, scan_code_blocks
from companion.vault.note import parse_note
from companion.vault.vault import Vault


def targets(text: str) -> list[str]:
    return [lk.target or "#" + lk.subpath for lk in parse_note(text, "n.md").links]


def write(root, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


# --- 2. inline code inside links and headings -------------------------------------------------


def test_code_inside_a_wikilink_keeps_the_link_whole():
    note = parse_note(
        "Use [[#`move`|move]] to move a file.\n"
        "See [[Tools#`grep` and `sed`]] and [[Functions#hasTag|`hasTag`]].\n",
        "n.md",
    )
    got = [(lk.target, lk.subpath, lk.alias, lk.raw) for lk in note.links]
    assert got == [
        ("", "`move`", "move", "[[#`move`|move]]"),
        ("Tools", "`grep` and `sed`", None, "[[Tools#`grep` and `sed`]]"),
        ("Functions", "hasTag", "`hasTag`", "[[Functions#hasTag|`hasTag`]]"),
    ]


def test_a_link_inside_code_is_still_not_a_link():
    text = (
        "inline `[[InCode]]`, ``[[Double `tick`]]`` and `a [[Spans` past]] the code\n"
        "then [[After]] and `x` [[Between `y` ticks]]\n"
    )
    assert targets(text) == ["After", "Between `y` ticks"]


def test_code_in_a_link_alias_is_not_a_tag():
    note = parse_note("[[Note|`a #notatag`]] and [`b #nope`](Other.md) #real\n", "n.md")
    assert note.tags == ["real"]
    assert [lk.target for lk in note.links] == ["Note", "Other.md"]


def test_headings_written_in_code_are_headings():
    note = parse_note(
        "## `hasTag()`\n### Using `git log` here\n#### ``double`tick``\n```\n# in a fence\n```\n",
        "n.md",
    )
    assert [(h.level, h.text) for h in note.headings] == [
        (2, "`hasTag()`"),
        (3, "Using `git log` here"),
        (4, "``double`tick``"),
    ]


def test_links_to_headings_in_code_resolve_and_a_missing_one_is_reported(tmp_path):
    v = tmp_path / "v"
    write(
        v,
        "Functions.md",
        "# Functions\n\n### `hasTag()`\n\nx\n\n### `move`\n\nUse [[#`move`|move]] here.\n",
    )
    write(
        v,
        "Tags.md",
        "[[Functions#hasTag|`hasTag`]] [[Functions#`hasTag()`]] [[Functions#move]]\n"
        "[[Functions#`nothing`|gone]] [[#`absent`]]\n",
    )
    rep = run_check(Vault(v), tmp_path / "data").to_dict()
    missing = [(m["source"], m["anchor"]) for m in rep["missing_anchors"]]
    assert missing == [("Tags.md", "`absent`"), ("Tags.md", "`nothing`")]
    assert rep["counts"]["links"] == 6


# --- 3. a block id right after an embed --------------------------------------------------------


def test_block_id_right_after_an_embed_or_link():
    note = parse_note(
        "![[diagram.png]]^fig-1\n![[clip.mp4#t=3]]^clip\nsee [[Other]]^ref\n"
        "text ^para\nword^glued\n`code ^incode`\n",
        "n.md",
    )
    assert note.block_ids == ["fig-1", "clip", "ref", "para"]


def test_link_to_a_block_after_an_embed_resolves(tmp_path):
    v = tmp_path / "v"
    write(v, "pics/diagram.png", "png")
    write(v, "Guide.md", "Intro\n\n![[diagram.png]]^diagram-image\n")
    write(v, "Other.md", "[[Guide#^diagram-image]] and [[Guide#^not-there]]\n")
    rep = run_check(Vault(v), tmp_path / "data").to_dict()
    assert [m["anchor"] for m in rep["missing_anchors"]] == ["^not-there"]


# --- 4. indented code blocks --------------------------------------------------------------------


def test_links_in_an_indented_code_block_are_not_links():
    text = (
        "Intro paragraph.\n"
        "\n"
        "    [[InIndentedCode]] #notatag\n"
        "    ^notablock\n"
        "\n"
        "    [[StillCode]] after a blank line\n"
        "\n"
        "After [[Real]]\n"
        "# Heading\n"
        "    [[CodeRightAfterAHeading]]\n"
        "\ttab [[TabCode]]\n"
    )
    note = parse_note(text, "n.md")
    assert [lk.target for lk in note.links] == ["Real"]
    assert note.links[0].line == 8
    assert note.tags == [] and note.block_ids == []


def test_indented_lines_that_are_not_code():
    text = (
        "A paragraph goes on\n"
        "    [[LazyContinuation]] (code cannot interrupt a paragraph)\n"
        "\n"
        "- item\n"
        "    - [[NestedItem]]\n"
        "        - [[DeeperItem]]\n"
        "\t- [[TabNested]]\n"
        "\n"
        "    [[ParagraphInTheItem]] (4 columns: inside the item's content)\n"
        "\n"
        "1. step\n"
        "\n"
        "    [[InOrderedItem]] (content starts at column 3)\n"
        "\n"
        "> [!note] A callout\n"
        "> [[InCallout]]\n"
        ">     [[ContinuesInQuote]]\n"
        "\n"
        "Text ^blk\n"
        "    continues ^blk2\n"
    )
    note = parse_note(text, "n.md")
    assert [lk.target for lk in note.links] == [
        "LazyContinuation",
        "NestedItem",
        "DeeperItem",
        "TabNested",
        "ParagraphInTheItem",
        "InOrderedItem",
        "InCallout",
        "ContinuesInQuote",
    ]
    assert note.block_ids == ["blk", "blk2"]


def test_indented_code_inside_list_items_and_quotes():
    text = (
        "- item\n"
        "\n"
        "      [[CodeInTheItem]] (6 columns: 4 past the item's content)\n"
        "\n"
        "1. step\n"
        "\n"
        "        [[CodeInOrderedItem]]\n"
        "\n"
        "> quoted\n"
        ">\n"
        ">     [[CodeInQuote]]\n"
        "\n"
        "Back out [[Out]]\n"
        "- a\n"
        "- b\n"
        "\n"
        "Paragraph closes the list.\n"
        "\n"
        "    [[CodeAfterTheList]]\n"
    )
    assert targets(text) == ["Out"]


def test_a_fence_inside_an_indented_code_block_does_not_open():
    text = "Para.\n\n    ```\n    [[Code]]\n\n[[AfterTheIndentedFence]]\n"
    assert targets(text) == ["AfterTheIndentedFence"]


def test_fences_keep_their_forgiving_rules_next_to_indented_code():
    text = (
        "- step\n"
        "    ```sh\n"
        "    [[InListFence]]\n"
        "```\n"
        "[[AfterFence]]\n"
        "\n"
        "    indented code\n"
        "> ```\n"
        "> [[InQuotedFence]]\n"
        "> ```\n"
        "[[End]]\n"
    )
    assert targets(text) == ["AfterFence", "End"]


def test_heading_after_indented_code_and_in_code():
    note = parse_note("x\n\n    # not a heading\n# Real\n\n    ## code too\n", "n.md")
    assert [h.text for h in note.headings] == ["Real"]


_ANY_INDENT = re.compile(r"^[ \t>]*(?: {4}|\t)", re.M)


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab`~>-*_=+1.)#[]() \t\n\n\n    ")), max_size=200))
def test_masks_keep_length_and_lines(text):
    for fn in (mask_blocks, mask_code):
        out = fn(text)
        assert len(out) == len(text)
        assert [i for i, c in enumerate(out) if c == "\n"] == [
            i for i, c in enumerate(text) if c == "\n"
        ]
    assert mask_blocks(text) == scan_code_blocks(text)  # the quick test skips no code
    if not _ANY_INDENT.search(text):  # no indented line: only the fences are code blocks
        assert scan_code_blocks(text) == fence_mask(text)


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "text",
    [
        "".join("  " * i + "- x\n" for i in range(3000)) + "x\n\n    [[c]]\n",
        ("x\n\n    [[c]]\n" * 20000),
        ("> " * 5000 + "x\n") * 20,
        "`[[" * 50000 + "]]`" * 50000,
        ("\n" + " " * 3000) * 300 + "\n\n    [[c]]\n",
        "`" + "``x" * 20000 + "\n" + "`a``b" * 40000,
    ],
    ids=["deep lists", "many code blocks", "deep quotes", "ticks and brackets", "spaces", "runs"],
)
def test_block_scan_is_linear(text):
    parse_note(text, "p.md")


# The oracle: CommonMark's code spans within a line, read left to right one character at a
# time; with `keep_links`, a link that starts first is skipped whole.
_LINK_AT = re.compile(r"\[\[[^\[\]\n]+\]\]|\[[^\[\]\n]*\]\([^()\n]*\)")


def _oracle(text: str, keep_links: bool) -> str:
    out = list(text)
    i = 0
    while i < len(text):
        link = _LINK_AT.match(text, i) if keep_links else None
        if link:
            i = link.end()
            continue
        if text[i] != "`":
            i += 1
            continue
        j = i
        while j < len(text) and text[j] == "`":
            j += 1
        n, k = j - i, j
        while k < len(text) and text[k] != "\n":
            if text[k] == "`":
                e = k
                while e < len(text) and text[e] == "`":
                    e += 1
                if e - k == n:
                    out[i:e] = " " * (e - i)
                    j = e
                    break
                k = e
            else:
                k += 1
        i = j
    return "".join(out)


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab``` [[]]()|#\n")), max_size=120))
def test_inline_code_spans_match_the_regex_oracle(text):
    linked, plain = inline_masks(text)
    assert linked == _oracle(text, keep_links=True)
    assert plain == _oracle(text, keep_links=False)
