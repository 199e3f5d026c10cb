"""The mass-deletion guard."""

from __future__ import annotations

import pytest

from companion.errors import CompanionError
from companion.sync.round.guard import MassDeleteRefused, check_mass_delete, is_mass_delete


@pytest.mark.parametrize(
    ("deletes", "total", "ratio", "refused"),
    [
        (0, 1000, 0.5, False),
        (9, 10, 0.5, False),  # fewer than min_files: a small vault stays usable
        (2, 3, 0.5, False),  # ...most of it may go without a question
        (3, 3, 0.5, True),  # but every synced file at once is an emptied folder, at any size
        (1, 1, 0.5, True),
        (4, 3, 0.5, True),  # a stale index: more deletes than files
        (3, 3, 1.0, False),  # ratio 1 still never asks
        (0, 0, 0.5, False),
        (10, 10, 0.5, True),  # an emptied small vault
        (500, 1000, 0.5, False),  # exactly the share is allowed
        (501, 1000, 0.5, True),
        (1000, 1000, 0.9, True),  # emptied or unmounted folder
        (50, 1000, 0.0, True),  # ratio 0: any real batch asks
        (1000, 1000, 1.0, False),  # ratio 1: never asks
        (20, 0, 0.5, True),  # a stale index claiming more deletes than files
    ],
)
def test_thresholds(deletes: int, total: int, ratio: float, refused: bool) -> None:
    assert is_mass_delete(deletes, total, ratio) is refused
    if refused:
        with pytest.raises(MassDeleteRefused):
            check_mass_delete(deletes, total, ratio)
        check_mass_delete(deletes, total, ratio, allow=True)  # explicit confirmation
    else:
        check_mass_delete(deletes, total, ratio)


def test_min_files_is_configurable() -> None:
    assert is_mass_delete(3, 4, 0.5, min_files=2)
    assert not is_mass_delete(3, 4, 0.5, min_files=5)


def test_message_tells_the_person_what_to_do() -> None:
    with pytest.raises(CompanionError) as exc:
        check_mass_delete(734, 1000, 0.5)
    msg = str(exc.value)
    assert "734 of 1000" in msg and "73%" in msg and "50%" in msg
    assert "companion sync --allow-mass-delete" in msg and "mounted" in msg
    assert exc.value.exit_code == 1


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        is_mass_delete(1, 10, 1.5)
    with pytest.raises(ValueError):
        is_mass_delete(-1, 10, 0.5)
