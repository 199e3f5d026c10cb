"""One lesson, one line, in each of the dream's languages (issue 40): two wordings of one lesson
are a paraphrase; two lessons that differ only in a value's bound, a negation, a hedge or their
subject stay two. The pairs are written for these tests, not taken from the generated worlds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.dream.consolidate import _Known
from companion.dream.meaning import meaning, paraphrase, same_statement

ONE_LESSON = [
    # "unless" is "if ... not"
    (
        "El proxy corta las conexiones largas salvo que keepalive-timeout sea mayor.",
        "Si keepalive-timeout no es mayor, el proxy corta las conexiones largas.",
    ),
    (
        "The proxy drops long connections unless keepalive-timeout is raised.",
        "If keepalive-timeout is not raised, the proxy drops long connections.",
    ),
    # a bound said in other words, function words of the language aside
    (
        "Die Pumpe läuft leiser, wenn der Druck unter 2,5 bar bleibt.",
        "Bei weniger als 2,5 bar Druck läuft die Pumpe leiser.",
    ),
    (
        "Les fichiers de plus de 4 Go cassent la synchronisation du NAS.",
        "La synchronisation du NAS casse avec des fichiers au-dessus de 4 Go.",
    ),
    (
        "Ficheiros com mais de 4 GB quebram a sincronização do NAS.",
        "A sincronização do NAS quebra com ficheiros acima de 4 GB.",
    ),
    (
        "Il forno cuoce meglio il pane sotto 220 gradi con vapore.",
        "Con vapore e meno di 220 gradi il forno cuoce meglio il pane.",
    ),
    # a person's name added after the line: who said it, not what
    (
        "Der Drucker verliert nachts die IP 10.0.0.7 im Stationsnetz (Jonas).",
        "Im Stationsnetz verliert der Drucker nachts die IP 10.0.0.7.",
    ),
]


@pytest.mark.parametrize(("a", "b"), ONE_LESSON)
def test_two_wordings_of_one_lesson_are_one(a, b):
    assert paraphrase(a, b) and paraphrase(b, a)


TWO_LESSONS = [
    # the bound of a value
    (
        "Chapters under 5,000 words come back from the editor faster.",
        "Chapters over 5,000 words come back from the editor faster.",
    ),
    (
        "Kapitel unter 6.000 Wörtern kommen schneller vom Lektorat zurück.",
        "Kapitel über 6.000 Wörtern kommen schneller vom Lektorat zurück.",
    ),
    (
        "Les fichiers de moins de 4 Go cassent la synchronisation du NAS.",
        "Les fichiers de plus de 4 Go cassent la synchronisation du NAS.",
    ),
    (
        "Redis evicts session keys unless maxmemory-policy is volatile-lru.",
        "Redis evicts session keys if maxmemory-policy is volatile-lru.",
    ),
    # a negation in French, German, Portuguese, Italian
    (
        "Le script de sauvegarde ne tourne pas sur le port 8080.",
        "Le script de sauvegarde tourne sur le port 8080.",
    ),
    (
        "Die ePA löscht keine unsignierten Notizen um 00:00.",
        "Die ePA löscht unsignierten Notizen um 00:00.",
    ),
    ("O backup do servidor não roda às 03:00.", "O backup do servidor roda às 03:00."),
    ("Il backup del server non parte alle 03:00.", "Il backup del server parte alle 03:00."),
    (
        "Le serveur de calcul redémarre sans le disque à 03:00.",
        "Le serveur de calcul redémarre avec le disque à 03:00.",
    ),
    # a hedge
    (
        "Der Server startet meistens um 03:00 den Dienst neu.",
        "Der Server startet um 03:00 den Dienst neu.",
    ),
    (
        "Il server di solito riavvia il servizio alle 03:00.",
        "Il server riavvia il servizio alle 03:00.",
    ),
    (
        "Le serveur redémarre souvent le service à 03:00.",
        "Le serveur redémarre le service à 03:00.",
    ),
    # another value, another subject
    (
        "Die Pumpe läuft leiser unter 2,5 bar Druck.",
        "Die Pumpe läuft leiser unter 3,5 bar Druck.",
    ),
    (
        "La sauvegarde du serveur démarre à 03:00 chaque nuit.",
        "Le rapport du serveur part à 03:00 chaque nuit.",
    ),
]


@pytest.mark.parametrize(("a", "b"), TWO_LESSONS)
def test_near_misses_stay_two_lessons(a, b):
    for x, y in ((a, b), (b, a)):
        assert not paraphrase(x, y), (x, y)
        assert not same_statement(x, y), (x, y)


PERSON_EDITED = [
    (
        "- Redis tira las claves de sesión antes de hora salvo que maxmemory-policy sea "
        "volatile-lru (Marta). <!-- src: journal/2026-11-27.md#L8 -->",
        "Si maxmemory-policy no es volatile-lru, Redis tira las claves de sesión antes de hora.",
    ),
    (
        "- Der Drucker verliert nachts die IP 10.0.0.7 im Stationsnetz (Jonas). "
        "<!-- src: journal/2026-11-27.md#L8 -->",
        "Im Stationsnetz verliert der Drucker nachts die IP 10.0.0.7.",
    ),
]


@pytest.mark.parametrize(("line", "again"), PERSON_EDITED)
def test_a_paraphrase_of_a_line_the_person_edited_is_already_said(line, again):
    """The person added a name to the dream's line (it is hers now); another source saying the
    lesson in other words is not written as a second line."""
    text = f"# Note\n\n<!-- dream:begin -->\n{line}\n<!-- dream:end -->\n"
    known = _Known.of(text, lambda _ln: False)  # the ledger: not the dream's any more
    assert known.host(again) is None  # her line gets no source added
    assert known.says(again)


def test_a_different_lesson_beside_the_persons_line_is_written():
    line = "- Der Drucker verliert nachts die IP 10.0.0.7 im Stationsnetz (Jonas)."
    known = _Known.of(f"# Note\n\n{line}\n", lambda _ln: False)
    assert not known.says("Der Drucker behält nachts die IP 10.0.0.8 im Stationsnetz.")
    assert not known.says("Der Drucker verliert nachts nie die IP 10.0.0.7 im Stationsnetz.")


# Issue 40, second pass: causes of second lines found over the generated worlds, each with
# pairs written here (not the generator's) that must merge, and near misses that must not.
ONE_LESSON_MORE = [
    # a setting's name or value written without backticks is a value ("maxmemory-policy",
    # "idle-session-timeout"): two wordings holding it and nothing else of a value merge
    (
        "Postgres pierde las conexiones inactivas de la app salvo que idle-session-timeout "
        "sea cero.",
        "Si idle-session-timeout no es cero, Postgres corta las conexiones inactivas de la app.",
    ),
    (
        "Git coupe les gros envois sauf si http-post-buffer est augmenté.",
        "Tant que http-post-buffer n'est pas augmenté, Git refuse les gros envois.",
    ),
    # German "außer P" alone is "unless P", as "außer wenn P" is
    (
        "Git bricht große Pushes ab, außer http-post-buffer ist erhöht.",
        "Solange http-post-buffer nicht erhöht ist, scheitern große Pushes bei Git.",
    ),
    # a time of day said as a word is a time, as 00:00 is
    (
        "Il gestionale cancella le bozze non salvate a mezzanotte.",
        "Le bozze non salvate spariscono dal gestionale a mezzanotte.",
    ),
    (
        "Das Ticketsystem schließt offene Tickets um Mitternacht automatisch.",
        "Offene Tickets werden um Mitternacht vom Ticketsystem automatisch geschlossen.",
    ),
    (
        "The build farm wipes stale caches at noon on working days.",
        "Stale caches on the build farm are removed at noon on working days.",
    ),
    # a negated "exceeds" / "more than" is an upper bound, its negation the bound's
    (
        "Los informes salen bien si las tablas no pasan de 200 filas.",
        "Con tablas de menos de 200 filas los informes salen bien.",
    ),
    (
        "Le rendu reste fluide tant que la scène ne dépasse pas 200 objets.",
        "Le rendu reste fluide avec moins de 200 objets dans la scène.",
    ),
    (
        "Spreadsheet exports stay quick when a sheet does not exceed 200 rows.",
        "Spreadsheet exports stay quick for a sheet under 200 rows.",
    ),
    (
        "A fila aguenta bem quando os lotes não passam de 500 itens.",
        "Com lotes de menos de 500 itens a fila aguenta bem.",
    ),
]


@pytest.mark.parametrize(("a", "b"), ONE_LESSON_MORE)
def test_more_wordings_of_one_lesson_are_one(a, b):
    assert paraphrase(a, b) and paraphrase(b, a)


TWO_LESSONS_MORE = [
    # another setting value
    (
        "Redis evicts session keys early unless maxmemory-policy is volatile-lru.",
        "Redis evicts session keys early unless maxmemory-policy is allkeys-lru.",
    ),
    (
        "Redis expulsa las claves de sesión antes de tiempo salvo que maxmemory-policy sea "
        "volatile-ttl.",
        "Redis expulsa las claves de sesión antes de tiempo salvo que maxmemory-policy sea "
        "allkeys-lru.",
    ),
    # "außer" against "wenn": unless against if
    (
        "Git bricht große Pushes ab, außer http-post-buffer ist erhöht.",
        "Git bricht große Pushes ab, wenn http-post-buffer erhöht ist.",
    ),
    # another time of day
    (
        "The EHR drops unsigned notes at midnight when the day closes.",
        "The EHR drops unsigned notes at noon when the day closes.",
    ),
    (
        "Le DPI efface les notes non signées à minuit.",
        "Le DPI efface les notes non signées à midi.",
    ),
    # "at most" against "more than", or another bound value
    (
        "Los informes salen bien si las tablas no pasan de 200 filas.",
        "Los informes salen bien si las tablas pasan de 200 filas.",
    ),
    (
        "Spreadsheet exports stay quick when a sheet does not exceed 200 rows.",
        "Spreadsheet exports stay quick when a sheet exceeds 200 rows.",
    ),
    (
        "Le rendu reste fluide tant que la scène ne dépasse pas 200 objets.",
        "Le rendu reste fluide tant que la scène ne dépasse pas 300 objets.",
    ),
    # a negation that is not the bound's stays the statement's
    (
        "Die Pumpe läuft nicht leiser, wenn der Druck nicht über 2,5 bar steigt.",
        "Die Pumpe läuft leiser, wenn der Druck nicht über 2,5 bar steigt.",
    ),
]


@pytest.mark.parametrize(("a", "b"), TWO_LESSONS_MORE)
def test_more_near_misses_stay_two_lessons(a, b):
    for x, y in ((a, b), (b, a)):
        assert not paraphrase(x, y), (x, y)
        assert not same_statement(x, y), (x, y)


PERSON_EDITED_MORE = [
    (
        "- Das Ticketsystem schließt offene Tickets um Mitternacht automatisch (Jonas). "
        "<!-- src: journal/2026-11-27.md#L8 -->",
        "Offene Tickets werden um Mitternacht vom Ticketsystem automatisch geschlossen.",
    ),
    (
        "- Git coupe les gros envois sauf si http-post-buffer est augmenté (Aurélie). "
        "<!-- src: journal/2026-11-27.md#L8 -->",
        "Tant que http-post-buffer n'est pas augmenté, Git refuse les gros envois.",
    ),
]


@pytest.mark.parametrize(("line", "again"), PERSON_EDITED_MORE)
def test_a_later_nights_paraphrase_of_an_edited_line_is_already_said(line, again):
    """An earlier night's line the person signed, and a later night's source saying it in other
    words with a value that is a word (a time) or a setting's name: said already."""
    text = f"# Note\n\n<!-- dream:begin -->\n{line}\n<!-- dream:end -->\n"
    known = _Known.of(text, lambda _ln: False)
    assert known.says(again)
    assert not known.says(again.replace("Mitternacht", "Mittag").replace("http-post", "http-get"))


