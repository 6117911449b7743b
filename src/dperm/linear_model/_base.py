"""Shared plumbing of the private linear models: validate, clip, wire, record.

The estimators are thin: scikit-learn's ``_parameter_constraints`` check the
parameters, the data is validated and rows clipped to the public norm bound,
each problem goes to a mechanism of :data:`dperm.mechanisms.MECHANISMS`, and
the result is stored with its :class:`~dperm.privacy.record.PrivacyRecord`.
:class:`PrivateLinearModelBase` holds the one fit skeleton; the classifier and
regressor bases fill in the targets, the solve and the stored attributes.
No privacy arithmetic happens here.
"""

from __future__ import annotations

import dataclasses
import math
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from dperm.cloning import BudgetOnCloneMixin
from dperm.mechanisms import MECHANISMS, ERMProblem, PublicProblem, get_mechanism
from dperm.mechanisms.catalog import check_min_epsilon
from dperm.mechanisms.choice import (
    AUTO,
    auto_alpha,
    candidate_mechanisms,
    check_noise_below_signal,
    choose_mechanism,
)
from dperm.privacy.accounting import BudgetAccountant, check_budget_left, spend_before_fitting
from dperm.privacy.alpha import MONOTONE
from dperm.privacy.labels import LabelSet, check_classes, one_vs_rest_positives, resolve_label_set
from dperm.privacy.record import linear_record
from dperm.validation import (
    append_intercept_feature,
    check_budget_for_data,
    check_random_state,
    check_sample_weight,
    clip_rows_to_norm,
    is_dask_collection,
    refuse_sample_weight,
    warn_clipped_rows,
)

#: A finite number > 0 (epsilon, alpha, data_norm, tol, ...).
POSITIVE = Interval(Real, 0, np.inf, closed="neither")


class FitParams(NamedTuple):
    """Checked hyper-parameters of one fit."""

    epsilon: float
    delta: float
    alpha: float
    data_norm: float
    scaling: float
    tol: float
    max_iter: int
    loss: object
    classes: np.ndarray | None = None  # the public label set, sorted (None: read from y)
    mechanism: str | None = None  # the mechanism run; None until mechanism="auto" is resolved
    candidates: tuple = ()  # mechanism="auto": the rows whose theorem covers the loss and delta
    calibration: object = None  # each problem's MechanismCalibration, once the public choices are made


class Targets(NamedTuple):
    """Checked targets of one fit: ``y``, for a classifier its public label set, and the
    checked row weights (``None``: unweighted)."""

    y: np.ndarray
    label_set: object = None
    sample_weight: np.ndarray | None = None


class InMemoryRows:
    """The fit skeleton's data provider for in-memory rows (validated, dense).

    Dask input has its own provider, :class:`dperm.scale.ChunkedRows`, with the
    same attributes.
    """

    engine = "memory"

    def __init__(self, X):
        self.X = X
        self.n_samples, self.n_features = X.shape

    def prepare(self, estimator, params):
        """After the spend: rows clipped to ``data_norm`` (warned), the intercept's feature appended."""
        X, rows_clipped = clip_rows_to_norm(self.X, params.data_norm)
        warn_clipped_rows(rows_clipped, params.data_norm)
        return estimator._augment(X, params.data_norm, params.scaling)


def binary_rows(X, y, positive):
    """``(X, y)`` of the binary problem ``positive`` vs the rest (``y`` coded +1 / -1).

    Rows held elsewhere (:class:`dperm.scale.ChunkedRows`) code their labels
    chunk by chunk: ``X.binary_rows(positive)``.
    """
    chunked = getattr(X, "binary_rows", None)
    if chunked is not None:
        return chunked(positive)
    return X, np.where(y == positive, 1.0, -1.0)


