"""Paper 002's analyzer: cleaning, stop words, lookup lemmas, batching, language errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hybrid_ir.errors import ConfigError
from hybrid_ir.retrieval.analysis import Analyzer, clean_text, lemma_languages


@pytest.fixture(scope="module")
def english() -> Analyzer:
    return Analyzer()


@pytest.fixture(scope="module")
def plain() -> Analyzer:
    """Cleaning and lowercasing only, so tokens show exactly what cleaning left."""
    return Analyzer(stop_words=False, lemmatize=False)


def test_stop_words_and_lemmas(english: Analyzer) -> None:
    assert english("The mice were running") == ["mouse", "run"]


def test_each_step_can_be_switched_off() -> None:
    assert Analyzer(lemmatize=False)("The mice were running") == ["mice", "running"]
    assert Analyzer(stop_words=False)("The mice were running") == ["the", "mouse", "be", "run"]
    raw = Analyzer(stop_words=False, lemmatize=False, lowercase=False, clean=False)
    assert raw("The Mice see http://x.org &amp;") == ["The", "Mice", "see", "http://x.org", "amp"]


def test_lemma_of_a_capitalized_word_falls_back_to_lowercase(english: Analyzer) -> None:
    # The English table knows "mice", not "Mice"; lemmas come out lowercased.
    assert english("Mice Running") == ["mouse", "run"]
    assert Analyzer(stop_words=False, lowercase=False)("Mice") == ["Mice"]


def test_punctuation_is_never_a_term(plain: Analyzer) -> None:
    assert plain("Hello, world! (3.5%) -- ok?") == ["hello", "world", "3.5", "ok"]


def test_clean_removes_urls_tags_and_entities() -> None:
    text = (
        'See <a href="http://x.org/a">the site</a> at https://example.com/p?q=1&r=2 or www.t.org.'
    )
    assert clean_text(text) == "See the site at or"
    markup = "<p>Fish &amp; chips&nbsp;here</p><!-- hidden --><script>var x = 1;</script>"
    assert clean_text(markup) == "Fish & chips here"
    assert clean_text("look ![a cat](cat.png) here\n\tnow") == "look here now"


def test_clean_keeps_math_words_and_is_latex_safe(plain: Analyzer) -> None:
    # Unprotected, "<b$ and $c>" would be taken for a tag and the words between lost.
    assert clean_text("if $a<b$ and $c>d$ then") == "if a b and c d then"
    assert clean_text(r"so $$\frac{x_1}{2}$$ and $a &lt; b$") == "so frac x 1 2 and a b"
    assert plain("$x<y$ and $z>w$") == ["x", "y", "and", "z", "w"]


def test_batch_equals_one_by_one_and_is_deterministic() -> None:
    texts = ["The mice were running.", "", "Running mice, running men!", "http://x.org only"]
    expected = [["mouse", "run"], [], ["run", "mouse", "run", "man"], []]
    first = Analyzer()
    assert [first(text) for text in texts] == expected
    assert first.analyze_many(texts) == expected
    assert Analyzer().analyze_many(texts) == expected  # fresh cache, same terms


def test_chunks_are_analysed_on_their_own() -> None:
    # spaCy alone splits "p." here because its special-case matcher sees ":p" across the space.
    raw = Analyzer(clean=False, stop_words=False, lemmatize=False, lowercase=False)
    assert raw("x: p.His161Arg") == raw("x:") + raw("p.His161Arg") == ["x", "p.", "His161Arg"]


def test_other_language() -> None:
    assert Analyzer("de")("Die Häuser waren größer") == ["haus", "groß"]


def test_unsupported_languages_raise_config_error() -> None:
    assert "en" in lemma_languages() and "el" not in lemma_languages()
    with pytest.raises(ConfigError, match="'el'"):
        Analyzer("el")  # spaCy tokenizes Greek, spacy-lookups-data has no lemma table for it
    with pytest.raises(ConfigError, match="'zz'"):
        Analyzer("zz", lemmatize=False)
    with pytest.raises(ConfigError, match="stop-word list for language 'xx'"):
        Analyzer("xx", lemmatize=False)
    assert Analyzer("xx", lemmatize=False, stop_words=False)("Ab cd") == ["ab", "cd"]


def test_analysis_does_not_import_torch_and_leaves_it_importable():
    """thinc, under spaCy, would import torch (2-3 s of every sparse retrieval job) for
    backends the analyzer never uses; a job that needs torch afterwards still gets it."""
    code = (
        "import sys\n"
        "from hybrid_ir.retrieval.analysis import Analyzer\n"
        "assert Analyzer()('The mice were running') == ['mouse', 'run']\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "import torch\n"
        "assert torch.ones(2).sum().item() == 2.0\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
