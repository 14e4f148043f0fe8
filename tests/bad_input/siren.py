"""Bad-input cases of the siren room (sketcher, prompt, reward, LM plumbing, stages,
recommender, baselines, data). No case loads a language model: every check fires first."""

import numpy as np
import torch

from iclr26.llm.siren import (
    BiasedMF,
    GRPOStage,
    HiddenAlignment,
    InterestSketcher,
    SIRENRecommender,
    SketchPrompt,
    UserMean,
    alignment_loss,
    answer_positions,
    ao_answer,
    ao_digit_probs,
    cold_start_sft,
    cot_answer_rows,
    cot_predict,
    cot_rationale,
    cot_target,
    embed_descriptions,
    generate_cot,
    mae_rmse,
    mean_sampled_reward,
    movielens100k,
    parse_rating,
    predicted_rating,
    ratings_from_probs,
    siren_reward,
    topic_ratings,
)

NAN, INF = float("nan"), float("inf")
X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
Y = np.array([4.0, 2.0, 5.0, 3.0])
TEXTS = ["rocket orbit", "rocket galaxy", "chef soup", "chef bread"]
EMB = np.array([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0], [0.1, 1.0]])
H = torch.ones(2, 3, 4)
_SK = []


def _sk():
    if not _SK:
        _SK.append(
            InterestSketcher(n_topics=2, encoder="tfidf", top_m=2).fit(np.arange(4), TEXTS, EMB)
        )
    return _SK[0]


def _fit_sk(**kw):
    return InterestSketcher(**{"n_topics": 2, "encoder": "tfidf", **kw}).fit(
        np.arange(4), TEXTS, EMB
    )


def _rec(**kw):
    return SIRENRecommender(**{"model": "test", "encoder": "tfidf", **kw})


