"""Pieces several rooms share to state their scikit-learn contract honestly."""

from __future__ import annotations

# The checks of ``sklearn.utils.estimator_checks.check_estimator`` that fit the estimator on a
# data matrix X. An estimator whose ``fit`` takes another object (an MDP, a game and its
# demonstrations, a list of views) cannot pass them; it lists them with its reason.
ARRAY_FIT_CHECKS: tuple[str, ...] = (
    "check_estimators_dtypes",
    "check_fit_score_takes_y",
    "check_estimators_fit_returns_self",
    "check_readonly_memmap_input",
    "check_n_features_in",
    "check_positive_only_tag_during_fit",
    "check_estimators_empty_data_messages",
    "check_pipeline_consistency",
    "check_estimators_nan_inf",
    "check_estimators_overwrite_params",
    "check_estimator_sparse_array",
    "check_estimator_sparse_matrix",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_fit2d_1sample",
    "check_fit2d_1feature",
    "check_fit1d",
    "check_fit2d_predict1d",
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_fit_idempotent",
    "check_fit_check_is_fitted",
    "check_n_features_in_after_fitting",
    "check_complex_data",
    "check_dtype_object",
    "check_estimator_sparse_tag",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
)


def expected_failed_checks(reason: str) -> dict[str, str]:
    """``{check name: reason}`` for every check in :data:`ARRAY_FIT_CHECKS`."""
    return dict.fromkeys(ARRAY_FIT_CHECKS, reason)
