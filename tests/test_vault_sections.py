"""Note sections: find by heading (Obsidian's loose matching), replace, append, add."""

from __future__ import annotations

import pytest

from companion.vault.sections import (
    SectionError,
    add_section,
    append_at_end,
    append_to_section,
    find_section,
    replace_section,
)

NOTE = """---
tags: [x]
---
# Project

Intro.

## Status

Old status.

```
## not a heading
```

## Next steps

- one

### Details

deep

## Notes
last
"""


def test_find_replace_append() -> None:
    s = find_section(NOTE, "status")
    assert s is not None and s.title == "Status"
    out = replace_section(NOTE, s, "New status.")
    assert "Old status." not in out and "New status." in out
    assert "## not a heading" not in out  # it was inside the Status section
    assert out.count("## Next steps") == 1 and out.endswith("last\n")
    nxt = find_section(out, "Next Steps")
    assert nxt is not None
    out2 = append_to_section(out, nxt, "- two")
    # appended after the section's last line, which is the end of its subsection
    assert out2.index("- two") > out2.index("deep") and out2.index("- two") < out2.index("## Notes")


def test_nested_names_and_ambiguity() -> None:
    text = "# A\n## Log\na\n# B\n## Log\nb\n"
    with pytest.raises(SectionError, match="2 sections"):
        find_section(text, "Log")
    s = find_section(text, "B#Log")
    assert s is not None and s.heading == 4
    assert find_section(text, "Missing") is None
    with pytest.raises(SectionError):
        find_section(text, "##")


def test_add_and_append_at_end_keep_the_text_before() -> None:
    assert add_section("", "Done", "- x") == "## Done\n\n- x\n"
    text = "person's line\n"
    out = append_at_end(text, "## Done\n\n- agent")
    assert out.startswith(text) and out.endswith("- agent\n")