# A cap said as a bound that holds its value ("at most", "höchstens", "does not exceed", "ne
# dépasse pas", "cannot go faster than") against the value alone ("throttles it to"); the
# conjunctions of time ("mientras", "pendant", "während") are function words as "while" is.
ONE_LESSON_CAP = [
    (
        "Durante la copia nocturna el enlace no pasa de 20 Mbit/s.",
        "La copia nocturna limita el enlace a 20 Mbit/s mientras dura.",
    ),
    (
        "Pendant la réindexation, la base ne dépasse pas 300 requêtes par seconde.",
        "La réindexation freine la base à 300 requêtes par seconde.",
    ),
    (
        "Während der Sicherung schafft die Leitung höchstens 20 Mbit/s.",
        "Die Sicherung drosselt die Leitung auf 20 Mbit/s.",
    ),
    (
        "During a reindex the database cannot go faster than 300 queries per second.",
        "A reindex throttles the database to 300 queries per second.",
    ),
    (
        "O build do servidor precisa de pelo menos 8 GB de RAM.",
        "O build do servidor precisa de 8 GB de RAM.",
    ),
]


@pytest.mark.parametrize(("a", "b"), ONE_LESSON_CAP)
def test_a_cap_and_the_value_it_holds_are_one_lesson(a, b):
    assert paraphrase(a, b) and paraphrase(b, a)


