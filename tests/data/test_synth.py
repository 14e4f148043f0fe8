"""Tests of the shared synthetic text-task generators (``iclr26.data.synth``): the rooms
re-export the same objects, every generator is deterministic per seed and changes with it, the
documented structure holds, and bad arguments are refused with errors naming them."""

import numpy as np
import pytest

from iclr26.data import synth as S


def test_rooms_reexport_the_shared_generators():
    from iclr26.llm.qat_reasoning import tasks as qat
    from iclr26.llm.seka import tasks as seka
    from iclr26.llm.siren import data as siren
    from iclr26.llm.task_arithmetic_fairness import data as taf

    assert qat.arithmetic_problems is S.arithmetic_problems
    assert qat.parse_answer is S.parse_answer
    assert seka.conflict_prompts is S.conflict_prompts
    assert seka.training_examples is S.training_examples
    assert siren.topic_ratings is S.topic_ratings and siren.RatingData is S.RatingData
    assert taf.identity_toxicity is S.identity_toxicity


def test_arithmetic_chain_is_correct_mod_10_and_seeded():
    probs = S.arithmetic_problems(50, k=(2, 3), seed=3)
    assert [p.prompt for p in probs] == [p.prompt for p in S.arithmetic_problems(50, (2, 3), 3)]
    assert [p.prompt for p in probs] != [p.prompt for p in S.arithmetic_problems(50, (2, 3), 4)]
    ops = {
        "+": lambda a, b: (a + b) % 10,
        "-": lambda a, b: (a - b) % 10,
        "*": lambda a, b: a * b % 10,
    }
    for p in probs:
        value = p.operands[0]
        for op, b in zip(p.ops, p.operands[1:]):
            value = ops[op](value, b)
        assert S.parse_answer(p.completion) == value == p.answer
    assert S.parse_answer("no tag here") is None
    with pytest.raises(ValueError, match="n"):
        S.arithmetic_problems(0)
    with pytest.raises(ValueError, match="k"):
        S.arithmetic_problems(3, k=0)


def test_passage_prompts_highlight_a_later_passage_and_validate():
    items = S.conflict_prompts(20, seed=1, attributes=("code", "colour"))
    assert items == S.conflict_prompts(20, seed=1, attributes=("code", "colour"))
    for it in items:
        assert it.new != it.old and it.old.strip() in it.plain and it.new.strip() in it.marked
        assert it.attribute in ("code", "colour")
    ex = S.training_examples(30, seed=0)
    assert (
        len(ex) == 30 and ex == S.training_examples(30, seed=0) and ex != S.training_examples(30, 1)
    )
    with pytest.raises(ValueError, match="attributes"):
        S.conflict_prompts(3, seed=0, attributes=("height",))
    with pytest.raises(ValueError, match="attributes"):
        S.conflict_prompts(3, seed=0, attributes=())
    with pytest.raises(ValueError, match="n"):
        S.conflict_prompts(0, seed=0)
    with pytest.raises((TypeError, ValueError), match="paraphrase"):
        S.conflict_prompts(3, seed=0, paraphrase="yes")
    with pytest.raises(ValueError, match="relevance_share"):
        S.training_examples(3, relevance_share=1.5)
    with pytest.raises(ValueError, match="relevance_share"):
        S.training_examples(3, relevance_share=float("nan"))


def test_toxicity_and_ratings_are_seeded_and_validate():
    a = S.identity_toxicity(n_train=200, n_val=40, n_test=80, seed=0)
    b = S.identity_toxicity(n_train=200, n_val=40, n_test=80, seed=0)
    c = S.identity_toxicity(n_train=200, n_val=40, n_test=80, seed=1)
    assert a.train.text == b.train.text and a.train.text != c.train.text
    assert np.array_equal(a.test.y, b.test.y)
    with pytest.raises(ValueError, match="n_train"):
        S.identity_toxicity(n_train=5)
    r = S.topic_ratings(seed=0, n_users=8, n_items=60, n_topics=8, history=(12, 20))
    assert r.n_users == 8 and r.n_items == 60
    for u, item, rating, pos in r.targets["test"]:
        assert r.histories[u][pos, 0] == item and r.histories[u][pos, 1] == rating
        assert 1 <= rating <= 5
    with pytest.raises(ValueError, match="n_users"):
        S.topic_ratings(n_users=0)
