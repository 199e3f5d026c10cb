"""The morning review: one note per night, in the vault, that any Markdown editor shows.

The rule book is docs/review.md; the pure parts (`model`, `diff`, `note`, `blame`, `decide`)
are replayed by the Obsidian plugin from the same vectors (`tests/vectors/review/`), and the
labels both engines write are one table, `labels.json`. The parts that talk to the relay are
`attest` (which changes the relay's history vouches for) and `rounds` (what a device does with
the review notes after each sync round). Qt-free.
"""
