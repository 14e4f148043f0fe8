"""The shared MiniLM sentence encoder."""

import numpy as np
import pytest

from iclr26.models import text


def test_shape_norm_and_similarity_order():
    e = text.encode(["a cat sits on the mat", "a kitten rests on a rug", "stock prices fell"])
    assert e.shape == (3, text.MINILM_DIM) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    # paraphrases are closer than an unrelated sentence
    assert e[0] @ e[1] > e[0] @ e[2] + 0.2


def test_batching_does_not_change_vectors():
    texts = ["one", "two words", "three little words here", ""]
    a = text.encode(texts, batch_size=1)
    b = text.encode(texts, batch_size=4)
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_truncation_is_counted():
    e, n = text.encode(["word " * 400, "short"], max_length=32, return_truncated=True)
    assert n == 1 and e.shape == (2, 384)


def test_matches_sentence_transformers():
    st = pytest.importorskip("sentence_transformers")
    texts = ["def add(a, b): return a + b", "Return the sum of two numbers."]
    ref = st.SentenceTransformer(text.minilm_path(), device="cpu").encode(
        texts, normalize_embeddings=True
    )
    np.testing.assert_allclose(text.encode(texts), ref, atol=1e-4)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(texts="one string"), TypeError, "texts"),
        (dict(texts=[]), ValueError, "texts"),
        (dict(texts=["ok", 3]), TypeError, r"texts\[1\]"),
        (dict(texts=["ok"], batch_size=0), ValueError, "batch_size"),
        (dict(texts=["ok"], max_length=float("nan")), (ValueError, TypeError), "max_length"),
    ],
)
def test_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        text.encode(**kwargs)
