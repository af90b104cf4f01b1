"""Every encoding the own counter counts gives tiktoken's own ``encode`` count on a large
mixed-language corpus (~1 MB: prose in thirteen scripts, code, JSON, shell, ids, numbers,
whitespace runs, emoji, combining marks, random code points)."""
from __future__ import annotations

import pytest

from capsule import tokens
from token_corpus import corpus


def _counters():
    """(name, own counter, tiktoken encoding) for each encoding the own counter can count here."""
    found = []
    offline = tokens._offline_vocabulary()
    found.append((offline.name, tokens.VocabularyCounter(offline), offline.encoding()))
    o200k = tokens._o200k_vocabulary()
    if o200k is None:  # o200k's own file is not here offline: its pattern over cl100k's ranks
        o200k = tokens.Vocabulary(tokens.O200K_NAME, tokens.O200K_PAT_STR, offline.ranks,
                                  tokens.O200K_SPECIAL)
    found.append((o200k.name, tokens.VocabularyCounter(o200k), o200k.encoding()))
    return found


COUNTERS = _counters()
CORPUS = corpus()


def test_the_corpus_is_large_and_mixed():
    text = "".join(CORPUS)
    assert len(text) >= 1_000_000 and len(CORPUS) > 200
    for sample in ("Агент", "代理", "يواصل", "😀", "def fold", "SELECT", "git -c"):
        assert sample in text


@pytest.mark.parametrize("name,counter,encoding", COUNTERS, ids=[c[0] for c in COUNTERS])
def test_each_text_is_counted_as_tiktoken_encodes_it(name, counter, encoding):
    wrong = [(i, counter.count(t), len(encoding.encode(t, disallowed_special=())))
             for i, t in enumerate(CORPUS)]
    wrong = [w for w in wrong if w[1] != w[2]]
    assert not wrong, f"{name}: {len(wrong)} of {len(CORPUS)} texts differ, first {wrong[:3]}"


@pytest.mark.parametrize("name,counter,encoding", COUNTERS, ids=[c[0] for c in COUNTERS])
def test_the_whole_corpus_at_once_is_counted_as_tiktoken_encodes_it(name, counter, encoding):
    text = "".join(CORPUS[:60])
    assert counter.count(text) == len(encoding.encode(text, disallowed_special=()))
