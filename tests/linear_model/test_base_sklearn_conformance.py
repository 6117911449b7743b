"""scikit-learn's estimator checks for every dperm estimator and transformer, in one place.

Each skipped check is listed with its reason (the privacy reason, not a bug):
:data:`EXPECTED_FAILED_CHECKS`. The files of each estimator test the same
behaviours with negligible noise where a check needs accuracy
(``test_classifiers_train_without_noise``, ``test_regressors_train_without_noise``).
"""

import inspect
import warnings

from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.estimator_checks import parametrize_with_checks

from dperm import BudgetWarning, DataClippingWarning, PrivacyLeakWarning
from dperm.kernels import RandomFourierFeatures
from dperm.preprocessing import PublicBoundsScaler, RowNormalizer
from tests.conftest import estimators

N_ITER = (
    "asks for n_iter_; the number of solver iterations is a function of the private rows and is "
    "not released (dperm.privacy.release)."
)
EXPECTED_FAILED_CHECKS = {
    "classifier": {
        "check_non_transformer_estimators_n_iter": N_ITER,
        "check_classifiers_train": (
            "demands >= 83% training accuracy on tiny toy data; at the default epsilon=1 the "
            "privacy noise is larger than that data's signal. test_classifiers_train_without_noise "
            "runs the same check with negligible noise."
        ),
    },
    "regressor": {
        "check_non_transformer_estimators_n_iter": N_ITER,
        "check_regressors_train": (
            "demands R^2 > 0.5 on a small toy data set; at the default epsilon=1, data_norm=1 and "
            "y_bound=1 the privacy noise and the clipping are larger than that data's signal. "
            "test_regressors_train_without_noise runs the same check with negligible noise."
        ),
    },
    "transformer": {},
}

# n_components=20 keeps the kernel estimators' checks quick; the checks do not depend on D.
_SEEDS = dict(n_components=20, feature_random_state=12345, random_state=0)
#: The one estimator list (tests/conftest.py), seeded, then the transformers.
ESTIMATORS = [
    *estimators("classifier", "regressor", random_state=0).values(),
    *estimators("kernel", **_SEEDS).values(),
    RandomFourierFeatures(kernel="rbf", random_state=0),
    RandomFourierFeatures(kernel="laplacian", random_state=0),
    RowNormalizer(),
    RowNormalizer(data_norm=2.0, mode="scale"),
    PublicBoundsScaler(bounds=None),
]


#: Classifiers whose default alpha (the public rule) already passes check_classifiers_train on
#: the toy data at epsilon=1 with their seed: the check runs for them as a real test.
#: (One seeded draw each: the set changes when the noise or the rule does.)
PASS_CLASSIFIERS_TRAIN = {
    "PrivateLogisticRegression(random_state=0)",
    "PrivateLinearSVC(random_state=0)",
    "PrivateLinearSVC(loss='smooth_hinge', random_state=0)",
}


WEIGHT_ABOVE_ONE = (
    "fits with sample_weight above 1 (3 or 10); dperm refuses weights outside [0, 1] because its "
    "sensitivity bounds hold only for weights <= 1 (paper note 15, docs/paper_notes.md). "
    "tests/linear_model/test_base_sample_weight.py checks the refusal and the [0, 1] behaviour."
)
#: The checks every estimator that takes sample_weight in [0, 1] is expected to fail, with why.
SAMPLE_WEIGHT_EXPECTED_FAILURES = {
    "check_sample_weights_list": WEIGHT_ABOVE_ONE,
    "check_sample_weights_not_overwritten": WEIGHT_ABOVE_ONE,
    "check_all_zero_sample_weights_error": (
        "demands an error for all-zero weights; they are a valid private input (the objective is "
        "then the regulariser alone), and refusing them would make whether a fit runs depend on "
        "the private weights."
    ),
    "check_sample_weight_equivalence_on_dense_data": (
        "compares integer weights with repeated rows; dperm divides by the public n (not the "
        "private sum of weights) and refuses weights above 1. "
        "test_weighted_minimiser_equals_repeated_rows checks the equivalence that holds."
    ),
    "check_sample_weight_equivalence_on_sparse_data": "as on dense data (integer weights).",
}
REFUSED_SAMPLE_WEIGHT = (
    "this configuration's loss has no derivative (hinge, pinball), and dperm refuses "
    "sample_weight for it before anything is spent (its certified solver is unweighted)."
)
#: Every scikit-learn check that passes sample_weight to fit.
SAMPLE_WEIGHT_CHECKS = (
    *SAMPLE_WEIGHT_EXPECTED_FAILURES, "check_sample_weights_pandas_series",
    "check_sample_weights_not_an_array", "check_sample_weights_shape",
    "check_classifiers_one_label_sample_weights",
)


def _refuses_sample_weight(estimator) -> bool:
    """Whether the estimator's loss is non-differentiable (its fit refuses sample_weight)."""
    linear = (estimator._make_linear_model(1.0) if hasattr(estimator, "_make_linear_model")
              else estimator)
    make_loss = getattr(linear, "_make_loss", None)
    return make_loss is not None and not make_loss().differentiable


def _sample_weight_failures(estimator) -> dict:
    if "sample_weight" not in inspect.signature(estimator.fit).parameters:
        return {}
    if _refuses_sample_weight(estimator):
        return dict.fromkeys(SAMPLE_WEIGHT_CHECKS, REFUSED_SAMPLE_WEIGHT)
    return dict(SAMPLE_WEIGHT_EXPECTED_FAILURES)


def expected_failed_checks(estimator):
    if isinstance(estimator, ClassifierMixin):
        expected = dict(EXPECTED_FAILED_CHECKS["classifier"])
        if " ".join(repr(estimator).split()) in PASS_CLASSIFIERS_TRAIN:
            del expected["check_classifiers_train"]
        return {**expected, **_sample_weight_failures(estimator)}
    if isinstance(estimator, RegressorMixin):
        return {**EXPECTED_FAILED_CHECKS["regressor"], **_sample_weight_failures(estimator)}
    return EXPECTED_FAILED_CHECKS["transformer"]


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataClippingWarning)
        # The checks vary the labels (ints, strings, 2 or 3 classes), so classifiers run with
        # classes=None, which warns by design (tests/privacy/test_labels.py tests that warning);
        # PublicBoundsScaler(bounds=None) reads bounds from the data, which also warns by design.
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        # The checks clone every estimator many times on purpose (dperm.cloning warns a
        # user who does that to private data once); nothing private is spent here.
        warnings.simplefilter("ignore", BudgetWarning)
        check(estimator)
