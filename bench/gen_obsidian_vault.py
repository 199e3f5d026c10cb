"""Generate a vault shaped like Obsidian's own help vault: F folders of N notes each.

    python bench/gen_obsidian_vault.py /tmp/helpish [--folders 34] [--notes 200] [--seed 0]

Each folder is like one language of the help vault: the same note names in every folder (a
link resolves to the note in its own folder first), topic subfolders, an `Attachments/`
folder, and notes written with the link shapes a real vault uses and a checker must read the
way Obsidian does:

- plain, aliased, heading and block links (about a quarter of them ambiguous: several
  folders have a note of that name), embeds, Markdown links, links in frontmatter,
  `[[Note\\|alias]]` in tables, links in callouts and nested lists (4-space indents);
- headings written in code (``### `hasTag()` ``) and links to them (`[[Functions#hasTag]]`,
  ``[[#`move`|move]]``);
- block ids right after an embed (`![[x.png]]^id`) and after text, and links to them;
- link-like text that is not a link: in fenced and 4-space indented code blocks and in
  inline code.

Every link is valid except a known number planted on purpose (broken links and missing
headings), so a benchmark can check the checker's counts. Deterministic for a given seed.
Importable: `generate(root, folders, notes, seed)` -> GenStats.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

TOPICS = ["Getting started", "Editing", "Linking", "Plugins", "Sync", "Publish", "Bases"]
WORDS = (  # noqa: SIM905 - a word list reads better as text
    "vault note link heading block embed graph canvas sync publish plugin theme setting "
    "property tag search folder file window pane tab sidebar command palette template "
    "daily outline backlink alias callout table list code image audio video pdf export "
    "format syntax shortcut hotkey mobile desktop device account license release"
).split()
FUNCS = ["hasTag", "hasLink", "contains", "startsWith", "format", "move", "rename", "date"]


@dataclass
class GenStats:
    notes: int
    files: int
    bytes: int
    links: int
    broken: int  # links to no file, planted
    missing: int  # links to a heading or block the note lacks, planted
    not_links: int  # link-like text in code, which must not count


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _names(n: int, folder: int) -> list[str]:
    """N note names of one folder; name 0 is `Functions` (headings in code). As in a
    translated vault, most names are the folder's own and every fourth is the same in every
    folder (untranslated): links to those are ambiguous and resolve like Obsidian's."""
    out = ["Functions"]
    i = 0
    while len(out) < n:
        own = "" if i % 4 == 0 else f" ({folder})"
        out.append(
            f"{WORDS[i % len(WORDS)].capitalize()} {WORDS[(i * 7 + 3) % len(WORDS)]} {i}{own}"
        )
        i += 1
    return out


def _functions_note(rng: random.Random) -> str:
    parts = [
        "---\naliases: [Function reference]\ntags: [reference]\n---\n# Functions\n\n"
        f"## Overview\n\n{_words(rng, 20)} ^para-0\n"
    ]
    for f in FUNCS:
        parts.append(
            f"\n### `{f}()`\n\n`file.{f}(value)` returns a value. See [[#`{FUNCS[0]}()`|"
            f'{FUNCS[0]}]] and [[#`move`|move]].\n\n    file.{f}("[[Not a link]]")\n'
        )
    parts.append("\n" + _words(rng, 30) + "\n")
    return "".join(parts)


