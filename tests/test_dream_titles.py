"""Note titles derived from a lesson keep times and ratios whole (a colon inside a word is not a
phrase break)."""

from companion.dream.topics import derive_title


def test_time_of_day_is_not_cut_at_its_colon() -> None:
    assert derive_title("the NAS is called atlas and wakes up at 01:30.") == (
        "The NAS is called atlas and wakes up at 01 30"
    )


def test_leading_phrase_before_colon_space_is_the_title() -> None:
    assert derive_title("Backups on the NAS: restic at 03:00 every night") == "Backups on the NAS"
