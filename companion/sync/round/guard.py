"""The mass-deletion guard: a round that would delete much of the vault elsewhere stops first.

An emptied or unmounted vault folder, or an index that no longer matches the disk, looks to the
scanner exactly like "the person deleted everything". Propagating that would empty every other
copy, so above a configurable share (`sync.mass_delete_ratio`) the round refuses and asks for an
explicit ``companion sync --allow-mass-delete``.
"""

from __future__ import annotations

from companion.errors import CompanionError

DEFAULT_MIN_FILES = 10


class MassDeleteRefused(CompanionError):
    """A round would delete more than the allowed share of the vault on other devices."""

    def __init__(self, n_deletes: int, n_total: int, ratio: float) -> None:
        share = n_deletes / n_total if n_total else 1.0
        super().__init__(
            f"this sync would delete {n_deletes} of {n_total} files ({share:.0%}) on your other "
            f"devices, more than the {ratio:.0%} allowed by sync.mass_delete_ratio; check that "
            "the vault folder is the right one and is mounted, then, if the deletion is "
            "intended, run `companion sync --allow-mass-delete`"
        )
        self.n_deletes = n_deletes
        self.n_total = n_total
        self.ratio = ratio


def is_mass_delete(
    n_deletes: int, n_total: int, ratio: float, min_files: int = DEFAULT_MIN_FILES
) -> bool:
    """True when deleting `n_deletes` of `n_total` synced files needs confirmation.

    The share must not exceed `ratio` (0 to 1). Fewer than `min_files` deletions never need
    it (small vaults stay usable), unless they are every synced file: that is what an emptied
    or unmounted folder looks like, and a vault of three notes deserves the question as much
    as one of three thousand.
    """
    if not 0 <= ratio <= 1:
        raise ValueError(f"ratio must be between 0 and 1, got {ratio!r}")
    if n_deletes < 0 or n_total < 0:
        raise ValueError("counts must not be negative")
    every_file = n_deletes >= max(n_total, 1)
    if n_deletes < max(min_files, 1) and not every_file:
        return False
    return n_deletes > ratio * max(n_total, n_deletes)


def check_mass_delete(
    n_deletes: int,
    n_total: int,
    ratio: float,
    min_files: int = DEFAULT_MIN_FILES,
    *,
    allow: bool = False,
) -> None:
    """Raise `MassDeleteRefused` when `is_mass_delete` and the person has not allowed it."""
    if not allow and is_mass_delete(n_deletes, n_total, ratio, min_files):
        raise MassDeleteRefused(n_deletes, max(n_total, n_deletes), ratio)