TWO_LESSONS_CAP = [
    # a strict bound does not hold its value
    (
        "A reindex throttles the database to 300 queries per second.",
        "A reindex keeps the database under 300 queries per second.",
    ),
    (
        "A reindex throttles the database to 300 queries per second.",
        "A reindex keeps the database over 300 queries per second.",
    ),
    # an upper against a lower cap
    (
        "Der Build braucht höchstens 8 GB RAM auf dem Runner.",
        "Der Build braucht mindestens 8 GB RAM auf dem Runner.",
    ),
    # a negated lower bound against the bound itself
    (
        "During a reindex the database cannot go faster than 300 queries per second.",
        "During a reindex the database can go faster than 300 queries per second.",
    ),
    (
        "Durante la copia nocturna el enlace no pasa de 20 Mbit/s.",
        "Durante la copia nocturna el enlace pasa de 20 Mbit/s.",
    ),
    # another value under the same cap
    (
        "Pendant la réindexation, la base ne dépasse pas 300 requêtes par seconde.",
        "La réindexation freine la base à 200 requêtes par seconde.",
    ),
]


@pytest.mark.parametrize(("a", "b"), TWO_LESSONS_CAP)
def test_other_caps_stay_two_lessons(a, b):
    for x, y in ((a, b), (b, a)):
        assert not paraphrase(x, y), (x, y)
        assert not same_statement(x, y), (x, y)