def generate(root: str | Path, folders: int = 34, notes: int = 200, seed: int = 0) -> GenStats:
    """Write the vault under `root` (which must not exist or be empty)."""
    rng = random.Random(seed)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    st = GenStats(0, 0, 0, 0, 0, 0, 0)
    home_links = []
    for f in range(folders):
        names = _names(notes, f)
        folder = root / f"lang{f:02d}"
        where = {name: (TOPICS[i % len(TOPICS)] if i else "Bases") for i, name in enumerate(names)}
        att = folder / "Attachments"
        att.mkdir(parents=True)
        images = [f"figure-{i}.png" for i in range(notes // 10 + 1)]
        for img in images:
            (att / img).write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
            st.files += 1
        # which notes carry a block id after an embed, and which a block id after text
        fig_owner = {i: names[1 + (i * 13 + 5) % (notes - 1)] for i in range(len(images))}
        for i, name in enumerate(names):
            path = folder / where[name] / f"{name}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            if i == 0:
                text = _functions_note(rng)
                st.links += 2 * len(FUNCS)
                st.not_links += len(FUNCS)
            else:
                text, links, broken, missing, not_links = _note(
                    rng, i, name, names, images, fig_owner, notes
                )
                st.links += links
                st.broken += broken
                st.missing += missing
                st.not_links += not_links
            data = text.encode("utf-8")
            path.write_bytes(data)
            st.bytes += len(data)
            st.notes += 1
        home_links.append(f"- [[lang{f:02d}/Bases/Functions|Functions ({f})]]")
    home = "# Home\n\n" + "\n".join(home_links) + "\n"
    (root / "Home.md").write_text(home, encoding="utf-8")
    st.notes += 1
    st.links += len(home_links)
    st.bytes += len(home)
    return st


def _note(
    rng: random.Random,
    i: int,
    name: str,
    names: list[str],
    images: list[str],
    fig_owner: dict[int, str],
    n: int,
) -> tuple[str, int, int, int, int]:
    """(text, links, planted broken, planted missing anchors, link-like text in code)."""
    nxt, prev, far = names[(i + 1) % n], names[i - 1], names[(i * 7) % n]
    links = broken = missing = not_links = 0
    out: list[str] = []
    if i % 3:
        out.append(f'---\ntags: [help, {rng.choice(WORDS)}]\nrelated: "[[{prev}]]"\n---\n')
        links += 1
    out.append(f"# {name}\n\n{_words(rng, 25)} [[{nxt}]] and [[{far}|{_words(rng, 2)}]].\n")
    links += 2
    out.append(f"\n## Overview\n\n{_words(rng, 30)} ^para-{i}\n")
    out.append(
        f"\nUse [[Functions#hasTag|`hasTag`]] or [[Functions#`move()`]] "
        f"({_words(rng, 8)}), and [[#Overview]] here.\n"
    )
    links += 3
    figs = [k for k, owner in fig_owner.items() if owner == name]
    for k in figs:
        out.append(f"\n![[{images[k]}]]^figure-{k}\n")
        links += 1
    k = i % len(images)
    out.append(f"\nSee [[{fig_owner[k]}#^figure-{k}]] and [[{prev}#^para-{i - 1}]].\n")
    links += 2
    out.append(
        f"\n> [!tip] {_words(rng, 3)}\n> {_words(rng, 10)} [[{far}#Overview]].\n"
        f"> ![[{rng.choice(images)}]]\n"
    )
    links += 2
    out.append(
        f"\n- {_words(rng, 4)} [[{nxt}]]\n    - {_words(rng, 4)} [[{prev}|{_words(rng, 1)}]]\n"
        f"        - [`{FUNCS[i % len(FUNCS)]}()`]({quote(nxt)}.md#Overview)\n"
        f"    - {_words(rng, 5)}\n"
    )
    links += 3
    out.append(
        f"\n| name | link |\n|---|---|\n| {_words(rng, 1)} | [[{far}\\|{_words(rng, 1)}]] |\n"
    )
    links += 1
    out.append(
        f"\n### `{FUNCS[i % len(FUNCS)]}`\n\n{_words(rng, 12)} `[[Not a link {i}]]` "
        f"and ``[[Nor `this`]]``.\n"
    )
    not_links += 2
    out.append(f"\n```md\n[[Not a link {i}]] ![[nope.png]]\n```\n")
    not_links += 2
    out.append(f"\n{_words(rng, 6)}:\n\n    [[Indented code {i}]] #notatag\n    ^notablock\n")
    not_links += 1
    if i % 25 == 0:
        out.append(f"\nA link to nowhere: [[Gone note {i}]].\n")
        links += 1
        broken += 1
    if i % 40 == 0:
        out.append(f"\nA heading that is not there: [[{nxt}#No such heading]].\n")
        links += 1
        missing += 1
    out.append(f"\n{_words(rng, 40)}\n")
    return "".join(out), links, broken, missing, not_links


def add_media(root: str | Path, files: int, total_bytes: int, seed: int = 0) -> tuple[int, int]:
    """Grow a generated vault to `files` files and `total_bytes` bytes with media in its
    `Attachments/` folders (images, a few videos: incompressible bytes, as PNG, WebP and MP4
    are), the way Obsidian's own help vault is mostly attachments by size (11,002 files,
    284 MB). Returns (files added, bytes added). Deterministic for a seed."""
    root = Path(root)
    have = [p for p in root.rglob("*") if p.is_file()]
    n = files - len(have)
    left = total_bytes - sum(p.stat().st_size for p in have)
    if n <= 0 or left <= 0:
        return 0, 0
    rng = random.Random(seed)
    weights = [rng.lognormvariate(0, 1.2) for _ in range(n)]
    for i in range(0, n, 97):  # about 1 % are screen recordings of several MB
        weights[i] *= 60
    scale = left / sum(weights)
    sizes = [max(200, int(w * scale)) for w in weights]
    sizes[-1] += left - sum(sizes)
    folders = sorted(p for p in root.glob("*/Attachments") if p.is_dir()) or [root]
    added = 0
    for i, size in enumerate(sizes):
        kind = "mp4" if i % 97 == 0 else ("png", "webp", "gif", "jpg")[i % 4]
        target = folders[i % len(folders)] / f"media-{i:05d}.{kind}"
        target.write_bytes(rng.randbytes(max(size, 1)))
        added += max(size, 1)
    return n, added


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--folders", type=int, default=34)
    ap.add_argument("--notes", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--files", type=int, help="then add media until the vault has this many files")
    ap.add_argument("--mb", type=float, help="... and this many megabytes (with --files)")
    args = ap.parse_args(argv)
    if args.root.exists() and any(args.root.iterdir()):
        print(f"{args.root} is not empty", file=sys.stderr)
        return 2
    st = generate(args.root, args.folders, args.notes, args.seed)
    print(
        f"{st.notes} notes, {st.files} attachments, {st.bytes / 1e6:.1f} MB, {st.links} links "
        f"({st.broken} broken, {st.missing} to missing headings), {st.not_links} link-like "
        "texts in code"
    )
    if args.files and args.mb:
        n, size = add_media(args.root, args.files, int(args.mb * 1e6), args.seed)
        print(f"added {n} media files, {size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
