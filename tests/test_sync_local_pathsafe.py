"""Vault-relative path normalisation and containment."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.sync.local.pathsafe import (
    UnsafePath,
    UnusableName,
    fold,
    is_case_insensitive_fs,
    make_parents,
    name_problem,
    normalize,
    resolve_inside,
)


@pytest.mark.parametrize(
    ("raw", "norm"),
    [
        ("Note.md", "Note.md"),
        ("knowledge/topic/Note.md", "knowledge/topic/Note.md"),
        ("knowledge\\win\\Note.md", "knowledge/win/Note.md"),
        ("Cafe\u0301.md", "Caf\u00e9.md"),  # NFD from macOS -> NFC
        (".companion/dreams/2024-05-01.json", ".companion/dreams/2024-05-01.json"),
        (".companionignore", ".companionignore"),
        ("a/..b/c..", "a/..b/c.."),
        # a ':' is a name character (issue 42.2), also after a first letter: not a drive
        ("Q: open questions.md", "Q: open questions.md"),
        ("C:/Windows/x", "C:/Windows/x"),
        ("c:x", "c:x"),
    ],
)
def test_normalize_accepts_and_canonicalises(raw: str, norm: str) -> None:
    assert normalize(raw) == norm


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "/etc/passwd",
        "..",
        "../x",
        "a/../../x",
        "a/./b",
        "a//b",
        "a/",
        "nul\x00byte",
        "tab\tname",
        "a/.companion-tmp-123",
        ".companion-tmp-x/y",
        "\\\\server\\share",
        "latin1-caf\udce9.md",  # a name that is not UTF-8, as Python reads it from the disk
        "lone-\ud800-high.md",
    ],
)
def test_normalize_refuses(bad: str) -> None:
    with pytest.raises(UnsafePath):
        normalize(bad)


@pytest.mark.parametrize("rel", ["Q: open questions.md", "C:/Windows/x", "c:x", "d/E:x.md"])
def test_a_drive_like_name_is_a_file_problem_only_where_windows_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rel: str
) -> None:
    """Where the file system has drive letters a ':' is refused like any ':' (`UnusableName`,
    a problem of that one file), never joined as a drive; elsewhere it stays in the vault."""
    from companion.sync.local import pathsafe

    assert resolve_inside(tmp_path, rel) == tmp_path.resolve().joinpath(*rel.split("/"))
    monkeypatch.setattr(pathsafe, "WINDOWS_NAMES", True)
    with pytest.raises(pathsafe.UnusableName, match="':'"):
        resolve_inside(tmp_path, rel)


def test_unsafe_path_is_a_companion_error_with_a_clean_message() -> None:
    from companion.errors import CompanionError

    with pytest.raises(CompanionError, match="absolute"):
        normalize("/abs")


def test_name_problem() -> None:
    assert name_problem("ok name.md") is None
    assert name_problem("back\\slash") is not None
    assert name_problem("ctl\x01") is not None
    assert name_problem("caf\udce9.md") == "its name is not valid UTF-8 (rename it)"


def test_fold_matches_case_and_unicode_variants() -> None:
    assert fold("Notes/Café.md") == fold("notes/CAFE\u0301.MD")
    assert fold("Straße") == fold("STRASSE")
    assert fold("a.md") != fold("b.md")


def test_resolve_inside_plain(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    p = resolve_inside(tmp_path, "d/new/file.md")
    assert p == Path(os.path.realpath(tmp_path), "d", "new", "file.md")


def test_resolve_inside_refuses_symlinked_parent(tmp_path: Path) -> None:
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    vault.mkdir()
    outside.mkdir()
    (vault / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePath, match="symbolic link"):
        resolve_inside(vault, "link/secret.md")
    # even a link that points back inside the vault is refused
    (vault / "real").mkdir()
    (vault / "inner").symlink_to(vault / "real", target_is_directory=True)
    with pytest.raises(UnsafePath):
        resolve_inside(vault, "inner/x.md")


def test_resolve_inside_refuses_symlink_leaf(tmp_path: Path) -> None:
    (tmp_path / "f.md").symlink_to("/etc/hostname")
    with pytest.raises(UnsafePath):
        resolve_inside(tmp_path, "f.md")


def test_vault_root_itself_may_be_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real, target_is_directory=True)
    assert resolve_inside(alias, "a.md") == Path(os.path.realpath(real), "a.md")


def test_make_parents_creates_folders_inside(tmp_path: Path) -> None:
    p = make_parents(tmp_path, "x/y/z.md")
    assert p.parent.is_dir() and not p.exists()


def test_case_insensitive_probe_matches_reality(tmp_path: Path) -> None:
    (tmp_path / "probe").write_text("x")
    expected = (tmp_path / "PROBE").exists()
    assert is_case_insensitive_fs(tmp_path) is expected
    assert os.listdir(tmp_path) == ["probe"]  # the probe cleaned up after itself


# ----------------------------------------------------------------------------- property

_segment = st.one_of(
    st.sampled_from(["..", ".", "", "link", "up", "inner", "d", "\\..", "..\\..", "/"]),
    st.text(alphabet="ab./\\\x00:~\u0301é", min_size=1, max_size=6),
)
_paths = st.lists(_segment, min_size=1, max_size=5).map("/".join)


@pytest.fixture(scope="module")
def trap_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("trap")
    vault = base / "vault"
    (vault / "d" / "e").mkdir(parents=True)
    (base / "outside").mkdir()
    (vault / "link").symlink_to(base / "outside", target_is_directory=True)
    (vault / "up").symlink_to("..", target_is_directory=True)
    (vault / "d" / "up").symlink_to("../..", target_is_directory=True)
    (vault / "inner").symlink_to(vault / "d", target_is_directory=True)
    return vault


@settings(
    max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rel=_paths)
def test_no_generated_path_resolves_outside_the_vault(trap_vault: Path, rel: str) -> None:
    try:
        p = resolve_inside(trap_vault, rel)
    except UnsafePath:
        return
    root = os.path.realpath(trap_vault)
    # the fully resolved location (following any link) is inside the vault
    real = os.path.realpath(p)
    assert os.path.commonpath([root, real]) == root
    assert real != root
    # and the returned path is the canonical one, NFC
    assert unicodedata.is_normalized("NFC", str(p))


@pytest.mark.parametrize(
    "rel", ["n" * 256 + ".md", "d/" * 2100 + "x.md"], ids=["over-NAME_MAX", "over-PATH_MAX"]
)
def test_a_path_the_file_system_cannot_hold_is_an_unusable_name(tmp_path: Path, rel: str) -> None:
    """Not an OSError out of the round: a problem of that one path, shown cut short."""
    with pytest.raises(UnusableName, match="cannot hold the path") as err:
        make_parents(tmp_path, rel)
    assert isinstance(err.value, UnsafePath) and len(str(err.value)) < 200
    if "/" not in rel:  # looking a name up already tells
        with pytest.raises(UnusableName):
            resolve_inside(tmp_path, rel)
    full = tmp_path / "full"  # any other error is not the name's: it stops the round
    full.write_text("a file where a folder should be")
    with pytest.raises(OSError) as other:
        make_parents(tmp_path, "full/x/y.md")
    assert not isinstance(other.value, UnsafePath)


def test_shown_cuts_a_long_text_around_an_ellipsis() -> None:
    from companion.textsafe import shown

    assert shown("short.md", 80) == "short.md"
    cut = shown("a" * 100 + "/end.md", 40)
    assert len(cut) == 40 and cut.startswith("aaaa") and cut.endswith("end.md")
    assert "\u2026" in cut
    assert shown("x\x1b[31m" + "y" * 100, 20).startswith("x\\x1b[31m")  # escaped, then cut


@pytest.mark.parametrize(
    "path, want",
    [
        ("notes/What is X?.md", "contains '?'"),
        ("Meeting 10:30.md", "contains ':'"),
        ('a "quote".md', "contains '\"'"),
        ("a<b>.md", "contains '<'"),
        ("pipe|d.md", "contains '|'"),
        ("star*.md", "contains '*'"),
        ("trailing./x.md", "ends with a dot or a space"),
        ("x/trailing .md ", "ends with a dot or a space"),
        ("CON.md", "device name"),
        ("sub/lpt1", "device name"),
        ("nul.tar.gz", "device name"),
        ("CONSOLE.md", None),
        ("COM10.md", None),
        ("notes/café 10h30.md", None),
        (".obsidian/app.json", None),
    ],
)
def test_the_names_windows_refuses_as_the_plugin_does(path: str, want: str | None) -> None:
    """The same table as the Obsidian plugin's `windowsNameProblem` test (units.test.ts)."""
    from companion.sync.local.pathsafe import windows_name_problem

    got = windows_name_problem(path)
    if want is None:
        assert got is None
    else:
        assert got is not None and want in got
