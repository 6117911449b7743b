"""Private parameter tuning: Chaudhuri, Monteleoni & Sarwate (2011), Alg. 4.

Choosing alpha (or any parameter) by test or validation error is itself a use
of private data. Alg. 4 splits the data into ``m + 1`` disjoint parts, trains
one private model per candidate on its own part, counts each model's mistakes
``z_i`` on the last part, and releases model ``i`` with probability
proportional to ``exp(-epsilon z_i / 2)`` (the exponential mechanism; a count
of mistakes changes by at most 1 when one record changes). Each record lies
in exactly one part and is touched by exactly one epsilon-DP step, so the
whole procedure is epsilon-DP by parallel composition (003 Thm 8; shared
papers note 11).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils._available_if import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from dperm.privacy.accounting import check_accountant, check_budget_left, spend_before_fitting
from dperm.mechanisms.noise import BitSource, bernoulli_exp_neg
from dperm.mechanisms.registry import MECHANISMS
from dperm.privacy.labels import check_classes, resolve_label_set
from dperm.privacy.tuning_record import TuningRecord
from dperm.validation import check_epsilon, check_random_state, refuse_dask_input


def exponential_mechanism_probabilities(mistakes, epsilon: float) -> np.ndarray:
    """Selection probabilities ``q_i ~ exp(-epsilon z_i / 2)`` (003 eq. 123).

    Parameters
    ----------
    mistakes : array-like of shape (m,)
        ``z_i``, the number of validation mistakes of candidate ``i`` (a score
        of sensitivity 1).
    epsilon : float
    """
    epsilon = check_epsilon(epsilon)
    scores = -0.5 * epsilon * np.asarray(mistakes, dtype=float)
    if scores.ndim != 1 or scores.size == 0 or not np.isfinite(scores).all():
        raise ValueError("mistakes must be a non-empty 1-D array of finite counts.")
    return np.exp(scores - logsumexp(scores))


def select_by_exponential_mechanism(mistakes, epsilon: float, rng) -> int:
    """Draw index ``i`` with probability ``~ exp(-epsilon z_i / 2)`` exactly (epsilon-DP).

    Float-safe: a uniform candidate is accepted with probability
    ``exp(-epsilon (z_i - z_min) / 2)`` by the exact Bernoulli sampler of
    Canonne, Kamath & Steinke (2020, Alg. 1) on the rational ``epsilon``;
    rejection sampling returns exactly the distribution of
    :func:`exponential_mechanism_probabilities` (the mistake counts are integers).
    """
    counts = [int(z) for z in mistakes]
    if any(z != m for z, m in zip(counts, mistakes)):
        raise ValueError("mistakes must be integer counts.")
    epsilon = Fraction(check_epsilon(epsilon))
    best = min(counts)
    bits = BitSource(rng)
    while True:
        index = bits.below(len(counts))
        if bernoulli_exp_neg(epsilon * (counts[index] - best) / 2, bits):
            return index


def utility_bound(min_mistakes: float, n_candidates: int, epsilon: float, failure_probability: float) -> float:
    """003 Thm 9: with probability ``1 - failure_probability`` the selected model makes at most
    ``z_min + 2 log(m / failure_probability) / epsilon`` validation mistakes."""
    return min_mistakes + 2.0 * np.log(n_candidates / failure_probability) / check_epsilon(epsilon)


class PrivateParameterSearch(ClassifierMixin, BaseEstimator):
    """Choose parameters of a private estimator privately (003 Alg. 4).

    Parameters
    ----------
    estimator : dperm private classifier
        Any dperm estimator with an ``epsilon`` parameter; its ``epsilon``,
        ``random_state`` and ``accountant`` are set by the search.
    param_grid : dict or list of dicts
        The public candidates (e.g. ``{"alpha": [1e-4, 1e-3, 1e-2]}``). They must
        not be chosen by looking at the private data.
    epsilon : float
        The guarantee of the whole procedure (each candidate and the selection
        get the full epsilon; parallel composition makes the total epsilon).
    random_state : None, int or numpy Generator, default=None
        Drives the split, the candidates' noise and the selection. ``None``
        uses OS entropy; a seed is for testing only.
    accountant : dperm.privacy.accounting.BudgetAccountant, optional
        Charged once with the whole procedure's ``(epsilon, delta)``, after the
        grid, every candidate's parameters, the data and the labels have been
        checked and before any candidate is trained.
    classes : None or list of labels, default=None
        The public label set, given to every candidate (the estimator needs a
        ``classes`` parameter; see :class:`dperm.PrivateLogisticRegression`).
        A label outside it raises ValueError before the accountant is charged.
        ``None`` keeps the estimator's own ``classes``; if that is None too,
        each candidate reads the labels of its own part, which the guarantee
        does not cover (a :class:`~dperm.PrivacyLeakWarning` says so) and which
        can differ between candidates.

    Attributes
    ----------
    best_index_ : int
    best_params_ : dict
    best_estimator_ : estimator
        The selected candidate, trained on its own part of the data.
    candidates_ : list of dict
        The grid, in the order used.
    classes_ : ndarray
    privacy_ : TuningRecord

    Notes
    -----
    Validation mistakes and selection probabilities depend on the private data
    and are not stored: only the selected model and its parameters are released.
    Every candidate sees ``n / (m + 1)`` rows, so a large grid costs accuracy.
    """

    def __init__(self, estimator, param_grid, epsilon=1.0, random_state=None, accountant=None,
                 classes=None):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.random_state = random_state
        self.accountant = accountant
        self.classes = classes

    def _candidates(self):
        candidates = list(ParameterGrid(self.param_grid))
        if not candidates:
            raise ValueError("param_grid must give at least one candidate.")
        reserved = sorted({key for c in candidates for key in c}
                          & {"epsilon", "random_state", "accountant", "classes"})
        if reserved:
            raise ValueError(f"param_grid may not set {reserved}: the search sets them itself.")
        if "epsilon" not in self.estimator.get_params():
            raise ValueError(
                f"estimator must be a dperm private estimator with an epsilon parameter; "
                f"got {type(self.estimator).__name__}."
            )
        return candidates

    def _label_set(self):
        """The checked public label set of every candidate, or None (each reads its part's labels)."""
        inner = self.estimator.get_params().get("classes")
        if self.classes is None:
            return check_classes(inner)
        if "classes" not in self.estimator.get_params():
            raise ValueError(f"classes is given but {type(self.estimator).__name__} has no classes "
                             "parameter; use a dperm classifier.")
        classes = check_classes(self.classes)
        if inner is not None and not np.array_equal(check_classes(inner), classes):
            raise ValueError(f"classes={classes.tolist()} differs from the estimator's classes="
                             f"{list(inner)}; give the label set once.")
        return classes

    def _configured(self, params, epsilon, seed, classes=None):
        estimator = clone(self.estimator)
        estimator.set_params(**params, epsilon=epsilon, random_state=seed, accountant=None)
        return estimator if classes is None else estimator.set_params(classes=classes)

    @staticmethod
    def _check_candidate(estimator) -> None:
        """Run a candidate's own parameter checks (loss vs mechanism included), spending nothing."""
        check_params = getattr(estimator, "_check_params", None)
        if callable(check_params):
            check_params()

    @staticmethod
    def _delta_of(estimator) -> float:
        params = estimator.get_params()
        name = params.get("mechanism")
        if name not in MECHANISMS:
            return 0.0
        return MECHANISMS[name].delta_spent(float(params.get("delta", 0.0)))

    def fit(self, X, y):
        """Split, train one private model per candidate, select one privately.

        Every check runs before the budget is spent: the grid, each
        candidate's parameters (e.g. a loss its mechanism cannot use), the data
        and the split sizes. The accountant is charged once, just before the
        first candidate is trained.
        """
        refuse_dask_input(self, X, y)
        epsilon = check_epsilon(self.epsilon)
        check_accountant(self.accountant)
        candidates = self._candidates()
        classes = self._label_set()
        configured = [self._configured(c, epsilon, None, classes) for c in candidates]
        for candidate in configured:
            self._check_candidate(candidate)
        delta = max(self._delta_of(candidate) for candidate in configured)
        budget = (epsilon, delta, f"PrivateParameterSearch over {len(candidates)} candidates")
        check_budget_left(self.accountant, *budget)  # an exhausted budget: refuse before reading X
        X, y = validate_data(self, X, y, accept_sparse="csr", ensure_min_samples=2,
                             ensure_all_finite=True, dtype=None)
        check_classification_targets(y)
        if classes is not None:
            resolve_label_set(classes, y)  # a label outside the public set: before the budget
        elif np.unique(y).size < 2:
            raise ValueError(f"y has {np.unique(y).size} class ({np.unique(y).tolist()}); the "
                             "candidates are classifiers and need at least two.")
        rng = check_random_state(self.random_state)
        parts = np.array_split(rng.permutation(X.shape[0]), len(candidates) + 1)
        validation = parts[-1]
        if min(part.size for part in parts) < 2:
            raise ValueError(
                f"{X.shape[0]} rows cannot be split into {len(parts)} parts of at least 2 rows; "
                "use fewer candidates or more data."
            )
        # Check first, spend last-possible: before any candidate sees its part.
        spend_before_fitting(self.accountant, *budget)
        models, mistakes = [], []
        for params, part in zip(candidates, parts[:-1]):
            seed = np.random.default_rng(rng.integers(2**63))
            model = self._configured(params, epsilon, seed, classes).fit(X[part], y[part])
            models.append(model)
            mistakes.append(int(np.count_nonzero(model.predict(X[validation]) != y[validation])))
        index = select_by_exponential_mechanism(mistakes, epsilon, rng)
        self.candidates_ = candidates
        self.best_index_ = index
        self.best_params_ = candidates[index]
        self.best_estimator_ = models[index]
        self.classes_ = models[index].classes_
        self.privacy_ = TuningRecord(
            epsilon=epsilon,
            delta=delta,
            n_candidates=len(candidates),
            part_sizes=tuple(int(part.size) for part in parts),
            selected_index=index,
            candidate_record=getattr(models[index], "privacy_", None),
        )
        return self

    def predict(self, X):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def decision_function(self, X):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X)

    @available_if(lambda self: hasattr(self.estimator, "predict_proba"))
    def predict_proba(self, X):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_proba(X)
