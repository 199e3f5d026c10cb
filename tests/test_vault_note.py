"""Parsing one note: frontmatter, headings, wikilinks, tags, block ids (companion.vault.note)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.vault.note import Link, parse_note


def links_of(text: str) -> list[tuple[str, str, str | None, bool]]:
    return [(lk.target, lk.subpath, lk.alias, lk.embed) for lk in parse_note(text, "n.md").links]


def test_frontmatter_tags_date_and_other_keys_kept():
    text = (
        "---\ntags: [alpha, '#beta']\ndate: 2024-05-06\nsource: chat\nrating: 3\n---\n"
        "# Title\nbody\n"
    )
    note = parse_note(text, "knowledge/Topic.md")
    assert note.frontmatter["source"] == "chat"
    assert note.frontmatter["rating"] == 3
    assert note.tags == ["alpha", "beta"]
    assert note.date == dt.date(2024, 5, 6)
    assert note.body == "# Title\nbody\n"
    assert note.body_line == 7
    assert note.title == "Topic"
    assert note.headings[0].text == "Title" and note.headings[0].line == 7
    assert note.warnings == []


def test_frontmatter_tags_as_string_and_legacy_tag_key():
    assert parse_note("---\ntags: one, two three\n---\n", "a.md").tags == ["one", "two", "three"]
    assert parse_note("---\ntag: solo\n---\n", "a.md").tags == ["solo"]


def test_broken_yaml_is_read_as_body_with_a_warning():
    text = "---\ntags: [unclosed\ndate: : :\n---\nSee [[Other]]\n"
    note = parse_note(text, "a.md")
    assert note.frontmatter == {}
    assert note.body == text  # the whole note, frontmatter lines included
    assert note.body_line == 1
    assert len(note.warnings) == 1 and "not valid YAML" in note.warnings[0]
    assert note.links[0].target == "Other" and note.links[0].line == 5


def test_yaml_that_is_not_a_mapping_or_has_an_impossible_date():
    assert "not a mapping" in parse_note("---\n- a\n- b\n---\nx\n", "a.md").warnings[0]
    bad_date = parse_note("---\ndate: 2024-02-30\n---\nx\n", "a.md")
    assert bad_date.frontmatter == {} and "not valid YAML" in bad_date.warnings[0]


def test_unclosed_frontmatter_warns_and_keeps_everything_as_body():
    note = parse_note("---\ntags: [a]\nno closing line\n", "a.md")
    assert note.frontmatter == {} and note.body.startswith("---")
    assert "no closing" in note.warnings[0]


def test_empty_frontmatter_and_empty_note():
    assert parse_note("---\n---\nhello", "a.md").frontmatter == {}
    empty = parse_note("", "e.md")
    assert (empty.body, empty.links, empty.tags, empty.warnings) == ("", [], [], [])


def test_wikilink_forms():
    text = (
        "[[Note]] [[Note|Alias]] [[Note#Heading]] [[Note#^blk]] [[Note^blk2]] "
        "![[image.png]] [[#Local]] [[folder/Deep Note.md|x]] ![[Doc#Sec|shown]]"
    )
    assert links_of(text) == [
        ("Note", "", None, False),
        ("Note", "", "Alias", False),
        ("Note", "Heading", None, False),
        ("Note", "^blk", None, False),
        ("Note", "^blk2", None, False),
        ("image.png", "", None, True),
        ("", "Local", None, False),
        ("folder/Deep Note.md", "", "x", False),
        ("Doc", "Sec", "shown", True),
    ]
    note = parse_note(text, "n.md")
    assert note.links[3].block == "blk" and note.links[2].heading == "Heading"
    assert [lk.target for lk in note.embeds] == ["image.png", "Doc"]


def test_escaped_pipe_in_a_table_is_the_alias_separator():
    assert links_of("| a | [[Note\\|shown]] |") == [("Note", "", "shown", False)]


def test_links_in_code_are_ignored():
    text = (
        "before [[Real]]\n"
        "```python\nx = '[[InFence]]' #notatag\n```\n"
        "~~~~\n[[InTilde]]\n~~~~\n"
        "inline `[[InCode]]` and ``[[Double `tick`]]`` then [[After]]\n"
        "- list\n  ```\n  [[InListFence]]\n  ```\n"
    )
    note = parse_note(text, "n.md")
    assert [lk.target for lk in note.links] == ["Real", "After"]
    assert note.tags == []
    assert note.links[1].line == 8


def test_unclosed_fence_runs_to_the_end():
    assert links_of("[[A]]\n```\n[[B]]\n") == [("A", "", None, False)]


def test_markdown_links_internal_only_and_percent_decoded():
    text = (
        "[one](Some%20Note.md) ![img](pics/a.png) [web](https://x.org/a.md) "
        "[mail](mailto:a@b.c) [anchor](#local) [sec](Other.md#Part%20Two) [spaced](<My Note.md>)"
    )
    got = [(lk.target, lk.subpath, lk.embed, lk.markdown) for lk in parse_note(text, "n.md").links]
    assert got == [
        ("Some Note.md", "", False, True),
        ("pics/a.png", "", True, True),
        ("Other.md", "Part Two", False, True),
        ("My Note.md", "", False, True),
    ]


def test_links_in_frontmatter_properties_count():
    note = parse_note(
        '---\nrelated: "[[Other Note]]"\nup: ["[[Parent]]"]\n---\nbody [[X]]\n', "n.md"
    )
    assert [(lk.target, lk.line) for lk in note.links] == [
        ("Other Note", 2),
        ("Parent", 3),
        ("X", 5),
    ]


def test_line_numbers_with_crlf_and_bom():
    text = "\ufeff---\r\ntags: [a]\r\n---\r\nline four\r\n[[Five]]\r\n\r\n## Seven\r\n"
    note = parse_note(text, "n.md")
    assert note.tags == ["a"]
    assert note.links[0].line == 5
    assert note.headings == [note.headings[0]] and note.headings[0].line == 7
    assert note.headings[0].text == "Seven"


def test_inline_tags_obsidian_rules():
    text = (
        "#start and #nested/tag, #with-dash #under_score #Ünïcode\n"
        "not: a#b, #123 (digits only), #y1984 ok, url http://x.org/#frag, [[Note#Heading]]\n"
        "# Heading is not a tag\n##double-hash is neither\n"
    )
    tags = parse_note(text, "n.md").tags
    assert tags == ["start", "nested/tag", "with-dash", "under_score", "Ünïcode", "y1984"]


def test_tags_dedupe_case_insensitively_keeping_the_first_spelling():
    assert parse_note("---\ntags: [Python]\n---\n#python #PYTHON #rust", "n.md").tags == [
        "Python",
        "rust",
    ]


def test_headings_levels_and_closing_hashes():
    note = parse_note(
        "# One\n  ## Two ##\n####### seven is not a heading\n    # indented code-ish\n###\n", "n.md"
    )
    assert [(h.level, h.text) for h in note.headings] == [(1, "One"), (2, "Two")]


def test_block_ids():
    text = "A paragraph ^para-1\n- item ^item2\n\n^own-line\nnot^inside word\n"
    assert parse_note(text, "n.md").block_ids == ["para-1", "item2", "own-line"]


def test_link_named_tuple_fields():
    link = parse_note("x\n![[Pic.png|200]]", "n.md").links[0]
    assert link == Link("Pic.png", "", "200", True, 2, "![[Pic.png|200]]", False)


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("ab#[]|!^`~-:\n \t*()<>%\\\"'{}é\u0301\x00\ufeff")),
        max_size=300,
    )
)
def test_parse_never_raises_and_line_numbers_stay_in_range(text):
    note = parse_note(text, "fuzz.md")
    n_lines = text.replace("\r\n", "\n").count("\n") + 1
    for link in note.links:
        assert 1 <= link.line <= n_lines
    for h in note.headings:
        assert 1 <= h.line <= n_lines


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_parse_never_raises_on_any_unicode(text):
    parse_note("---\n" + text + "\n---\n" + text, "fuzz.md")


PATHOLOGICAL = {
    "backticks": "`a``b" * 40000,
    "brackets": "[[" * 100000,
    "md links": "[x](" * 60000,
    "fences": "```\n~~~~\n" * 10000,
    "hashes": "#" * 200000,
    "carets": " ^a" * 60000,
    "deep yaml": "---\n" + "[" * 5000 + "\n---\n",
    "yaml aliases": "---\na: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
    "tags: *d\n---\n",
    "unclosed code": "`" + "x" * 400000,
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_input_parses(name):
    """An answer, not a hang (the timeout marker); how fast is bench/bench_vault.py's to say."""
    note = parse_note(PATHOLOGICAL[name], "p.md")
    assert note.links == [] and note.tags == []
