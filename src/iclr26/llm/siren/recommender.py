"""``SIRENRecommender``: the whole SIREN pipeline behind a scikit-learn-style estimator over
``(user, item)`` pairs. ``fit`` sketches interests on the catalogue, builds leakage-free
training prompts (each target sees only the interactions before it), and runs the stages
(cold-start SFT, GRPO, hidden alignment); ``predict`` answers in one forward pass
(answer-only), ``predict_cot`` decodes the stage-1 model's rationale first."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence

import numpy as np
import torch
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from iclr26 import validation as V
from iclr26.llm.siren.baselines import (
    check_pairs,
    check_ratings,
    id_pair_expected_failures,
    mae_rmse,
)
from iclr26.llm.siren.lm import ao_digit_probs, cot_predict, ratings_from_probs
from iclr26.llm.siren.prompt import SketchPrompt, cot_target
from iclr26.llm.siren.sketch import ENCODERS, InterestSketcher
from iclr26.llm.siren.stages import GRPOStage, HiddenAlignment, cold_start_sft

STAGES = ("sft", "grpo", "ha")
UNKNOWN_USER = ("error", "prompt")
SKLEARN_EXPECTED_FAILED_CHECKS = id_pair_expected_failures(
    "fit takes integer (user, item) id pairs plus the catalogue's item_text and trains a "
    "language model, not a float feature matrix"
)


class SIRENRecommender(RegressorMixin, BaseEstimator):
    """Rating prediction (1..5) with an LLM over sketched long-term interests.

    ``fit(X, y, item_text)``: ``X`` is an int array ``(n, 2)`` of ``(user, item)`` pairs in
    time order per user, ``y`` their ratings, ``item_text[i]`` the description of item ``i``.
    The last ``targets_per_user`` interactions of each user become training targets, each
    prompted with only the interactions before it. ``model`` is a tiny-LM size name or any
    ``from_pretrained`` id (or a ``(model, tokenizer)`` pair); it is copied, never changed.

    ``predict(X)`` rates each pair from the user's whole fitted history (the pair is taken to
    come after it). A user with no fitted history raises ``ValueError`` (``unknown_user=
    "error"``) or is prompted with an empty sketch and no recent items (``"prompt"``); such
    predictions are counted in ``cold_start_predictions_``. ``score`` is minus the MAE (higher
    is better, as scikit-learn expects); :meth:`mae_rmse` gives both errors.

    scikit-learn's ``check_estimator`` checks that fit a float matrix cannot pass (the fit
    needs id pairs and a catalogue): they are listed in ``SKLEARN_EXPECTED_FAILED_CHECKS``
    (check_estimators_dtypes, check_fit_score_takes_y, check_estimators_fit_returns_self,
    check_readonly_memmap_input, check_n_features_in, check_positive_only_tag_during_fit,
    check_estimators_empty_data_messages, check_pipeline_consistency,
    check_estimators_nan_inf, check_estimators_overwrite_params, check_estimator_sparse_array,
    check_estimator_sparse_matrix, check_estimators_pickle, check_f_contiguous_array_estimator,
    check_fit2d_1sample, check_fit2d_1feature, check_fit1d, check_fit2d_predict1d,
    check_dict_unchanged, check_dont_overwrite_parameters, check_fit_idempotent,
    check_fit_check_is_fitted, check_n_features_in_after_fitting, check_complex_data,
    check_dtype_object, check_estimator_sparse_tag, check_methods_sample_order_invariance,
    check_methods_subset_invariance, check_regressor_data_not_an_array, check_regressors_int,
    check_regressors_no_decision_function, check_regressors_train, check_requires_y_none,
    check_supervised_y_2d, check_supervised_y_no_nan)."""

    def __init__(
        self,
        model="quick",
        sketcher: InterestSketcher | None = None,
        n_topics: int = 20,
        theta: float = 4.0,
        encoder: str = "minilm",
        n_recent: int = 10,
        stages: Sequence[str] = STAGES,
        targets_per_user: int = 4,
        sft_steps: int = 150,
        sft_lr: float = 2e-3,
        grpo_steps: int = 20,
        grpo_lr: float = 1e-4,
        ha_steps: int = 150,
        ha_lr: float = 5e-4,
        batch_size: int = 8,
        unknown_user: str = "error",
        random_state: int = 0,
    ):
        self.model = model
        self.sketcher = sketcher
        self.n_topics = n_topics
        self.theta = theta
        self.encoder = encoder
        self.n_recent = n_recent
        self.stages = stages
        self.targets_per_user = targets_per_user
        self.sft_steps = sft_steps
        self.sft_lr = sft_lr
        self.grpo_steps = grpo_steps
        self.grpo_lr = grpo_lr
        self.ha_steps = ha_steps
        self.ha_lr = ha_lr
        self.batch_size = batch_size
        self.unknown_user = unknown_user
        self.random_state = random_state

    # ------------------------------------------------------------------ fitting
    def _check_params(self) -> tuple[str, ...]:
        V.check_int(self.n_topics, "n_topics", low=1)
        V.check_scalar(self.theta, "theta", low=1.0, high=5.0)
        V.check_choice(self.encoder, "encoder", ENCODERS)
        V.check_int(self.n_recent, "n_recent", low=0)
        V.check_int(self.targets_per_user, "targets_per_user", low=1)
        for name in ("sft_steps", "grpo_steps", "ha_steps", "batch_size"):
            V.check_int(getattr(self, name), name, low=1)
        for name in ("sft_lr", "grpo_lr", "ha_lr"):
            V.check_scalar(getattr(self, name), name, low=0.0, low_open=True)
        V.check_choice(self.unknown_user, "unknown_user", UNKNOWN_USER)
        V.check_int(self.random_state, "random_state", low=0)
        if isinstance(self.stages, str) or not isinstance(self.stages, Sequence):
            raise TypeError("stages must be a sequence of stage names")
        stages = tuple(self.stages)
        for s in stages:
            V.check_choice(s, "stages", STAGES)
        if list(stages) != [s for s in STAGES if s in stages]:
            raise ValueError(f"stages must keep the order {STAGES}, got {stages}")
        if self.sketcher is not None and not isinstance(self.sketcher, InterestSketcher):
            raise TypeError("sketcher must be an InterestSketcher or None")
        return stages

    def _load_model(self):
        if isinstance(self.model, tuple) and len(self.model) == 2:
            model, tok = self.model
            return copy.deepcopy(model), tok
        if not isinstance(self.model, str):
            raise TypeError(
                "model must be a size name, a model id/path or a (model, tokenizer) pair"
            )
        from iclr26.models.tinylm import load_causal_lm

        return load_causal_lm(self.model)

    def _histories(self, pairs: np.ndarray, ratings: np.ndarray) -> dict[int, np.ndarray]:
        out: dict[int, list] = {}
        for (u, i), r in zip(pairs, ratings, strict=True):
            out.setdefault(int(u), []).append((int(i), int(r)))
        return {u: np.asarray(rows, dtype=np.int64) for u, rows in out.items()}

    def fit(self, X, y, item_text: Sequence[str] | None = None) -> SIRENRecommender:
        stages = self._check_params()
        pairs = check_pairs(X)
        ratings = check_ratings(y, len(pairs))
        if np.any((ratings < 1) | (ratings > 5)) or np.any(ratings != np.round(ratings)):
            raise ValueError("y must hold integer ratings in 1..5")
        if item_text is None or isinstance(item_text, str) or len(item_text) == 0:
            raise ValueError("item_text must be a non-empty sequence of item descriptions")
        texts = [str(t) for t in item_text]
        if int(pairs[:, 1].max()) >= len(texts):
            raise ValueError(f"X holds item ids >= len(item_text) ({len(texts)})")
        self.item_text_ = texts
        self.histories_ = self._histories(pairs, ratings)
        sketcher = self.sketcher
        if sketcher is None:
            sketcher = InterestSketcher(
                min(self.n_topics, len(texts)), self.theta, encoder=self.encoder,
                seed=self.random_state,
            ).fit(np.arange(len(texts)), texts)  # fmt: skip
        self.sketcher_ = sketcher
        self.prompt_ = SketchPrompt(self.n_recent)
        prompts, gold, cots = [], [], []
        for hist in self.histories_.values():
            for pos in range(max(1, len(hist) - self.targets_per_user), len(hist)):
                item, rating = hist[pos]
                prompts.append(self.prompt_(hist[:pos], item, texts, sketcher))
                cots.append(cot_target(hist[:pos], item, rating, sketcher, self.n_recent))
                gold.append(rating)
        if not prompts:
            raise ValueError("X needs at least one user with two or more interactions")
        gold = np.asarray(gold, dtype=np.int64)
        model, tok = self._load_model()
        torch.manual_seed(self.random_state)
        if "sft" in stages:
            model = cold_start_sft(
                model, tok, prompts, cots, self.sft_steps, self.sft_lr, self.batch_size,
                self.random_state,
            )  # fmt: skip
        if "grpo" in stages:
            self.grpo_ = GRPOStage(self.grpo_steps, lr=self.grpo_lr, seed=self.random_state)
            model = self.grpo_.run(model, tok, prompts, gold)
        self.cot_model_ = model
        self.model_ = model
        if "ha" in stages:
            self.alignment_ = HiddenAlignment(
                "ha", lr=self.ha_lr, steps=self.ha_steps, batch_size=self.batch_size,
                seed=self.random_state,
            )  # fmt: skip
            self.model_ = self.alignment_.fit(model, tok, prompts, gold)
        self.tokenizer_ = tok
        self.n_train_prompts_ = len(prompts)
        self.cold_start_predictions_ = 0
        self.n_features_in_ = 2
        return self

    # ------------------------------------------------------------------ prediction
    def _prompts(self, X) -> list[str]:
        check_is_fitted(self, "model_")
        pairs = check_pairs(X)
        if int(pairs[:, 1].max()) >= len(self.item_text_):
            raise ValueError(
                f"X holds item ids >= the fitted catalogue size ({len(self.item_text_)})"
            )
        out, cold = [], 0
        empty = np.zeros((0, 2), dtype=np.int64)
        for u, i in pairs:
            hist = self.histories_.get(int(u))
            if hist is None:
                if self.unknown_user == "error":
                    raise ValueError(
                        f"X: user {int(u)} has no history in the fitted data "
                        "(set unknown_user='prompt' to rate it from the candidate alone)"
                    )
                hist, cold = empty, cold + 1
            out.append(self.prompt_(hist, int(i), self.item_text_, self.sketcher_))
        if cold:
            self.cold_start_predictions_ += cold
            warnings.warn(
                f"{cold} pair(s) of users without history were rated from the candidate alone",
                stacklevel=2,
            )
        return out

    def predict_proba(self, X) -> np.ndarray:
        """``(n, 5)`` answer-only probabilities of ratings 1..5."""
        prompts = self._prompts(X)  # checks fitted first
        return ao_digit_probs(self.model_, self.tokenizer_, prompts)

    def predict(self, X, expected: bool = False) -> np.ndarray:
        """Answer-only ratings (argmax over the digit tokens; ``expected`` for the mean)."""
        return ratings_from_probs(
            self.predict_proba(X), expected=V.check_bool(expected, "expected")
        )

    def predict_cot(self, X) -> np.ndarray:
        """Ratings of the stage-1 model after it writes its rationale (greedy)."""
        prompts = self._prompts(X)
        ratings, _, _ = cot_predict(self.cot_model_, self.tokenizer_, prompts)
        return ratings

    def mae_rmse(self, X, y) -> tuple[float, float]:
        pred = self.predict(X)
        return mae_rmse(check_ratings(y, len(pred)), pred)

    def score(self, X, y, sample_weight=None) -> float:
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported")
        return -self.mae_rmse(X, y)[0]