# A value glued to a German noun by a hyphen is the value ("v14-Datenbank" is "Datenbank v14");
# German interrogative and relative pronouns ("wer", "welche") are function words.
ONE_LESSON_GLUED = [
    (
        "Die v14-Datenbank startet nach dem Update nur mit --jit=off neu.",
        "Nach dem Update startet die Datenbank v14 nur mit --jit=off neu.",
    ),
    (
        "Wer Messreihen der v2-Sensoren vergleicht, kalibriert sie mit offset=0.",
        "Messreihen von v2-Sensoren brauchen offset=0, um sie zu vergleichen.",
    ),
]


@pytest.mark.parametrize(("a", "b"), ONE_LESSON_GLUED)
def test_a_value_glued_to_a_noun_is_the_value(a, b):
    assert paraphrase(a, b) and paraphrase(b, a)


def test_german_pronouns_are_no_subject():
    said = meaning("Wer Messreihen vergleicht, welche der Sensor liefert, nimmt offset=0.")
    assert said.stems == meaning("Messreihen vergleicht der Sensor liefert nimmt offset=0.").stems


TWO_LESSONS_GLUED = [
    (
        "Die v15-Datenbank startet nach dem Update nur mit --jit=off neu.",
        "Nach dem Update startet die Datenbank v14 nur mit --jit=off neu.",
    ),
    (
        "Der Pool ist ein Spiegel aus zwei 4-TB-Platten.",
        "Der Pool ist ein Spiegel aus zwei 8-TB-Platten.",
    ),
]


@pytest.mark.parametrize(("a", "b"), TWO_LESSONS_GLUED)
def test_another_glued_value_stays_two_lessons(a, b):
    for x, y in ((a, b), (b, a)):
        assert not paraphrase(x, y), (x, y)
        assert not same_statement(x, y), (x, y)


# Issue 40, third pass: one lesson said with synonymous comparatives ("arrives faster" / "gets
# back sooner") in each language is one line; a comparative of the other direction, another
# name, another value or a negation is another lesson (the comparative is meaning-critical, as
# a negation is).
ONE_LESSON_SYNONYMS = [
    (
        "Build logs arrive faster when the cache stays under 2 GB.",
        "With the cache below 2 GB the build logs come back sooner.",
    ),
    (
        "Los informes llegan más rápido si la tabla tiene menos de 500 filas.",
        "Con menos de 500 filas en la tabla los informes vuelven antes.",
    ),
    (
        "Les rapports arrivent plus vite quand la table reste sous 500 lignes.",
        "Avec moins de 500 lignes dans la table, les rapports reviennent plus tôt.",
    ),
    (
        "Die Berichte kommen schneller, wenn die Tabelle unter 500 Zeilen bleibt.",
        "Mit weniger als 500 Zeilen in der Tabelle sind die Berichte früher da.",
    ),
    (
        "Os relatórios chegam mais rápido quando a tabela fica abaixo de 500 linhas.",
        "Com menos de 500 linhas na tabela os relatórios voltam mais cedo.",
    ),
    (
        "I report arrivano più velocemente se la tabella resta sotto 500 righe.",
        "Con meno di 500 righe nella tabella i report tornano prima.",
    ),
]


@pytest.mark.parametrize(("a", "b"), ONE_LESSON_SYNONYMS)
def test_synonymous_comparatives_are_one_lesson(a, b):
    assert paraphrase(a, b) and paraphrase(b, a)


