"""Native multiclass for the logistic classifier: one multinomial problem or K one-vs-rest ones.

``multi_class="multinomial"`` fits one softmax model under a multiclass row of
:data:`~dperm.mechanisms.catalog.MECHANISMS` (pure multinomial objective perturbation,
:mod:`dperm.mechanisms.multinomial_objective`, or with ``delta > 0`` its Gaussian form,
:mod:`dperm.mechanisms.gaussian_multinomial_objective`) with the whole budget; ``"ovr"``
keeps the K binary problems at ``epsilon / K`` each; ``"auto"`` (the default) compares them
from public quantities only (:func:`compare_multiclass`). The
estimator's skeleton is :class:`~dperm.linear_model._base.PrivateLinearClassifierBase`;
this mixin overrides only the steps that differ (public choices, solve, store, record).
The derivation is docs/design/multinomial.md.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from dperm.exceptions import NoiseSwampsSignalError
from dperm.losses_multinomial import MultinomialLogisticLoss
from dperm.mechanisms import MECHANISMS, PublicProblem
from dperm.mechanisms.choice import AUTO, SWAMPED_RATIO, auto_alpha, noise_to_signal
from dperm.mechanisms.multinomial_objective import MULTINOMIAL_OBJECTIVE, MultinomialProblem
from dperm.privacy.multinomial import MULTINOMIAL_GRADIENT_BOUND
from dperm.validation import is_dask_collection

#: Values of ``multi_class``.
MULTINOMIAL, OVR = "multinomial", "ovr"
MULTI_CLASS_OPTIONS = (AUTO, MULTINOMIAL, OVR)


def multiclass_rows(mechanism: str, delta: float) -> tuple[str, ...]:
    """The multiclass rows the multinomial model may run under ``mechanism=`` and ``delta``.

    ``"auto"``: every multiclass row whose theorem covers ``delta`` (the pure form always,
    the Gaussian form when ``delta > 0``); a binary objective mechanism that
    ``mechanism="auto"`` may choose (``"objective"``, ``"gaussian_objective"``): the
    multiclass rows of the same kind of guarantee (pure or ``(epsilon, delta)``); any other
    mechanism (output perturbation, the reproduction of 004): none. Read from the table's
    flags, in its order (ties of the comparison go to the earlier row).
    """
    loss = MultinomialLogisticLoss(3)  # the rows check the loss's name and constants, not K
    rows = [m for m in MECHANISMS.values() if m.multiclass and m.accepts(loss, delta)]
    if mechanism == AUTO:
        return tuple(m.name for m in rows)
    binary = MECHANISMS.get(mechanism)
    if binary is None or binary.multiclass or not (binary.auto_candidate and binary.needs_curvature):
        return ()
    return tuple(m.name for m in rows if m.uses_delta == binary.uses_delta)


@dataclass(frozen=True)
class MulticlassChoice:
    """What ``multi_class="auto"`` compared and chose.

    Attributes
    ----------
    multi_class : {"multinomial", "ovr"}
    multinomial_score, ovr_score : float
        Each one's public noise-to-signal ratio per class (:func:`compare_multiclass`).
    reason : str
        One sentence for the privacy record.
    """

    multi_class: str
    multinomial_score: float
    ovr_score: float
    reason: str


class _PerClassColumn:
    """The constants :func:`dperm.mechanisms.choice.auto_alpha` reads, for one class's column of ``W``.

    The rule's base is ``R_x`` times the RMS noise norm the weights to be regularised see,
    over ``n`` (its docstring). For the multinomial model that is one column of the
    ``(d, K)`` noise: the lattice L2 law spreads ``E||b||^2`` evenly over the ``K`` columns,
    and ``||b||`` is linear in the span ``2 L R``, so the noise of ``d K`` coordinates at
    ``L = sqrt(2 / K)`` has exactly the per-column RMS norm of the real noise at
    ``L = sqrt(2)``. A derivation, not a fitted constant: the rule's ``(C, p)`` are unchanged.
    """

    name = "multinomial_logistic"

    def __init__(self, n_classes: int):
        self.lipschitz = MULTINOMIAL_GRADIENT_BOUND / math.sqrt(n_classes)
        self.curvature = 0.25
        # the Jacobian's (K - 1) log(1 + R^2 / (K n alpha)) per factor (dperm.privacy.alpha.jacobian_alpha)
        self.jacobian_curvature = (n_classes - 1) / n_classes


def multinomial_public_problem(n_samples, n_features, n_classes, alpha, data_norm):
    """The :class:`MultinomialProblem` of public sizes only (no rows): for calibration."""
    return MultinomialProblem(None, None, n_classes, alpha, data_norm, n_samples, n_features)


def _multinomial_score(problem: MultinomialProblem, epsilon: float, tol: float,
                      calibration=None, mechanism: str = MULTINOMIAL_OBJECTIVE,
                      delta: float = 0.0) -> float:
    """Noise per class column over the largest column a minimiser can have, ``R / alpha``.

    Column ``k`` of the minimiser is ``-(1 / (n alpha)) sum_i x_i (p_ik - [y_i = k])``, of
    norm at most ``R / alpha`` (``|p_ik - [y_i = k]| <= 1``); the noise per column is the
    row ``mechanism``'s public expected perturbation over ``sqrt(K)`` (both laws spread
    their mean square evenly over the K columns), of ``calibration`` when the caller
    computed it, else of the row's calibration at ``epsilon`` (and ``delta``).
    """
    row = MECHANISMS[mechanism]
    if calibration is None:
        calibration = row.calibrate(problem, epsilon, row.delta_spent(delta), tol)
    noise = row.score(problem, calibration) / math.sqrt(problem.n_classes)
    return noise * problem.alpha / problem.data_norm


def compare_multiclass(multinomial_problem: MultinomialProblem, ovr_problem: PublicProblem,
                       ovr_mechanism: str, epsilon: float, delta: float, tol: float, *,
                       multinomial_calibration=None, ovr_calibration=None,
                       multinomial_mechanism: str = MULTINOMIAL_OBJECTIVE) -> MulticlassChoice:
    """``"multinomial"`` or ``"ovr"``: the smaller public noise-to-signal ratio per class.

    Both models give each class a weight vector (a column of ``W``; a binary problem's
    ``w``) whose norm is at most ``R / alpha`` (the multinomial residual ``p_ik - [y_i = k]``
    and the logistic derivative are both at most 1 in size), and predict by the largest
    score. The ratio of the RMS noise on one class's vector to that bound is, for
    one-vs-rest, :func:`dperm.mechanisms.choice.noise_to_signal` of its mechanism at
    ``epsilon / K`` (each of the K problems), and for the multinomial model
    :func:`_multinomial_score` at the whole ``epsilon``. For the Laplace-type noise of pure
    objective perturbation the ratios are about ``2 sqrt(2 K) d / (n eps)`` and
    ``2 K d / (n eps)``: one noise matrix at the whole budget puts about
    ``sqrt(2 / K)`` times the noise on each class (docs/design/multinomial.md,
    "Multinomial or one-vs-rest"). Public quantities only; ties go to the multinomial model.
    The two calibrations, when the caller computed them, are scored as they are (each is
    computed once per fit). ``multinomial_mechanism`` is the multiclass row the multinomial
    model runs (the Gaussian one's noise norm grows like ``sqrt(d K)``,
    docs/design/gaussian_multinomial.md).
    """
    K = multinomial_problem.n_classes
    multinomial = _multinomial_score(multinomial_problem, epsilon, tol, multinomial_calibration,
                                     multinomial_mechanism, delta)
    ovr = noise_to_signal(ovr_problem, ovr_mechanism, epsilon / K, delta / K, tol, ovr_calibration)
    chosen = MULTINOMIAL if multinomial <= ovr else OVR
    reason = (f"multi_class={chosen!r}: noise per class over the largest class weight "
              f"{min(multinomial, ovr):.3g} against {max(multinomial, ovr):.3g} "
              f"({'one-vs-rest' if chosen == MULTINOMIAL else 'multinomial'}; public n, d, K, "
              "R, epsilon, delta and alpha)")
    return MulticlassChoice(chosen, multinomial, ovr, reason)


class MultinomialClassifierMixin:
    """``multi_class`` for a logistic classifier on K > 2 public labels (see the module docstring).

    Put before :class:`~dperm.linear_model._base.PrivateLinearClassifierBase` in the bases.
    Sets ``multi_class_`` (public: decided from the label set's size, n, d, epsilon).
    """

    _multinomial_fit_distributed = False

    def _check_params(self):
        params = super()._check_params()
        if self.multi_class == MULTINOMIAL and not multiclass_rows(self.mechanism, params.delta):
            raise ValueError(
                f"multi_class='multinomial' runs multinomial objective perturbation (pure, or "
                f"Gaussian with delta > 0); mechanism={self.mechanism!r} is not available for it. "
                "Use mechanism='auto', 'objective' or 'gaussian_objective', or multi_class='ovr'.")
        return params

    def _multinomial_alpha(self, params, n_samples, dimension, norm, n_classes, mechanism):
        if params.alpha is not None:
            return params.alpha
        row = MECHANISMS[mechanism]
        return auto_alpha(n_samples, dimension * n_classes, params.epsilon,
                          row.delta_spent(params.delta), mechanism=mechanism,
                          loss=_PerClassColumn(n_classes), data_norm=norm,
                          feature_norm=params.data_norm, variant=self._alpha_variant(),
                          noise_options={"n_classes": n_classes})

    def _best_multiclass_row(self, params, n_samples, dimension, norm, n_classes, rows):
        """``(name, problem, calibration, score)`` of the multiclass row with the smallest
        public noise per class (:func:`_multinomial_score`), each row at its own alpha
        (given, or the rule's for that row), each calibration computed once; ties go to the
        earlier row. With several rows the comparison's sentence is kept for the record."""
        best, scores = None, []
        for name in rows:
            row = MECHANISMS[name]
            alpha = self._multinomial_alpha(params, n_samples, dimension, norm, n_classes, name)
            problem = multinomial_public_problem(n_samples, dimension, n_classes, alpha, norm)
            calibration = row.calibrate(problem, params.epsilon, row.delta_spent(params.delta),
                                        params.tol)
            score = _multinomial_score(problem, params.epsilon, params.tol, calibration, name)
            scores.append(f"{name} {score:.3g}")
            if best is None or score < best[3]:
                best = (name, problem, calibration, score)
        if len(rows) > 1:
            self._multiclass_row_choice = (
                f"multinomial model: {best[0]!r}, the smaller public noise per class over the "
                f"largest class weight ({', '.join(scores)})")
        return best

    def _with_public_choices(self, params, n_samples, n_features, n_problems=1, *,
                             check_budget=True):
        """``multi_class`` resolved first (public K, n, d, epsilon), then the base's choices.

        With two labels there is one binary problem whichever ``multi_class`` says (its
        multinomial model is the same logistic regression). For ``K >= 3``: ``"ovr"`` is the
        base's one-vs-rest; ``"multinomial"`` sets ``mechanism_ = "multinomial_objective"``
        and ``alpha_`` (:func:`dperm.mechanisms.choice.auto_alpha` on the noise one class column sees,
        :class:`_PerClassColumn`); ``"auto"`` resolves one-vs-rest's mechanism and alpha as the
        base does and keeps whichever :func:`compare_multiclass` prefers. Dask input runs
        one-vs-rest (its Newton passes are binary). With ``delta > 0`` the multinomial
        model's candidates are the pure and the Gaussian multiclass rows
        (:func:`multiclass_rows`); the one with the smaller public noise per class runs.
        """
        self._multiclass_choice = None
        self._multiclass_row_choice = None
        n_classes = n_problems
        multi_class = self.multi_class
        if n_classes >= 3 and multi_class == MULTINOMIAL and self._multinomial_fit_distributed:
            raise ValueError("multi_class='multinomial' is not available for Dask input; use "
                             "multi_class='ovr' (or 'auto'). Nothing was spent.")
        # 'multinomial' with no row is refused by _check_params, so only 'auto' can find none
        rows = () if n_classes < 3 else multiclass_rows(self.mechanism, params.delta)
        if multi_class == OVR or self._multinomial_fit_distributed or not rows:
            self.multi_class_ = OVR
            return super()._with_public_choices(params, n_samples, n_features, n_problems,
                                                check_budget=check_budget)
        dimension = n_features + int(bool(self.fit_intercept))
        norm = self._effective_norm(params)
        if multi_class == AUTO:
            ovr_params = super()._with_public_choices(params, n_samples, n_features, n_problems,
                                                      check_budget=False)
        mechanism, problem, calibration, _ = self._best_multiclass_row(
            params, n_samples, dimension, norm, n_classes, rows)
        alpha = problem.alpha
        if multi_class == AUTO:
            ovr_problem = PublicProblem(n_samples, dimension, params.loss, ovr_params.alpha, norm)
            choice = compare_multiclass(problem, ovr_problem, ovr_params.mechanism,
                                        params.epsilon, params.delta, params.tol,
                                        multinomial_calibration=calibration,
                                        ovr_calibration=ovr_params.calibration,
                                        multinomial_mechanism=mechanism)
            self._multiclass_choice = choice
            if choice.multi_class == OVR:
                self.multi_class_ = OVR
                if check_budget:
                    self._check_budget_for_data(ovr_params, params.alpha, n_samples, dimension,
                                                norm, n_problems)
                return ovr_params
        self.multi_class_ = MULTINOMIAL
        self._multinomial_n_classes = n_classes
        self._mechanism_choice = None
        self.mechanism_ = mechanism
        self.alpha_ = alpha
        params = params._replace(mechanism=mechanism, alpha=alpha, calibration=calibration)
        if check_budget:
            self._check_multinomial_budget(params, problem)
        return params

    def _check_multinomial_budget(self, params, problem):
        """The budget's sanity checks before anything is spent (as the base's, for one problem)."""
        from dperm.validation import check_budget_for_data

        check_budget_for_data(params.epsilon, params.delta, problem.n_samples)
        ratio = _multinomial_score(problem, params.epsilon, params.tol, params.calibration,
                                   params.mechanism)
        if ratio >= SWAMPED_RATIO:
            raise NoiseSwampsSignalError(
                f"epsilon={params.epsilon:g} is too small for n_samples={problem.n_samples}, "
                f"d={problem.n_features}, K={problem.n_classes}: the multinomial noise per class "
                f"(public expected size {ratio:.3g} times the largest class weight any minimiser "
                f"can have, R / alpha with alpha={problem.alpha:.3g}) would swamp every "
                "coefficient. Use a larger epsilon, more rows or fewer features. Nothing was spent.")

    def _fit_distributed(self, X, y, params):
        self._multinomial_fit_distributed = True
        try:
            return super()._fit_distributed(X, y, params)
        finally:
            self._multinomial_fit_distributed = False

    def _solve(self, X, targets, params, rng, effective_norm):
        if not _is_multiclass(params.mechanism):
            return super()._solve(X, targets, params, rng, effective_norm)
        classes = targets.label_set.classes
        labels = np.searchsorted(classes, targets.y)  # y lies in the public label set (checked)
        problem = MultinomialProblem(X, labels, classes.size, params.alpha, effective_norm,
                                     sample_weight=targets.sample_weight)
        return [MECHANISMS[params.mechanism].release(problem, params.calibration, rng, params.tol,
                                                     params.max_iter)]

    def _store(self, outputs, targets, params):
        if not _is_multiclass(params.mechanism):
            return super()._store(outputs, targets, params)
        W = outputs[0].coef  # (d, K), the intercept's row last
        self.classes_ = targets.label_set.classes
        if self.fit_intercept:
            self.coef_ = W[:-1].T.copy()
            self.intercept_ = W[-1] * params.scaling
        else:
            self.coef_ = W.T.copy()
            self.intercept_ = np.zeros(W.shape[1])

    def _record(self, outputs, params, effective_norm, n_samples, targets, engine="memory"):
        multiclass = _is_multiclass(params.mechanism)
        if multiclass:  # the base's record of one problem (no binary choice), with the model's loss
            params = params._replace(loss=MultinomialLogisticLoss(self._multinomial_n_classes))
            outputs = outputs[:1]  # a model file's recomputation passes one calibration per class
        record = super()._record(outputs, params, effective_norm, n_samples, targets, engine)
        reasons = [self._multiclass_choice.reason if self._multiclass_choice is not None else None,
                   getattr(self, "_multiclass_row_choice", None) if multiclass else None]
        reason = "; ".join(r for r in (*reasons, record.mechanism_choice) if r)
        if any(reasons):
            record = dataclasses.replace(record, mechanism_choice=reason)
        return record

    def predict_proba(self, X):
        """Class probabilities: the softmax of the scores (multinomial) or normalised one-vs-rest."""
        if _is_multiclass(getattr(self, "mechanism_", None)):  # also set by load_model
            if is_dask_collection(X):
                from dperm.scale import predict_blockwise

                # the workers compute the public scores chunk by chunk (PublicLinearScores), lazily
                return predict_blockwise(self, X, "decision_function").map_blocks(_softmax, dtype=np.float64)
            return _softmax(self.decision_function(X))
        return self._predict_proba_lr(X)


def _is_multiclass(mechanism) -> bool:
    """Whether ``mechanism`` names a multiclass row (one ``(d, K)`` model), from the table."""
    row = MECHANISMS.get(mechanism) if isinstance(mechanism, str) else None
    return row is not None and row.multiclass


def _softmax(scores):
    """Row-wise softmax of ``(n, K)`` scores (the multinomial model's class probabilities)."""
    scores = scores - scores.max(axis=1, keepdims=True, initial=-np.inf)
    exponentials = np.exp(scores)
    return exponentials / exponentials.sum(axis=1, keepdims=True)
