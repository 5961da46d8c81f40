"""The TF-IDF scorer of purification (issue 50; pure Python since issue 49): the same numbers
as the scikit-learn vectoriser it replaced, on generated and real text, and no scikit-learn
import on the path."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overseer.supervise._extract import passages
from overseer.supervise._rank import STOP_WORDS, TermMatrix, terms, tfidf_scores
from overseer.traces import load_whowhen

sklearn_text = pytest.importorskip("sklearn.feature_extraction.text")

# letters, digits, `_`, punctuation, accents, a curly quote, CJK, a dotted capital I (whose
# lower case holds a combining mark), characters beyond the BMP (an emoji, a math letter),
# the scorer's own document separator
PIECES = st.sampled_from(
    [*"abcdefg ABC 0123 _ .,;:-'()\n", "é", "’", "中", "İ", "😀", "𝐀", "\x01", " the ", " and "]
)
TEXT = st.lists(PIECES, max_size=40).map("".join)


def sklearn_scores(texts: list[str], query: str) -> np.ndarray:
    """The scorer `extract` used before issue 50, verbatim."""
    vec = sklearn_text.TfidfVectorizer(
        sublinear_tf=True, token_pattern=r"(?u)\b[^\W_]+\b", lowercase=True, stop_words="english"
    )
    try:
        mat = vec.fit_transform([*texts, query])
    except ValueError:
        return np.zeros(len(texts))
    return np.asarray((mat[:-1] @ mat[-1].T).toarray()).ravel()


def test_the_stop_words_are_scikit_learn_s() -> None:
    assert frozenset(sklearn_text.ENGLISH_STOP_WORDS) == STOP_WORDS


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(TEXT, max_size=8),
    query=TEXT,
)
def test_scores_equal_scikit_learn_s_on_any_text(texts: list[str], query: str) -> None:
    assert np.allclose(tfidf_scores(texts, query), sklearn_scores(texts, query), atol=1e-12)


def test_scores_equal_scikit_learn_s_on_real_pages() -> None:
    """Every long observation of five Who&When logs, cut into the passages `extract` ranks."""
    checked = 0
    for traj in load_whowhen("hand")[:5]:
        for step in traj.steps:
            if step.is_observation and len(step.text) > 2000:
                texts = [p.text for p in passages(step.text)]
                ours, theirs = (
                    tfidf_scores(texts, traj.question),
                    sklearn_scores(texts, traj.question),
                )
                assert np.allclose(ours, theirs, atol=1e-12), (traj.id, step.index)
                checked += 1
    assert checked >= 5


def test_a_subset_is_scored_as_if_only_it_had_been_given() -> None:
    docs = ["apples and pears", "pears only", "the weather", "apples apples", "pears apples"]
    matrix = TermMatrix(docs)
    ours = matrix.cosine(np.array([0, 3]), 4)
    assert np.allclose(ours, sklearn_scores([docs[0], docs[3]], docs[4]), atol=1e-12)
    assert list(matrix.novel(4)) == [0, 0, 1, 0, 0]  # "only" is a stop word


def test_terms_drop_stop_words_and_underscored_names() -> None:
    assert terms("The Eiffel_Tower is 330 metres tall, isn't it?") == [
        "330",
        "metres",
        "tall",
        "isn",
        "t",
    ]


def test_purification_imports_no_scikit_learn() -> None:
    code = (
        "import sys\n"
        "from overseer.supervise.rules import RuleSettings, RuleTier\n"
        "from overseer.supervise._extract import extract\n"
        "out = extract('Title: x\\n\\n' + 'Some words here. ' * 400, 'words', 300)\n"
        "assert 'overseer' in out\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
