"""The one text module: tokens, stopwords and the stemmer that memory, the episode assistant and the
episode judges share."""

from __future__ import annotations

import pytest

from world.memory import keywords
from world.text import STOPWORDS, content_words, key_terms, prefix_stem, stem, stems_match, words


def test_tokens_drop_apostrophes_and_split_on_everything_else() -> None:
    assert words("She'd rather not: do_not_disturb, follow-up at 10:30!") == [
        "shed",
        "rather",
        "not",
        "do",
        "not",
        "disturb",
        "follow",
        "up",
        "at",
        "10",
        "30",
    ]
    assert words("Chen Mei\u2019s caf\u00e9") == ["chen", "meis", "caf"]


def test_stopwords_are_function_words_and_generic_requests_never_content() -> None:
    assert {"the", "what", "would", "please", "anything", "want"} <= STOPWORDS
    assert not {"cafe", "busy", "report", "price", "garden", "tired"} & STOPWORDS


def test_content_words_leave_out_stopwords_short_words_and_numbers() -> None:
    assert content_words("Is the 2 pm report ready at 1578 Elm St?") == ["report", "ready", "elm"]
    assert content_words("go to an inn", min_len=2) == ["go", "inn"]


def test_key_terms_are_stems_once_each_in_first_seen_order() -> None:
    assert key_terms("Saving the reports; saved report, and save it.") == ("sav", "report")
    assert key_terms("") == ()


def test_the_stemmer_reads_inflections_alike() -> None:
    assert {stem(w) for w in ("plan", "plans", "planned", "planning")} == {"plan"}
    assert stem("copies") == stem("copied") == "copy"
    assert stem("boxes") == stem("box") == "box"
    assert (stem("address"), stem("status"), stem("bus")) == ("address", "status", "bus")


def test_memory_keywords_are_the_shared_tokens_without_stopwords_unstemmed() -> None:
    # Memory retrieval matches words as written (numbers kept): "3pm" tells one meeting from another.
    said = "What is Lin's plan for the 3pm meeting? The meeting!"
    assert keywords(said) == ["lins", "plan", "3pm", "meeting"]


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("serving", "served", True),
        ("drafts", "drafting", True),
        ("patient", "patience", True),
        ("concentrate", "concentration", True),
        ("careful", "careless", False),
        ("hope", "hopeful", False),
        ("quiet", "quite", False),
    ],
)
def test_prefix_stems_match_one_word_and_not_its_opposite(a: str, b: str, same: bool) -> None:
    assert stems_match(prefix_stem(a), prefix_stem(b)) is same