TWO_LESSONS_DIRECTION = [
    # the other direction of a comparative
    (
        "Build logs arrive faster when the cache stays under 2 GB.",
        "Build logs arrive slower when the cache stays under 2 GB.",
    ),
    (
        "The nightly backup must finish before 03:00 on the NAS.",
        "The nightly backup must finish after 03:00 on the NAS.",
    ),
    (
        "The cache uses more memory with zstd=3 on the NAS.",
        "The cache uses less memory with zstd=3 on the NAS.",
    ),
    (
        "Los informes llegan antes si la tabla no pasa de 500 filas.",
        "Los informes llegan después si la tabla no pasa de 500 filas.",
    ),
    (
        "Les rapports arrivent plus tôt quand la table reste sous 500 lignes.",
        "Les rapports arrivent plus tard quand la table reste sous 500 lignes.",
    ),
    (
        "Die Sicherung läuft schneller mit zstd=3 auf dem NAS.",
        "Die Sicherung läuft langsamer mit zstd=3 auf dem NAS.",
    ),
    (
        "Os relatórios chegam mais cedo quando a tabela fica abaixo de 500 linhas.",
        "Os relatórios chegam mais tarde quando a tabela fica abaixo de 500 linhas.",
    ),
    (
        "Il forno cuoce meglio il pane sotto 220 gradi con vapore.",
        "Il forno cuoce peggio il pane sotto 220 gradi con vapore.",
    ),
    # a comparative on one side only
    (
        "Build logs arrive faster when the cache stays under 2 GB.",
        "Build logs arrive when the cache stays under 2 GB.",
    ),
    # another person
    (
        "Marta returns each chapter by 12 May to the press.",
        "Inés returns each chapter by 12 May to the press.",
    ),
    (
        "Le rapport part chez Aurélie chaque lundi à 09:00.",
        "Le rapport part chez Mathieu chaque lundi à 09:00.",
    ),
]


@pytest.mark.parametrize(("a", "b"), TWO_LESSONS_DIRECTION)
def test_another_direction_or_name_stays_two_lessons(a, b):
    for x, y in ((a, b), (b, a)):
        assert not paraphrase(x, y), (x, y)
        assert not same_statement(x, y), (x, y)


# Properties over every pair this file says is one lesson: changing a value, putting another
# name in, or negating one side never leaves a paraphrase (the pairs carry their own values).
_ALL_ONE = ONE_LESSON + ONE_LESSON_MORE + ONE_LESSON_CAP + ONE_LESSON_GLUED + ONE_LESSON_SYNONYMS
_NEGATE = {"en": " not", "es": " no", "fr": " pas", "de": " nicht", "pt": " não", "it": " non"}


def _bump(text: str, k: int) -> str | None:
    """`text` with its first digit run changed by `k` (None: it has no digit)."""
    import re

    m = re.search(r"\d+", text)
    if not m:
        return None
    return text[: m.start()] + str(int(m.group()) + k) + text[m.end() :]


@given(st.sampled_from(_ALL_ONE), st.integers(min_value=1, max_value=999), st.booleans())
@settings(max_examples=300, deadline=None)
def test_another_value_never_merges(pair, k, flip):
    a, b = pair[::-1] if flip else pair
    other = _bump(b, k)
    if other is None:
        return
    assert not paraphrase(a, other), (a, other)
    assert not same_statement(a, other), (a, other)


@given(
    st.sampled_from(_ALL_ONE),
    st.sampled_from(["Lukas", "Camille", "Giulia", "Beatriz", "Tiago", "Henrik"]),
    st.sampled_from(["Kenji", "Olga", "Yusuf"]),
    st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_another_name_never_merges(pair, one, other, flip):
    a, b = pair[::-1] if flip else pair
    mine, theirs = f"{a.rstrip('.')} for {one}.", f"{b.rstrip('.')} for {other}."
    assert not paraphrase(mine, theirs), (mine, theirs)
    assert not same_statement(mine, theirs), (mine, theirs)


@given(st.sampled_from(_ALL_ONE), st.sampled_from(sorted(_NEGATE.values())), st.booleans())
@settings(max_examples=300, deadline=None)
def test_a_negation_added_never_merges(pair, neg, flip):
    a, b = pair[::-1] if flip else pair
    words = b.split()
    negated = " ".join([words[0], neg.strip(), *words[1:]])
    if meaning(negated).polarity == meaning(b).polarity:
        return  # the word negated nothing new (a double negation)
    assert not paraphrase(a, negated), (a, negated)
    assert not same_statement(a, negated), (a, negated)
