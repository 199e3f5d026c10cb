"""The meaning-critical tokens of a statement (issue 16, items 5 and 9): values, negations and
hedges decide grounding, sameness and contradiction, where word overlap cannot."""

from __future__ import annotations

import pytest

from companion.dream.meaning import contradicts, grounding_problem, same_statement, value_tokens


@pytest.mark.parametrize(
    ("text", "quote"),
    [
        ("Publica en 0.0.0.0.", "El servidor publica en 127.0.0.1 por defecto."),
        ("The backup runs at 04:00.", "The backup runs at 03:00 every night."),
        ("El bot responde con emojis.", "El bot responde sin emojis."),
        ("The NAS wakes at 01:30.", "The NAS usually wakes at 01:30."),
        ("PostgreSQL 15 needs pg_upgrade.", "PostgreSQL 16 needs pg_upgrade."),
        ("Logs go to /var/log/station.", "Logs go to /var/log/weather."),
        ("Restic needs --limit-download.", "Restic needs --limit-upload on the uplink."),
        ("The sensor is on address 0x77.", "The sensor answers on address 0x76."),
        ("Do not push to main.", "Push to main after the tests pass."),
        ("It might fail on NFS.", "It fails on NFS."),
        ("Deploy on 2026-12-02.", "Deploy on 2026-12-01."),
        # a bound turned round: "no pasa de 40" is "at most 40", "pasa de 40" "more than 40"
        (
            "Mientras ZFS hace el scrub, el NAS pasa de 40 MB/s.",
            "Mientras ZFS hace el scrub, el NAS no pasa de 40 MB/s.",
        ),
        ("The NAS goes over 40 MB/s during a scrub.", "The NAS stays under 40 MB/s in a scrub."),
        ("The NAS runs at 40 MB/s during a scrub.", "The NAS runs under 40 MB/s during a scrub."),
        # a comparative turned round (issue 40)
        (
            "Feedback arrives slower for chapters under 6,000 words.",
            "feedback arrives faster for chapters under 6,000 words",
        ),
    ],
)
def test_changed_meaning_is_not_grounded(text, quote):
    assert grounding_problem(text, quote) is not None


@pytest.mark.parametrize(
    ("text", "quote"),
    [
        ("The server listens on 127.0.0.1.", "the server listens on 127.0.0.1 by default"),
        ("El bot responde sin emojis.", "Recuerda: el bot responde sin emojis, siempre."),
        ("Backups usually start at 03:00.", "backups usually start at 03:00, after the dream"),
        ("Set SystemMaxUse=200M for journald.", "journald needs SystemMaxUse=200M on the Pi"),
        ("During a scrub the NAS stays under 40 MB/s.", "the NAS stays below 40 MB/s in a scrub"),
        (
            "Chapters under 6,000 words get feedback sooner.",
            "feedback arrives faster under 6,000 words",
        ),
    ],
)
def test_faithful_restatements_are_grounded(text, quote):
    assert grounding_problem(text, quote) is None


def test_values_are_kept_whole():
    assert value_tokens("Call pi@weather.local at 03:00, then v1.2.3 in ~/bin.") == [
        "pi@weather.local",
        "03:00",
        "v1.2.3",
        "~/bin",
    ]


def test_sameness_by_containment_and_paraphrase():
    long = "Restic necesita --limit-upload en la subida de casa o las videollamadas se cortan."
    assert same_statement("Restic necesita --limit-upload en la subida de casa.", long)
    assert same_statement(
        "[[Blog]]: publicar los martes por la mañana.",
        "[[Blog]] las entradas se publican los martes por la mañana.",
    )
    assert not same_statement(
        "Backups start at 04:30 every night.", "Backups start at 03:00 every night."
    )
    assert not same_statement(
        "Enable I2C with raspi-config before wiring.",
        "Disable I2C with raspi-config before wiring.",
    )
    assert not same_statement("El bot responde con emojis.", "El bot responde sin emojis.")


def test_contradiction_is_the_same_subject_with_another_value_or_polarity():
    assert (
        contradicts(
            "Las copias del NAS empiezan a las 04:30.", "Las copias del NAS empiezan a las 03:00."
        )
        == "value"
    )
    assert (
        contradicts(
            "El bot no usa emojis en las respuestas.", "El bot usa emojis en las respuestas."
        )
        == "negation"
    )
    assert contradicts("Backups start at 03:00.", "The NAS sleeps at 01:30 every night.") is None
    assert contradicts("Lucía likes tea with milk.", "Lucía likes tea with milk.") is None
