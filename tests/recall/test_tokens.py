"""Tokenising for recall: every expectation below is derived by hand from the rules
(NFKC, casefold, Unicode `\\w+` runs, EN/ES/FR/DE stop-words out, single letters out but
single digits kept, tokens over 200 bytes cut to their first 200), not read back from the
implementation.
"""

from __future__ import annotations

import unicodedata

import pytest

from graymatter_tui.core.lexicon import STOPWORDS
from graymatter_tui.core.tokens import MAX_TOKEN_BYTES, term_counts, tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Deploy DEPLOY deploy DePlOy", ["deploy", "deploy", "deploy", "deploy"]),
        ("ΣΊΣΥΦΟΣ", ["σίσυφοσ"]),  # casefold maps both sigmas to σ
        ("Straße STRASSE strasse", ["strasse", "strasse", "strasse"]),  # ß folds to ss
        ("ÉCOLE École école", ["école", "école", "école"]),
    ],
)
def test_case_folding(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Hello, world! (really?) — yes; no: maybe...",
            ["hello", "world", "really", "yes", "maybe"],
        ),
        (
            "«quoted» 'single' \"double\" [brackets] {braces}",
            ["quoted", "single", "double", "brackets", "braces"],
        ),
        ("end.of.sentence,comma;semi", ["end", "sentence", "comma", "semi"]),  # "of" is a stop-word
        ("v2.0-rc1", ["v2", "0", "rc1"]),
        ("snake_case_id", ["snake_case_id"]),  # underscore is a word character
        ("   \t\n  ", []),
        ("", []),
        ("!!! ??? ...", []),
    ],
)
def test_punctuation_splits_words(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The cat is on the mat and it was there", ["cat", "mat"]),
        ("el perro de la casa con los niños", ["perro", "casa", "niños"]),
        ("le chat est dans la maison pour une nuit", ["chat", "maison", "nuit"]),
        ("Der Hund ist nicht im Haus und die Katze", ["hund", "haus", "katze"]),
        ("THE AND OF El La Die", []),  # stop-words are matched after folding
    ],
)
def test_stopwords_removed(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


def test_stopwords_are_folded_forms() -> None:
    """Every stop-word is already in folded form, or it could never match a folded token."""
    for word in STOPWORDS:
        assert unicodedata.normalize("NFKC", word).casefold() == word


def test_spanish_question() -> None:
    # "¿" and "?" are punctuation, "el" and "de" are stop-words, accents are kept;
    # "está" is not the stop-word "es".
    assert tokens("¿Dónde está el servidor de Múnich?") == ["dónde", "está", "servidor", "múnich"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Müller fährt über die Brücke", ["müller", "fährt", "über", "brücke"]),
        ("ÄÖÜ äöü", ["äöü", "äöü"]),
        ("Größe GRÖSSE", ["grösse", "grösse"]),  # ß -> ss, Ö -> ö: both spellings meet
        ("Mu\u0308nchen", ["münchen"]),  # decomposed u + combining diaeresis, NFKC composes
    ],
)
def test_german_umlauts(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


def test_decomposed_and_composed_umlauts_agree() -> None:
    assert tokens("Mu\u0308ller") == tokens("Müller") == tokens("MÜLLER")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("東京タワーは高い", ["東京タワーは高い"]),  # no spaces: one run, one token
        ("東京 タワー", ["東京", "タワー"]),
        ("北京、上海。", ["北京", "上海"]),  # ideographic comma and full stop split
        ("서울 부산", ["서울", "부산"]),
        ("東京2026年", ["東京2026年"]),  # digits are word characters too
    ],
)
def test_cjk_runs(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("１２３", ["123"]),
        ("ＩＤ１２３４５", ["id12345"]),
        ("ｆｕｌｌ ｗｉｄｔｈ", ["full", "width"]),
        ("port ５４３２", ["port", "5432"]),
        ("x²", ["x2"]),  # superscript two is a compatibility digit
        ("ﬁle", ["file"]),  # the fi ligature decomposes
    ],
)
def test_width_and_compatibility_folding(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


def test_fullwidth_and_ascii_meet() -> None:
    assert tokens("ＳＵＰ－１２３４") == tokens("sup-1234") == ["sup", "1234"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("SUP-1234", ["sup", "1234"]),
        ("INC-42 and OPS-7", ["inc", "42", "ops", "7"]),
        ("ticket#9981", ["ticket", "9981"]),
        ("ABC_123", ["abc_123"]),
    ],
)
def test_identifiers(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


def test_email_split_into_words() -> None:
    assert tokens("mail bob.smith@example.com now") == [
        "mail",
        "bob",
        "smith",
        "example",
        "com",
        "now",
    ]


def test_url_split_into_words() -> None:
    # "en" is a Spanish/French stop-word; "top" and "lang" are not.
    assert tokens("https://docs.example.org/guide/install?lang=en#top") == [
        "https",
        "docs",
        "example",
        "org",
        "guide",
        "install",
        "lang",
        "top",
    ]


def test_single_digits_kept_single_letters_dropped() -> None:
    assert tokens("room 7 floor 3") == ["room", "7", "floor", "3"]
    assert tokens("plan B x y z") == ["plan"]
    assert tokens("a b c 1 2 3") == ["1", "2", "3"]
    assert tokens("Q 0") == ["0"]
    assert tokens("é ß") == ["ss"]  # é is one letter (dropped); ß folds to two letters


def test_long_tokens_are_cut_to_200_bytes() -> None:
    exactly = "x" * MAX_TOKEN_BYTES
    too_long = "y" * (MAX_TOKEN_BYTES + 1)
    assert MAX_TOKEN_BYTES == 200
    assert tokens(f"{exactly} {too_long} ok") == [exactly, "y" * MAX_TOKEN_BYTES, "ok"]
    # The limit applies to the folded token's UTF-8: 101 ß fold to 202 bytes.
    assert tokens("ß" * 101) == ["ss" * 100]
    # Four-byte characters are never split: 51 are cut to 50 (index keys stay < 511 bytes).
    assert tokens("\U00020000" * 51) == ["\U00020000" * 50]


def test_repeats_and_order_kept() -> None:
    assert tokens("beta alpha beta gamma alpha") == ["beta", "alpha", "beta", "gamma", "alpha"]


def test_term_counts() -> None:
    assert term_counts("deploy Deploy DEPLOY the server") == {"deploy": 3, "server": 1}
    assert term_counts("SUP-1234 sup 1234 x") == {"sup": 2, "1234": 2}
    assert term_counts("the of and el la die") == {}
    assert term_counts("") == {}
    counts = term_counts("Müller MU\u0308LLER müller Brücke")
    assert counts == {"müller": 3, "brücke": 1}
    assert sum(counts.values()) == len(tokens("Müller MU\u0308LLER müller Brücke"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),  # yields [] today
        ("தமிழ் மொழி", ["தமிழ்", "மொழி"]),  # yields ["தம"] today
        ("كَتَبَ الطالب", ["كَتَبَ", "الطالب"]),  # yields ["الطالب"] today
        ("İstanbul", ["i\u0307stanbul"]),  # casefold gives i + U+0307; yields ["stanbul"]
    ],
    ids=["hindi", "tamil", "arabic-harakat", "turkish-dotted-I"],
)
def test_words_with_combining_marks_stay_whole(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected
