"""Generate a synthetic vault of N notes with realistic links, tags and journal days.

    python bench/gen_vault.py 10000 /tmp/vault10k [--seed 1]

Layout: Home.md (lists most knowledge and project notes), knowledge/<topic>/ notes,
projects/, journal/YYYY-MM-DD.md days with Done/Decided/Learned sections, a few attachments.
Notes carry frontmatter (tags, date, sometimes aliases), headings, wikilinks (some with an
alias, a heading or a block reference, some embeds), inline #tags, code blocks with link-like
text inside, and a small share of broken links. About 2 KB per note on average.
Deterministic for a given seed. Importable: `generate_vault(n, root, seed=0)`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
from dataclasses import dataclass
from pathlib import Path

WORDS = """
agent memory vault note link graph index search sync relay device key token cache journal
project release deploy server client build test bench docker compose network volume image
container kubernetes cluster node pod service ingress secret config schema migration
database postgres sqlite query table column index transaction lock replica backup restore
snapshot log metric trace alert dashboard latency throughput queue worker retry timeout
backoff budget python rust typescript module package import function class method closure
iterator generator async await thread process signal socket protocol http request response
header cookie session auth oauth password passphrase encryption cipher nonce hash signature
certificate rotation policy review decision lesson mistake fix bug regression incident
postmortem runbook checklist morning evening night dream consolidate summary insight pattern
habit routine focus energy garden kitchen recipe bread coffee tea walk bike train travel
city river mountain forest book chapter reading writing draft outline idea question answer
argument evidence source quote meeting call email message chat thread team customer partner
vendor contract invoice budget plan goal milestone roadmap sprint ticket issue branch merge
commit rebase tag version proyecto memoria nota enlace grafo búsqueda servidor cliente
prueba despliegue decisión lección error arreglo copia seguridad clave contraseña cifrado
sueño resumen idea pregunta respuesta mañana noche semana equipo reunión correo tarea
objetivo plan versión rama fusión
""".split()  # noqa: SIM905 - a word list reads better as text

TOPICS = [
    "infra",
    "python",
    "databases",
    "security",
    "writing",
    "cooking",
    "health",
    "finance",
    "tools",
    "networking",
    "ml",
    "people",
]
SECTIONS = [
    "Context",
    "Details",
    "How to",
    "Pitfalls",
    "References",
    "Next steps",
    "Notes",
]
TAGS = [
    "howto",
    "lesson",
    "decision",
    "reference",
    "idea",
    "todo",
    "infra/docker",
    "infra/k8s",
    "lang/python",
    "lang/rust",
    "people",
    "reading",
    "health",
    "money",
    "tooling",
    "meta",
]


@dataclass
class GenStats:
    notes: int
    files: int
    bytes: int
    links: int
    broken: int


def _title(rng: random.Random, used: set[str]) -> str:
    while True:
        k = rng.choice((2, 3, 3, 4))
        t = " ".join(rng.choice(WORDS) for _ in range(k)).capitalize()
        if t.casefold() not in used:
            used.add(t.casefold())
            return t


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _paragraph(rng: random.Random, words: int) -> str:
    out, left = [], words
    while left > 0:
        n = min(left, rng.randint(6, 16))
        out.append(_sentence(rng, n))
        left -= n
    return " ".join(out)


def generate_vault(n: int, root: str | Path, seed: int = 0) -> GenStats:
    """Write a vault of `n` notes (Home.md included) under `root` (created if missing)."""
    rng = random.Random(seed)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    n_journal = max(1, int(n * 0.30))
    n_projects = max(1, int(n * 0.08))
    n_knowledge = max(1, n - 1 - n_journal - n_projects)
    used: set[str] = set()

    # (path without .md, title, link text that reaches it uniquely)
    knowledge: list[tuple[str, str, str]] = []
    dup_names: list[str] = []
    for i in range(n_knowledge):
        topic = rng.choice(TOPICS)
        if i % 97 == 5 and knowledge:  # a few same-named notes in two topics
            title = knowledge[-1][1]
            other = rng.choice(
                [t for t in TOPICS if f"knowledge/{t}/" not in knowledge[-1][0] + "/"]
            )
            topic = other
            dup_names.append(title)
        else:
            title = _title(rng, used)
        knowledge.append((f"knowledge/{topic}/{title}", title, title))
    dups = {t.casefold() for t in dup_names}
    knowledge = [(p, t, p if t.casefold() in dups else t) for p, t, _ in knowledge]
    projects = []
    for _ in range(n_projects):
        title = _title(rng, used)
        projects.append((f"projects/{title}", title, title))
    start = dt.date(2024, 12, 31) - dt.timedelta(days=n_journal - 1)
    days = [start + dt.timedelta(days=i) for i in range(n_journal)]
    attachments = [f"attachments/diagram-{i}.png" for i in range(max(1, n // 500))]

    # about 1% of knowledge notes are never linked to (orphans) nor listed in Home.md
    unlinked = {p for i, (p, _, _) in enumerate(knowledge) if i % 100 == 7}
    targets = [t for t in knowledge if t[0] not in unlinked] + projects
    # each note's sections and block ids are decided up front, so links can point at them
    shape: dict[str, tuple[list[str], list[int]]] = {}
    for path, _, _ in knowledge + projects:
        secs = rng.sample(SECTIONS, rng.randint(2, 4))
        blocks = [j for j in range(len(secs)) if rng.random() < 0.25]
        shape[path] = (secs, blocks)
    stats = GenStats(notes=0, files=0, bytes=0, links=0, broken=0)

    def link(src_rng: random.Random) -> str:
        stats.links += 1
        r = src_rng.random()
        if r < 0.006:
            stats.broken += 1
            return f"[[{_title(src_rng, set())} (missing)]]"
        path, title, text = src_rng.choice(targets)
        secs, blocks = shape[path]
        if r < 0.15:
            return f"[[{text}|{title.lower()}]]"
        if r < 0.22:
            heading = src_rng.choice(secs) if src_rng.random() < 0.97 else "Gone section"
            return f"[[{text}#{heading}]]"
        if r < 0.24 and blocks:
            return f"[[{text}#^b{src_rng.choice(blocks)}]]"
        if r < 0.25:
            return f"![[{text}]]"
        return f"[[{text}]]"

    def write(rel: str, text: str) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        p.write_bytes(data)
        stats.bytes += len(data)
        stats.notes += 1

    def body(title: str, words: int, secs: list[str], blocks: list[int]) -> str:
        lines = [f"# {title}", ""]
        per = max(20, words // len(secs))
        for j, sec in enumerate(secs):
            lines += [f"## {sec}", ""]
            para = _paragraph(rng, per).split(". ")
            # sprinkle links and tags into sentences
            for k in range(len(para)):
                r = rng.random()
                if r < 0.35:
                    para[k] += " see " + link(rng)
                elif r < 0.42:
                    para[k] += " #" + rng.choice(TAGS)
            lines.append(". ".join(para))
            if j in blocks:
                lines += ["", f"- {_sentence(rng, 8)} {link(rng)}", f"- {_sentence(rng, 6)} ^b{j}"]
            if rng.random() < 0.12:
                lines += ["", "```python", "# [[not a link]] #not-a-tag", "x = vault['key']", "```"]
            if rng.random() < 0.03:
                lines += ["", f"![[{rng.choice(attachments)}]]"]
            lines.append("")
        return "\n".join(lines)

    def frontmatter(tags: list[str], date: dt.date, extra: str = "") -> str:
        return f"---\ntags: [{', '.join(tags)}]\ndate: {date.isoformat()}\n{extra}---\n"

    for path, title, _ in knowledge:
        tags = rng.sample(TAGS, rng.randint(1, 3))
        extra = f"aliases: [{title.split()[0]}]\n" if rng.random() < 0.2 else ""
        date = dt.date(2023, 1, 1) + dt.timedelta(days=rng.randint(0, 700))
        text = frontmatter(tags, date, extra) + body(title, rng.randint(150, 420), *shape[path])
        write(path + ".md", text)
    for path, title, _ in projects:
        date = dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 360))
        head = frontmatter(["project"], date, "status: active\n")
        text = head + body(title, rng.randint(200, 450), *shape[path])
        text += f"\n## Decisions\n\n- {_sentence(rng, 10)} {link(rng)}\n- {_sentence(rng, 9)}\n"
        write(path + ".md", text)
    for day in days:
        lines = [f"---\ntags: [journal]\ndate: {day.isoformat()}\n---", f"# {day.isoformat()}", ""]
        for sec in ("Done", "Decided", "Learned"):
            lines += [f"## {sec}", ""]
            for _ in range(rng.randint(1, 5)):
                item = _sentence(rng, rng.randint(8, 20))
                if rng.random() < 0.6:
                    item += " " + link(rng)
                lines.append(f"- {item}")
            lines.append("")
        if rng.random() < 0.3:
            lines += ["## Dreaming", "", f"- Consolidated {link(rng)}.", ""]
        write(f"journal/{day.isoformat()}.md", "\n".join(lines))
    home = ["---", "tags: [home]", "---", "# Home", "", "## Knowledge", ""]
    for topic in TOPICS:
        items = [
            (p, t, x)
            for p, t, x in knowledge
            if p.startswith(f"knowledge/{topic}/") and p not in unlinked
        ]
        if items:
            home += [f"### {topic.capitalize()}", ""]
            home += [f"- [[{x}]]" for p, t, x in items if rng.random() < 0.97]
            home.append("")
    home += ["## Projects", ""] + [f"- [[{x}]]" for _, _, x in projects] + [""]
    write("Home.md", "\n".join(home))
    for a in attachments:
        p = root / a
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(64)))
        stats.files += 1
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int, help="number of notes")
    ap.add_argument("dir", type=Path, help="where to write the vault")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    s = generate_vault(args.n, args.dir, args.seed)
    per_note = s.bytes / max(1, s.notes)
    print(
        f"{s.notes} notes, {s.files} attachments, {s.bytes / 1e6:.1f} MB ({per_note:.0f} B/note), "
        f"{s.links} links ({s.broken} broken) in {args.dir}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