class PrivateLinearModelBase(BudgetOnCloneMixin, BaseEstimator):
    """The fit skeleton every private linear model shares. Subclasses define
    ``_make_loss``, ``_mechanism_name``, ``_check_targets``, ``_solve``,
    ``_store`` and ``_record``."""

    _parameter_constraints: dict = {
        "epsilon": [POSITIVE],
        "alpha": [POSITIVE, StrOptions({"auto"})],
        "data_norm": [POSITIVE],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [POSITIVE],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [POSITIVE],
        "random_state": [None, Integral, np.random.Generator, np.random.RandomState],
        "accountant": [None, BudgetAccountant],
    }
    #: ``validate_data`` options for the targets.
    _validate_y = {"ensure_min_samples": 2}

    def _check_params(self) -> FitParams:
        """Every parameter, the loss and the mechanism's conditions, before any data or budget.

        The one validation of a fit: scikit-learn's ``_parameter_constraints``, then the
        smallest epsilon the noise can be released at
        (:func:`~dperm.mechanisms.catalog.check_min_epsilon`) and the mechanism's theorem;
        everything after trusts these values.
        """
        self._validate_params()
        epsilon = check_min_epsilon(float(self.epsilon))
        delta = float(getattr(self, "delta", 0.0))
        loss = self._make_loss()
        mechanism = self._mechanism_name()
        candidates = ()
        if mechanism == AUTO:
            mechanism = None  # chosen from public n and d once they are known
            candidates = tuple(candidate_mechanisms(loss, delta))
            if not candidates:
                raise ValueError(f"mechanism='auto': no mechanism's theorem covers the {loss.name} "
                                 f"loss with delta={delta!r}.")
        else:
            get_mechanism(mechanism).check(loss, delta)  # the theorem's conditions
        alpha = None if isinstance(self.alpha, str) else float(self.alpha)  # "auto": set from n and d
        return FitParams(epsilon, delta, alpha, float(self.data_norm),
                         float(self.intercept_scaling), float(self.tol), int(self.max_iter), loss,
                         check_classes(getattr(self, "classes", None)), mechanism, candidates)

    def _make_loss(self):
        raise TypeError(f"{type(self).__name__} does not define a loss.")

    def _mechanism_name(self) -> str:
        return self.mechanism

    # -- fitting ----------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """Fit the private model.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Rows with an L2 norm above ``data_norm`` are scaled onto it, with a
            :class:`~dperm.DataClippingWarning` (it does not say how many: that
            count is a function of the private rows).
        y : array-like of shape (n_samples,)
            Classifiers: labels from ``classes`` (a label outside it raises
            ValueError before any budget is spent); without ``classes``, read
            from y with a :class:`~dperm.PrivacyLeakWarning`; more than two
            labels are fitted one-vs-rest. Regressors: real-valued targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights in [0, 1]: the objective becomes
            ``(1/n) sum_i w_i loss_i + (alpha/2) ||w||^2`` with the public ``n`` (not the
            sum of the weights, which is private). A weight is part of its row (a
            neighbouring data set replaces ``(x, y, weight)`` together). A weight outside
            [0, 1], NaN or infinite raises ValueError naming the row before any budget is
            spent (weights are never clipped); integer weights above 1 (repeated rows)
            are not supported: a repeated row would be several records. Not supported
            for the hinge and pinball losses (their certified solvers are unweighted)
            nor for Dask input. ``privacy_.sample_weighted`` records that weights were
            used; the weights are never released.

        Returns
        -------
        self

        Notes
        -----
        Weights in [0, 1] keep every mechanism's calibration (docs/paper_notes.md,
        "Weighted rows"): output perturbation's sensitivity ``2 L R / (n alpha)``
        (Chaudhuri et al. 2011, Cor. 1 and Thm 6; Nie & Wang, Thm 2) needs each row's term
        to be convex and ``L``-Lipschitz in ``w.x``, which ``w_i loss`` is for ``w_i <= 1``;
        objective perturbation (Alg. 2, Thm 9 in the JMLR paper), its Gaussian form and the
        multinomial mechanism need the changed row's gradient norm ``<= L R`` and its
        rank-one (rank ``K - 1``) Hessian bounded by ``c R^2``, both scaled by ``w_i <= 1``;
        AdaSSP's statistics of the rows ``(sqrt(w_i) x_i, sqrt(w_i) y_i)`` stay within the
        public bounds, so its sensitivities hold.
        """
        params = self._check_params()
        check_budget_left(self.accountant, *self._budget_request(params))
        if is_dask_collection(X) or is_dask_collection(y):
            refuse_sample_weight(self, sample_weight, "Dask input is solved by dperm.scale's "
                                 "chunked Newton passes, which have no row weights.")
            return self._fit_distributed(X, y, params)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, **self._validate_y)
        if sparse.issparse(X):
            X = X.toarray()  # d is small in ERM; the mechanisms work on dense rows
        sample_weight = self._check_sample_weight(sample_weight, X.shape[0], params)
        targets = self._check_targets(y, params)  # label set or real targets: before the budget
        if sample_weight is not None:
            targets = targets._replace(sample_weight=sample_weight)
        self._fit_rows(InMemoryRows(X), targets, params)
        if sample_weight is not None:
            self.privacy_ = dataclasses.replace(self.privacy_, sample_weighted=True)
        return self

    def _fit_rows(self, rows, targets, params):
        """The one fit skeleton, on validated rows: public choices, spend, release, store, record.

        ``rows`` is the data provider: :class:`InMemoryRows` or, for Dask input,
        :class:`dperm.scale.ChunkedRows` (rows left in chunks on a cluster). It
        gives the public ``n_samples`` and ``n_features``, and after the spend
        ``rows.prepare(self, params) -> (X, effective_norm)``: the rows the
        mechanisms solve on, clipped to the norm bound (with the warning) and with
        the intercept's feature.
        """
        params = self._with_public_choices(params, rows.n_samples, rows.n_features,
                                           self._n_problems(targets.label_set))
        rng = check_random_state(self.random_state)
        self._spend_budget(params)  # every check passed; nothing computed from X released yet
        X, effective_norm = rows.prepare(self, params)
        outputs = self._solve(X, targets, params, rng, effective_norm)
        self._store(outputs, targets, params)
        self.privacy_ = self._record(outputs, params, effective_norm, rows.n_samples, targets,
                                     engine=rows.engine)
        return self

    def _check_sample_weight(self, sample_weight, n_samples, params):
        """The checked weights (:func:`dperm.validation.check_sample_weight`), or ``None``.

        Refused for a loss without a derivative (hinge, pinball): the sensitivity argument
        would hold, but the certified solvers of piecewise-linear losses (liblinear's duality
        gap, the smoothing continuation) are written for unweighted rows.
        """
        if sample_weight is not None and not params.loss.differentiable:
            hint = (" Use loss='huber' or 'smooth_hinge'." if params.loss.name == "hinge"
                    else "")
            refuse_sample_weight(self, sample_weight, f"the {params.loss.name} loss has no "
                                 "derivative and dperm's certified solver for it (duality gap, "
                                 "smoothing) is written for unweighted rows." + hint)
        return check_sample_weight(sample_weight, n_samples, type(self).__name__)

    def _n_problems(self, label_set) -> int:
        """How many ERM problems share the budget (one-vs-rest for a classifier)."""
        return 1

    def _with_public_choices(self, params, n_samples, n_features, n_problems=1, *,
                             check_budget=True):
        """``params`` with the mechanism, ``alpha`` and the calibration set from public quantities only.

        ``mechanism="auto"``: :func:`dperm.mechanisms.choice.choose_mechanism` on the
        public problem (``n``, ``d`` and the norm bound with the intercept's column,
        the loss, each problem's share of epsilon and delta) at a common alpha: the
        given one or, for ``alpha="auto"``, the rule's value for the first candidate
        (pure objective perturbation for a smooth loss). Sets ``mechanism_`` and the
        reason the record prints. Then ``alpha_``: the given value or
        :func:`dperm.mechanisms.choice.auto_alpha` for the chosen mechanism. Then the
        calibration every problem releases with: the one the choice scored when its alpha
        is the fit's, else the chosen row's, computed once. Never the data.
        Then the budget's sanity checks (:meth:`_check_budget_for_data`), which a fit
        runs and a model file's recomputation (``check_budget=False``) does not: a
        file is checked against the calibration, not re-judged as a request.
        """
        dimension = n_features + int(bool(self.fit_intercept))
        norm = self._effective_norm(params)
        epsilon, delta = self._problem_budget(params, n_problems)
        self._mechanism_choice = None
        given_alpha = alpha = params.alpha
        scored_alpha = None  # the alpha mechanism="auto" scored its candidates' calibrations at
        mechanism = params.mechanism
        if mechanism is None:
            first = params.candidates[0]
            alpha = scored_alpha = given_alpha or self._auto_alpha(params, n_samples, dimension,
                                                                   norm, first, n_problems)
            problem = PublicProblem(n_samples, dimension, params.loss, alpha, norm)
            self._mechanism_choice = choose_mechanism(problem, epsilon, delta, params.tol,
                                                      list(params.candidates))
            mechanism = self._mechanism_choice.name
            if given_alpha is None and mechanism != first:  # the chosen mechanism's own alpha
                alpha = self._auto_alpha(params, n_samples, dimension, norm, mechanism, n_problems)
        elif given_alpha is None:
            alpha = self._auto_alpha(params, n_samples, dimension, norm, mechanism, n_problems)
        self.mechanism_ = mechanism
        self.alpha_ = alpha
        if alpha == scored_alpha:
            calibration = self._mechanism_choice.calibration
        else:
            problem = PublicProblem(n_samples, dimension, params.loss, alpha, norm)
            calibration = MECHANISMS[mechanism].calibrate(problem, epsilon, delta, params.tol)
        params = params._replace(mechanism=mechanism, alpha=alpha, calibration=calibration)
        if check_budget:
            self._check_budget_for_data(params, given_alpha, n_samples, dimension, norm, n_problems)
        return params

    def _check_budget_for_data(self, params, given_alpha, n_samples, dimension, norm, n_problems):
        """The budget's sanity checks at public n and d, before anything is spent.

        :func:`dperm.validation.check_budget_for_data` (refuse ``delta >= 1/n``, warn for
        ``epsilon > 10``) and :func:`dperm.mechanisms.choice.check_noise_below_signal`
        (refuse an epsilon whose noise swamps every coefficient, naming one that works).
        """
        # The delta parameter, whichever mechanism runs: delta >= 1/n is never a sensible request.
        check_budget_for_data(params.epsilon, params.delta, n_samples)

        def problem_at(epsilon):
            if epsilon == params.epsilon:  # the fit's own problem, its calibration already computed
                alpha = params.alpha
            else:
                alpha = given_alpha or self._auto_alpha(params._replace(epsilon=epsilon), n_samples,
                                                        dimension, norm, params.mechanism, n_problems)
            return PublicProblem(n_samples, dimension, params.loss, alpha, norm)

        check_noise_below_signal(problem_at, params.mechanism, params.epsilon, params.delta,
                                 params.tol, n_problems, calibration=params.calibration)

    def _public_budget(self, n_samples, n_features, label_set=None):
        """``(epsilon, delta)`` that a fit on ``n_samples`` rows of ``n_features`` columns spends.

        What :class:`dperm.tuning.PrivateParameterSearch` charges for this estimator before
        training it on a part of public size: ``mechanism="auto"`` is resolved exactly as
        :meth:`fit` resolves it (:meth:`_with_public_choices`, from public n and d only) and
        fit's budget checks run. Reads no data and spends nothing.

        Parameters
        ----------
        n_samples, n_features : int
            The public size of the data the fit will see.
        label_set : dperm.privacy.labels.LabelSet or None
            A classifier's label set (it sets how many one-vs-rest problems share the budget).
        """
        params = self._check_params()
        n_problems = 1 if label_set is None else self._n_problems(label_set)
        params = self._with_public_choices(params, n_samples, n_features, n_problems)
        epsilon, delta, _ = self._budget_request(params)
        return epsilon, delta

    def _effective_norm(self, params) -> float:
        """The norm bound the calibration uses: ``sqrt(data_norm^2 + intercept_scaling^2)``
        with an intercept (its constant feature counts, :meth:`_augment`), else ``data_norm``."""
        return math.hypot(params.data_norm, params.scaling) if self.fit_intercept else params.data_norm

    def _problem_budget(self, params, n_problems):
        """``(epsilon, delta)`` each ERM problem of the fit is run with (basic composition)."""
        return params.epsilon / n_problems, params.delta / n_problems

    def _public_record(self, n_samples, n_features, n_problems=1, *, label_set_public=None,
                      engine="memory"):
        """The :class:`~dperm.privacy.record.PrivacyRecord` a fit would write, from public inputs only.

        A fit with these parameters on ``n_samples`` rows of ``n_features``
        features in ``n_problems`` problems (one-vs-rest) records exactly this:
        the same public choices (:meth:`_with_public_choices`: ``mechanism="auto"``,
        ``alpha="auto"`` and the calibration, from the mechanism's row) and the same
        record builder (:meth:`_record`); no data, no noise, no budget.
        :func:`dperm.model_io.load_model` compares it with a model file's record.
        """
        params = self._with_public_choices(self._check_params(), n_samples, n_features, n_problems,
                                           check_budget=False)
        norm = self._effective_norm(params)
        targets = Targets(None, LabelSet(None, label_set_public))
        return self._record([params.calibration] * n_problems, params, norm, n_samples, targets,
                            engine)

    def _auto_alpha(self, params, n_samples, dimension, norm, mechanism, n_problems=1):
        """The rule's alpha for one problem of the fit: at that problem's share of the budget.

        One-vs-rest runs each of its ``n_problems`` problems at ``epsilon / n_problems`` (and
        ``delta / n_problems``), and that is the noise each problem's alpha must balance; the
        whole epsilon would give too small an alpha for the noise it is released with.
        """
        epsilon, delta = self._problem_budget(params, n_problems)
        return auto_alpha(n_samples, dimension, epsilon, delta,
                          mechanism=mechanism, loss=params.loss, data_norm=norm,
                          feature_norm=params.data_norm, variant=self._alpha_variant())

    def _alpha_variant(self) -> str:
        """The ``alpha`` string (``"auto"`` or the classifiers' ``"monotone"``), for the rule."""
        return self.alpha if isinstance(self.alpha, str) else "auto"

    def _fit_distributed(self, X, y, params):
        from dperm.validation import refuse_dask_input

        refuse_dask_input(self, X, y)

    def _budget_request(self, params):
        """``(epsilon, delta, label)`` that this fit costs the accountant."""
        return params.epsilon, self._delta_spent(params), self._spend_label()

    def _spend_budget(self, params):
        """Spend the fit's budget: after every check, before any noise is drawn.

        "Check first, spend last-possible" (issue 14): a configuration or data
        error raised before this point costs nothing; a
        :class:`~dperm.exceptions.BudgetExceededError` raised here releases
        nothing. (``fit`` also asks :func:`~dperm.privacy.accounting.check_budget_left`
        first, so an exhausted budget is reported before any data pass.)
        """
        spend_before_fitting(self.accountant, *self._budget_request(params))

    def _delta_spent(self, params):
        """The delta the mechanism's guarantee uses (0 for a pure mechanism).

        Before ``mechanism="auto"`` is resolved (the budget check at the start of
        ``fit``): ``delta`` if any candidate would spend it.
        """
        if params.mechanism is None:
            spends = any(MECHANISMS[name].uses_delta for name in params.candidates)
            return params.delta if spends else 0.0
        return MECHANISMS[params.mechanism].delta_spent(params.delta)

    def _mechanism_choice_reason(self):
        """Why ``mechanism="auto"`` chose the mechanism (the record's ``mechanism_choice``), or None."""
        return self._mechanism_choice.reason if self._mechanism_choice else None

    def _spend_label(self):
        loss = getattr(self, "loss", "logistic")
        return f"{type(self).__name__}(mechanism={self._mechanism_name()!r}, loss={loss!r})"

    def _augment(self, X, data_norm, scaling):
        """Append the intercept feature; its value counts toward the norm bound.

        With ``fit_intercept=True`` every row gets a constant feature equal to
        ``intercept_scaling`` and the calibration uses the augmented bound
        ``sqrt(data_norm^2 + intercept_scaling^2)``, so the guarantee covers the
        intercept. The intercept is regularised like every other coefficient.
        """
        if not self.fit_intercept:
            return X, data_norm
        return append_intercept_feature(X, data_norm, scaling)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        tags.input_tags.sparse = True
        return tags


class PrivateLinearClassifierBase(LinearClassifierMixin, PrivateLinearModelBase):
    """Base class; subclasses define ``_make_loss``. See the public estimators."""

    _parameter_constraints: dict = {
        **PrivateLinearModelBase._parameter_constraints,
        "delta": [Interval(Real, 0, 1, closed="left")],
        "alpha": [POSITIVE, StrOptions({"auto", MONOTONE})],  # "monotone": issue 30's opt-in rule
        "mechanism": [StrOptions(set(MECHANISMS) | {AUTO})],
        "scheduler": "no_validation",  # checked where Dask is used (dperm.scale)
        "classes": "no_validation",  # dperm.privacy.labels.check_classes
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=0.0,
        alpha="auto",
        mechanism=AUTO,
        data_norm=1.0,
        fit_intercept=True,
        intercept_scaling=1.0,
        max_iter=1000,
        tol=1e-8,
        random_state=None,
        accountant=None,
        scheduler=None,
        classes=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.mechanism = mechanism
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.accountant = accountant
        self.scheduler = scheduler
        self.classes = classes

    def _check_targets(self, y, params):
        check_classification_targets(y)
        return Targets(y, resolve_label_set(params.classes, y))

    def _n_problems(self, label_set) -> int:
        return one_vs_rest_positives(label_set.classes).size

    def _solve(self, X, targets, params, rng, effective_norm):
        """One binary problem per positive class of the public label set (one-vs-rest)."""
        positives = one_vs_rest_positives(targets.label_set.classes)  # the split comes from the label set only
        mechanism = MECHANISMS[params.mechanism]
        return [  # every problem has the same public calibration (each its share of the budget)
            mechanism.release(
                ERMProblem(*binary_rows(X, targets.y, positive), params.loss, params.alpha,
                           effective_norm, sample_weight=targets.sample_weight),
                params.calibration,
                rng,
                params.tol,
                params.max_iter,
            )
            for positive in positives
        ]

    def _fit_distributed(self, X, y, params):
        """Fit a Dask X / y without loading it: the fit skeleton on :class:`dperm.scale.ChunkedRows`.

        The provider's scan validates every chunk (the Dask form of ``validate_data``
        and the label check) before the budget is spent. How many passes the solve
        took depends on the data and is not released.
        """
        from dperm.scale import check_distributed_loss, chunked_rows

        check_distributed_loss(params.loss)  # before any budget is spent
        with chunked_rows(X, y, params, fit_intercept=bool(self.fit_intercept),
                          scheduler=self.scheduler) as (rows, label_set):
            self.n_features_in_ = rows.n_features
            return self._fit_rows(rows, Targets(None, label_set), params)

    def _store(self, outputs, targets, params):
        coef = np.vstack([out.coef for out in outputs])
        self.classes_ = targets.label_set.classes
        if self.fit_intercept:
            self.coef_ = coef[:, :-1]
            self.intercept_ = coef[:, -1] * params.scaling
        else:
            self.coef_ = coef
            self.intercept_ = np.zeros(len(outputs))

    # -- prediction (Dask collections are handled chunk by chunk, lazily) ----
    def decision_function(self, X):
        if is_dask_collection(X):
            from dperm.scale import predict_blockwise

            return predict_blockwise(self, X, "decision_function")
        return super().decision_function(X)

    def predict(self, X):
        if is_dask_collection(X):
            from dperm.scale import predict_blockwise

            return predict_blockwise(self, X, "predict")
        return super().predict(X)

    def score(self, X, y, sample_weight=None):
        if is_dask_collection(X):
            if sample_weight is not None:
                raise ValueError("sample_weight is not supported with Dask input.")
            from dperm.scale import score_distributed

            return score_distributed(self, X, y)
        return super().score(X, y, sample_weight=sample_weight)

    def _record(self, outputs, params, effective_norm, n_samples, targets, engine="memory"):
        """The record: public inputs and the one calibration every output released with.

        Every field is declared by :mod:`dperm.privacy.release`.
        """
        return linear_record(
            MECHANISMS[params.mechanism], params.calibration, params.epsilon,
            self._delta_spent(params), n_problems=len(outputs),
            loss=params.loss, data_norm=params.data_norm, alpha=params.alpha, tol=params.tol,
            effective_norm=effective_norm, n_samples=n_samples, engine=engine,
            label_set_public=targets.label_set.public,
            mechanism_choice=self._mechanism_choice_reason(),
        )