CASES = [
    # baselines
    ("BiasedMF", "nan", lambda: BiasedMF().fit(X, [4.0, NAN, 5.0, 3.0]), ValueError, "y"),
    ("BiasedMF", "inf", lambda: BiasedMF().fit(X, [4.0, INF, 5.0, 3.0]), ValueError, "y"),
    ("BiasedMF", "dtype", lambda: BiasedMF().fit(X + 0.5, Y), TypeError, "X"),
    ("BiasedMF", "shape", lambda: BiasedMF().fit(np.zeros((4, 3), int), Y), ValueError, "X"),
    ("BiasedMF", "shape", lambda: BiasedMF().fit(X, Y[:3]), ValueError, "y"),
    ("BiasedMF", "empty", lambda: BiasedMF().fit(np.zeros((0, 2), int), []), ValueError, "X"),
    ("BiasedMF", "range", lambda: BiasedMF(k=0).fit(X, Y), ValueError, "k"),
    ("BiasedMF", "range", lambda: BiasedMF(lr=NAN).fit(X, Y), ValueError, "lr"),
    ("BiasedMF", "range", lambda: BiasedMF(reg=-1.0).fit(X, Y), ValueError, "reg"),
    ("BiasedMF", "range", lambda: BiasedMF().fit(-X, Y), ValueError, "X"),
    ("UserMean", "nan", lambda: UserMean().fit(X, [NAN, 1.0, 2.0, 3.0]), ValueError, "y"),
    ("UserMean", "shape", lambda: UserMean().fit(X[:, :1], Y), ValueError, "X"),
    ("UserMean", "empty", lambda: UserMean().fit(np.zeros((0, 2), int), []), ValueError, "X"),
    ("mae_rmse", "nan", lambda: mae_rmse([1.0, NAN], [1.0, 2.0]), ValueError, "y_true"),
    ("mae_rmse", "shape", lambda: mae_rmse([1.0, 2.0], [1.0]), ValueError, "y_pred"),
    ("mae_rmse", "empty", lambda: mae_rmse([], []), ValueError, "y_true"),
    # sketcher
    ("InterestSketcher", "range", lambda: _fit_sk(n_topics=0), ValueError, "n_topics"),
    ("InterestSketcher", "range", lambda: _fit_sk(n_topics=9), ValueError, "n_topics"),
    ("InterestSketcher", "range", lambda: _fit_sk(theta=NAN), ValueError, "theta"),
    ("InterestSketcher", "range", lambda: _fit_sk(encoder="bert"), ValueError, "encoder"),
    ("InterestSketcher", "range", lambda: _fit_sk(top_m=0), ValueError, "top_m"),
    (
        "InterestSketcher",
        "empty",
        lambda: InterestSketcher(encoder="tfidf").fit([], []),
        ValueError,
        "descriptions",
    ),
    (
        "InterestSketcher",
        "type",
        lambda: InterestSketcher(encoder="tfidf").fit([0, 1], ["a", 3]),
        TypeError,
        "descriptions",
    ),
    (
        "InterestSketcher",
        "shape",
        lambda: InterestSketcher(n_topics=2, encoder="tfidf").fit([0, 1, 2], TEXTS),
        ValueError,
        "item_ids",
    ),
    (
        "InterestSketcher",
        "nan",
        lambda: InterestSketcher(n_topics=2).fit(np.arange(4), TEXTS, EMB * NAN),
        ValueError,
        "embeddings",
    ),
    (
        "InterestSketcher",
        "other",
        lambda: InterestSketcher(n_topics=2).fit([0, 0, 1, 2], TEXTS, EMB),
        ValueError,
        "item_ids",
    ),
    ("InterestSketcher", "nan", lambda: _sk().sketch([[0, NAN]]), ValueError, "history"),
    ("InterestSketcher", "shape", lambda: _sk().sketch([[0, 4, 1]]), ValueError, "history"),
    ("InterestSketcher", "range", lambda: _sk().sketch([[0, 4]], token_budget=-1), ValueError, "token_budget"),
    ("InterestSketcher", "other", lambda: _sk().sketch([[77, 4]]), ValueError, "history"),
    ("embed_descriptions", "range", lambda: embed_descriptions(TEXTS, "bert"), ValueError, "encoder"),
    ("embed_descriptions", "empty", lambda: embed_descriptions([], "tfidf"), ValueError, "descriptions"),
    ("embed_descriptions", "type", lambda: embed_descriptions("abc", "tfidf"), TypeError, "descriptions"),
    # prompt, parser, reward
    ("SketchPrompt", "range", lambda: SketchPrompt(n_recent=-1), ValueError, "n_recent"),
    ("SketchPrompt", "type", lambda: SketchPrompt(with_sketch="yes"), TypeError, "with_sketch"),
    ("SketchPrompt", "range", lambda: SketchPrompt(raw_history=0), ValueError, "raw_history"),
    ("SketchPrompt", "range", lambda: SketchPrompt()([[0, 4]], 9, TEXTS, _sk()), ValueError, "candidate"),
    ("SketchPrompt", "shape", lambda: SketchPrompt()([[0, 4, 1]], 1, TEXTS, _sk()), ValueError, "history"),
    ("SketchPrompt", "nan", lambda: SketchPrompt()([[0, NAN]], 1, TEXTS, _sk()), ValueError, "history"),
    ("SketchPrompt", "other", lambda: SketchPrompt()([[0, 4]], 1, TEXTS), ValueError, "sketcher"),
    ("parse_rating", "type", lambda: parse_rating(4), TypeError, "text"),
    ("predicted_rating", "type", lambda: predicted_rating(None), TypeError, "text"),
    ("siren_reward", "nan", lambda: siren_reward(["<answer>4</answer>"], [NAN]), ValueError, "ratings"),
    ("siren_reward", "shape", lambda: siren_reward(["a", "b"], [4]), ValueError, "ratings"),
    ("siren_reward", "range", lambda: siren_reward(["a"], [0]), ValueError, "ratings"),
    ("siren_reward", "range", lambda: siren_reward(["a"], [4], e_max=0.0), ValueError, "e_max"),
    ("siren_reward", "empty", lambda: siren_reward([], []), ValueError, "completions"),
    ("siren_reward", "type", lambda: siren_reward("abc", [4]), TypeError, "completions"),
    ("cot_rationale", "range", lambda: cot_rationale("a/b", "meh", 3.0), ValueError, "relation"),
    ("cot_rationale", "nan", lambda: cot_rationale("a/b", "liked", NAN), ValueError, "recent_mean"),
    ("cot_target", "range", lambda: cot_target([[0, 4]], 1, 9, _sk()), ValueError, "rating"),
    ("cot_target", "shape", lambda: cot_target([[0, 4, 4]], 1, 3, _sk()), ValueError, "history"),
    ("ao_answer", "range", lambda: ao_answer(0), ValueError, "rating"),
    ("ao_answer", "dtype", lambda: ao_answer(2.5), TypeError, "rating"),
    # LM plumbing (every check fires before the model is touched)
    ("ratings_from_probs", "nan", lambda: ratings_from_probs([[NAN] * 5]), ValueError, "probs"),
    ("ratings_from_probs", "shape", lambda: ratings_from_probs([[0.25] * 4]), ValueError, "probs"),
    ("ratings_from_probs", "range", lambda: ratings_from_probs([[-1.0, 1, 0, 0, 1]]), ValueError, "probs"),
    ("answer_positions", "shape", lambda: answer_positions(torch.tensor([1, 6]), 6), ValueError, "input_ids"),
    ("answer_positions", "dtype", lambda: answer_positions(torch.ones(2, 3), 6), TypeError, "input_ids"),
    ("alignment_loss", "nan", lambda: alignment_loss(H * NAN, H), ValueError, "student_hidden"),
    ("alignment_loss", "inf", lambda: alignment_loss(H, H * INF), ValueError, "teacher_hidden"),
    ("alignment_loss", "shape", lambda: alignment_loss(H, torch.ones(2, 3, 5)), ValueError, "teacher_hidden"),
    ("alignment_loss", "dtype", lambda: alignment_loss(H.long(), H), TypeError, "student_hidden"),
    ("ao_digit_probs", "empty", lambda: ao_digit_probs(None, None, []), ValueError, "prompts"),
    ("ao_digit_probs", "type", lambda: ao_digit_probs(None, None, ["a", 3]), TypeError, "prompts"),
    ("ao_digit_probs", "range", lambda: ao_digit_probs(None, None, ["a"], 0), ValueError, "batch_size"),
    ("generate_cot", "empty", lambda: generate_cot(None, None, []), ValueError, "prompts"),
    ("generate_cot", "range", lambda: generate_cot(None, None, ["a"], 0), ValueError, "max_new_tokens"),
    ("cot_predict", "empty", lambda: cot_predict(None, None, "abc"), ValueError, "prompts"),
    ("cot_answer_rows", "shape", lambda: cot_answer_rows(None, ["a", "b"], [[1]]), ValueError, "generated"),
    ("cot_answer_rows", "range", lambda: cot_answer_rows(None, ["a"], [[-3]]), ValueError, "generated"),
    ("cot_answer_rows", "empty", lambda: cot_answer_rows(None, [], []), ValueError, "prompts"),
    # stages
    ("cold_start_sft", "empty", lambda: cold_start_sft(None, None, [], []), ValueError, "prompts"),
    ("cold_start_sft", "shape", lambda: cold_start_sft(None, None, ["a"], ["b", "c"]), ValueError, "completions"),
    ("cold_start_sft", "range", lambda: cold_start_sft(None, None, ["a"], ["b"], steps=0), ValueError, "steps"),
    ("cold_start_sft", "range", lambda: cold_start_sft(None, None, ["a"], ["b"], lr=NAN), ValueError, "lr"),
    ("mean_sampled_reward", "empty", lambda: mean_sampled_reward(None, None, [], []), ValueError, "prompts"),
    ("mean_sampled_reward", "nan", lambda: mean_sampled_reward(None, None, ["a"], [NAN]), ValueError, "ratings"),
    ("GRPOStage", "range", lambda: GRPOStage(steps=0), ValueError, "steps"),
    ("GRPOStage", "range", lambda: GRPOStage(group_size=1), ValueError, "group_size"),
    ("GRPOStage", "range", lambda: GRPOStage(temperature=0.0), ValueError, "temperature"),
    ("GRPOStage", "range", lambda: GRPOStage(kl_coef=-1.0), ValueError, "kl_coef"),
    ("GRPOStage", "range", lambda: GRPOStage(clip_eps=1.5), ValueError, "clip_eps"),
    ("GRPOStage", "nan", lambda: GRPOStage(lr=NAN), ValueError, "lr"),
    ("GRPOStage", "empty", lambda: GRPOStage().run(None, None, [], []), ValueError, "prompts"),
    ("GRPOStage", "nan", lambda: GRPOStage().run(None, None, ["a"], [NAN]), ValueError, "ratings"),
    ("HiddenAlignment", "range", lambda: HiddenAlignment("mse"), ValueError, "objective"),
    ("HiddenAlignment", "range", lambda: HiddenAlignment(rank=0), ValueError, "rank"),
    ("HiddenAlignment", "nan", lambda: HiddenAlignment(alpha=NAN), ValueError, "alpha"),
    ("HiddenAlignment", "range", lambda: HiddenAlignment(lr=0.0), ValueError, "lr"),
    ("HiddenAlignment", "type", lambda: HiddenAlignment(target_modules="k_proj"), ValueError, "target_modules"),
    ("HiddenAlignment", "empty", lambda: HiddenAlignment().fit(None, None, []), ValueError, "prompts"),
    ("HiddenAlignment", "other", lambda: HiddenAlignment("ce").fit(None, None, ["a"]), ValueError, "ratings"),
    (
        "HiddenAlignment",
        "shape",
        lambda: HiddenAlignment("ha").fit(None, None, ["a"], targets={"hidden": H, "probs": H}),
        ValueError,
        "targets",
    ),
    # recommender (all checks fire before a language model is loaded)
    ("SIRENRecommender", "nan", lambda: _rec().fit(X, [4.0, NAN, 5.0, 3.0], TEXTS), ValueError, "y"),
    ("SIRENRecommender", "dtype", lambda: _rec().fit(X + 0.5, Y, TEXTS), TypeError, "X"),
    ("SIRENRecommender", "shape", lambda: _rec().fit(X[:, :1], Y, TEXTS), ValueError, "X"),
    ("SIRENRecommender", "range", lambda: _rec().fit(X, Y + 3, TEXTS), ValueError, "y"),
    ("SIRENRecommender", "empty", lambda: _rec().fit(X, Y, []), ValueError, "item_text"),
    ("SIRENRecommender", "range", lambda: _rec().fit(X * 9, Y, TEXTS), ValueError, "X"),
    ("SIRENRecommender", "range", lambda: _rec(theta=NAN).fit(X, Y, TEXTS), ValueError, "theta"),
    ("SIRENRecommender", "range", lambda: _rec(n_recent=-1).fit(X, Y, TEXTS), ValueError, "n_recent"),
    ("SIRENRecommender", "range", lambda: _rec(stages=("ha", "sft")).fit(X, Y, TEXTS), ValueError, "stages"),
    ("SIRENRecommender", "range", lambda: _rec(unknown_user="skip").fit(X, Y, TEXTS), ValueError, "unknown_user"),
    ("SIRENRecommender", "range", lambda: _rec(sft_steps=0).fit(X, Y, TEXTS), ValueError, "sft_steps"),
    ("SIRENRecommender", "nan", lambda: _rec(ha_lr=NAN).fit(X, Y, TEXTS), ValueError, "ha_lr"),
    # data
    ("topic_ratings", "range", lambda: topic_ratings(n_users=0), ValueError, "n_users"),
    ("topic_ratings", "range", lambda: topic_ratings(n_topics=50), ValueError, "n_topics"),
    ("topic_ratings", "range", lambda: topic_ratings(mixed_share=1.5), ValueError, "mixed_share"),
    ("topic_ratings", "range", lambda: topic_ratings(history=(20, 10)), ValueError, "history"),
    ("topic_ratings", "nan", lambda: topic_ratings(noise_share=NAN), ValueError, "noise_share"),
    ("movielens100k", "other", lambda: movielens100k("/nonexistent-ml100k"), FileNotFoundError, "path"),
    ("movielens100k", "range", lambda: movielens100k(train_targets=-1), ValueError, "train_targets"),
]  # fmt: skip

EXEMPT = {
    "RatingData": "a record dataclass returned by the data loaders; it takes no user data itself",
}
