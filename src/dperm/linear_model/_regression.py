"""Differentially private linear regression: quantile (pinball), robust (pseudo-Huber) and least squares.

The quantile regressor releases ``argmin_w (1/n) sum loss(y_i - w.x_i) + alpha/2 ||w||^2``
plus vector noise (output perturbation, 003 Alg. 1), calibrated to the
sensitivity of Nie & Wang (paper 000) Thm 2, which needs only a convex loss,
Lipschitz in the prediction, and the strongly convex regulariser: no
derivative, so the pinball loss qualifies (000 Sec. 5). The noise is a vector
in coefficient space: the scalar shift of 000 eq. 2 would not make the released
model private (paper note 6). The robust regressor fits a smooth, globally
Lipschitz residual loss (pseudo-Huber), which objective perturbation covers too
(003 Thm 2 for a residual, ``docs/design/losses.md``); least squares has AdaSSP.

The estimators are thin: check parameters and data, clip rows (and, for least
squares, labels) to public bounds, hand the problem to
:func:`dperm.mechanisms.output_perturbation`, and store the result with its
:class:`~dperm.privacy.record.PrivacyRecord`. No privacy arithmetic happens here.
"""

from __future__ import annotations

import dataclasses
import math
from numbers import Real

import numpy as np
from scipy import sparse
from sklearn.base import RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from dperm.catalog import loss_names
from dperm.linear_model._base import POSITIVE, PrivateLinearModelBase, Targets
from dperm.linear_model._targets import (
    centre_and_half_width,
    check_target_bounds,
    clip_targets,
    to_centred,
    to_unit_interval,
    warn_clipped_targets,
)
from dperm.losses import PinballLoss, SquaredLoss, get_loss
from dperm.mechanisms import MECHANISMS, ERMProblem, PublicProblem
from dperm.mechanisms.catalog import binary_mechanisms
from dperm.mechanisms.choice import AUTO
from dperm.privacy.record import linear_record
from dperm.privacy.sufficient_statistics import INTERCEPT_ONLY_RIDGE_FRACTION, slopes_swamped
from dperm.privacy.sufficient_statistics_record import sufficient_statistics_record
from dperm.validation import (
    check_budget_for_data,
    clip_rows_to_norm,
)

MECHANISM = "output"


class PrivateLinearRegressorBase(RegressorMixin, PrivateLinearModelBase):
    """Base class; subclasses define ``_make_loss``. See the public estimators.

    Output perturbation (000 Thm 2 needs no derivative of the loss), pure epsilon-DP,
    unless a subclass names another mechanism (``_mechanism_name``); the fit is
    :meth:`PrivateLinearModelBase.fit`, and the solve and the record use the mechanism
    it resolved (``params.mechanism``).
    """

    #: Added to the record's reference: the paper behind the subclass's loss.
    _loss_reference = ""
    _validate_y = {"y_numeric": True}

    def __init__(
        self,
        *,
        epsilon=1.0,
        alpha="auto",
        data_norm=1.0,
        fit_intercept=True,
        intercept_scaling=1.0,
        max_iter=1000,
        tol=1e-8,
        random_state=None,
        accountant=None,
    ):
        self.epsilon = epsilon
        self.alpha = alpha
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.accountant = accountant

    def _mechanism_name(self) -> str:
        return getattr(self, "mechanism", MECHANISM)  # PrivateQuantileRegressor has no parameter

    def _spend_label(self):
        return f"{type(self).__name__}(mechanism={self._mechanism_name()!r})"

    def _prepare_labels(self, y, loss):
        """Per-record label preprocessing after the budget is spent (none by default)."""
        return y

    def _check_targets(self, y, params):
        """``y`` as floats; string labels (which ``y_numeric`` lets through) are an error."""
        try:
            return Targets(np.asarray(y, dtype=np.float64))
        except ValueError as error:
            raise ValueError(f"y must hold real-valued targets for a regressor; {error}.") from None

    def _problem_budget(self, params, n_problems):
        """One problem, pure epsilon-DP: ``(epsilon, 0)``."""
        return params.epsilon, 0.0

    def _solve(self, X, targets, params, rng, effective_norm):
        y = self._prepare_labels(targets.y, params.loss)
        problem = ERMProblem(X, y, params.loss, params.alpha, effective_norm,
                             sample_weight=targets.sample_weight)
        return [MECHANISMS[params.mechanism].release(problem, params.calibration, rng, params.tol,
                                                     params.max_iter)]

    def _store(self, outputs, targets, params):
        self._set_coefficients(outputs[0].coef, params.scaling)

    def _set_coefficients(self, coef, intercept_scaling):
        if self.fit_intercept:
            self.coef_ = coef[:-1]
            self.intercept_ = float(coef[-1] * intercept_scaling)
        else:
            self.coef_ = coef
            self.intercept_ = 0.0

    def _record(self, outputs, params, effective_norm, n_samples, targets, engine="memory"):
        row = MECHANISMS[params.mechanism]
        return linear_record(
            row, params.calibration, params.calibration.epsilon, self._delta_spent(params),
            n_problems=1, loss=params.loss,
            data_norm=params.data_norm, alpha=params.alpha, tol=params.tol,
            effective_norm=effective_norm, n_samples=n_samples,
            reference=f"{row.reference}; {self._loss_reference}",
            mechanism_choice=self._mechanism_choice_reason(),
        )

    # -- prediction -------------------------------------------------------
    def _linear_prediction(self, X):
        """``X @ coef_ + intercept_`` after clipping rows to ``data_norm``, as in ``fit``.

        The model was fitted on rows of norm at most ``data_norm``; clipping at
        prediction time keeps every answer that of a row it could have seen, and
        finite for any finite input.
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if sparse.issparse(X):
            X = X.toarray()
        X, _ = clip_rows_to_norm(X, float(self.data_norm))
        return X @ self.coef_ + self.intercept_

    def predict(self, X):
        """Predict ``X @ coef_ + intercept_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._linear_prediction(X)


class _OptionalTargetBounds:
    """Optional public target bounds (``y_bound`` / ``y_bounds``) for a Lipschitz residual loss.

    With bounds, the targets are clipped to them (warned, no row dropped) and mapped onto
    ``[-1, 1]`` before the solve; the released coefficients and intercept are mapped back
    (post-processing of public values) and predictions clipped to the bounds. Without them
    the targets are used as given. Mixed in before :class:`PrivateLinearRegressorBase`.
    """

    def _target_bounds(self):
        """``(lower, upper)``, or None when neither ``y_bound`` nor ``y_bounds`` is given."""
        if self.y_bound is None and self.y_bounds is None:
            return None
        return check_target_bounds(self.y_bound, self.y_bounds)

    def _check_params(self):
        params = super()._check_params()
        self._target_bounds()  # refuse bad bounds before any budget
        return params

    def _prepare_labels(self, y, loss):
        """With public bounds: clip (warned in the user's units, no row dropped) and map onto [-1, 1].

        A Lipschitz loss's noise does not depend on the target's scale (the pinball's constant
        is ``max(tau, 1 - tau)``, the pseudo-Huber's 1, whatever the range), but the ridge term
        and ``alpha='auto'`` do: on targets in natural units the minimiser's coefficients are
        large and the rule's alpha shrinks them to about a constant (issue 30: R^2 below a
        constant model on 4 of 9 tables). On ``[-1, 1]`` the solution has the scale the rule
        assumes, as for :class:`PrivateLeastSquares`; coefficients and intercept are mapped
        back (times the public half width, plus the public centre: post-processing).
        """
        bounds = self._target_bounds()
        if bounds is None:
            return y
        y, n_clipped = clip_targets(y, *bounds)
        warn_clipped_targets(n_clipped, *bounds)
        return to_unit_interval(y, *bounds)

    def _record(self, outputs, params, effective_norm, n_samples, targets, engine="memory"):
        record = super()._record(outputs, params, effective_norm, n_samples, targets, engine)
        bounds = self._target_bounds()
        if bounds is None:
            return record
        return dataclasses.replace(record, target_bounds=bounds)

    def _coefficient_scale(self) -> float:
        """The public factor the released coefficients were multiplied by: the bounds' half width."""
        bounds = self._target_bounds()
        return 1.0 if bounds is None else centre_and_half_width(*bounds)[1]

    def _store(self, outputs, targets, params):
        super()._store(outputs, targets, params)
        bounds = self._target_bounds()
        if bounds is not None:  # back to the target's units (post-processing of public values)
            centre, half = centre_and_half_width(*bounds)
            self.coef_ = self.coef_ * half
            self.intercept_ = float(self.intercept_ * half + centre)

    def _intercept_on_grid(self) -> bool:
        """Whether ``intercept_`` is on the release grid (times :meth:`_coefficient_scale`,
        :func:`dperm.model_io.check_on_grid`): not when the public centre of the target
        bounds was added to it."""
        bounds = self._target_bounds()
        return bounds is None or centre_and_half_width(*bounds)[0] == 0.0

    def predict(self, X):
        """Predict ``X @ coef_ + intercept_``, clipped to the public target bounds if given.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        predictions = self._linear_prediction(X)
        bounds = self._target_bounds()
        return predictions if bounds is None else np.clip(predictions, *bounds)


class PrivateQuantileRegressor(_OptionalTargetBounds, PrivateLinearRegressorBase):
    """Linear quantile regression with a differential privacy guarantee.

    Minimises ``(1/n) sum rho_tau(y_i - w.x_i) + alpha/2 ||w||^2`` with the
    pinball loss ``rho_tau(r) = max(tau r, (tau - 1) r)`` and releases the
    minimiser plus noise (output perturbation). The pinball loss is not
    differentiable, so objective perturbation does not apply; output
    perturbation needs only its Lipschitz constant ``max(tau, 1 - tau)``
    (Nie & Wang 2017, Thm 2 and Sec. 5). The labels need no bound, but public
    ``y_bounds`` put them on the unit scale the default alpha is made for.

    The L2 sensitivity of the exact minimiser is
    ``2 max(tau, 1 - tau) R / (n alpha)`` with ``R`` the (intercept-augmented)
    row-norm bound. The solve is certified to within 0.5 % of that
    (a Huberised pinball with ``0 <= smooth - pinball <= h/4`` plus Newton
    steps, or a duality gap); the noise is calibrated to the sum.

    Parameters
    ----------
    quantile : float in (0, 1), default=0.5
        ``tau``, the quantile to estimate (0.5: median regression).
    y_bound, y_bounds : float or (float, float), default=None
        Optional public target bounds, as in :class:`PrivateLeastSquares`: targets are
        clipped to ``(lower, upper)`` (warned, decided in the user's units, no row dropped)
        and mapped affinely onto ``[-1, 1]`` (``(y - centre) / half_width``), so the
        regularised intercept is shrunk toward the bounds' centre, not toward 0, and the
        solution has the unit scale ``alpha="auto"`` assumes. The released coefficients
        and intercept are mapped back (times the half width, plus the centre:
        post-processing) and predictions are clipped to the bounds. The pinball loss's
        noise on the unit scale does not depend on the bounds; in the user's units it
        is the half width times it. Give them for targets in natural units: without
        bounds the targets are used as given (the loss needs no bound on them), and the
        ridge term then shrinks a large-scale solution to about a constant.
    epsilon : float, default=1.0
        Privacy loss bound of the released model (must be > 0); pure epsilon-DP.
    alpha : float or "auto", default="auto"
        L2 regularisation strength: the objective is
        ``(1/n) sum loss + (alpha/2) ||w||^2``, so ``alpha`` is Chaudhuri et
        al.'s ``Lambda`` and Nie & Wang's ``lambda`` is ``alpha/2`` (paper
        note 7). ``"auto"`` sets it from
        public quantities only (n, d, epsilon, delta, the norm bound, the loss and
        the mechanism; :func:`dperm.mechanisms.choice.auto_alpha`), never from the data; the
        value used is ``alpha_``. Larger alpha means less noise.
    data_norm : float, default=1.0
        Public bound on the L2 norm of a row of X. Longer rows are scaled onto
        it (per record, so the guarantee holds) with a ``DataClippingWarning``.
    fit_intercept : bool, default=True
        Fit an intercept through a constant feature ``intercept_scaling`` that
        counts toward the norm bound (the noise is calibrated to
        ``sqrt(data_norm**2 + intercept_scaling**2)``) and is regularised.
    intercept_scaling : float, default=1.0
    max_iter : int, default=1000
        Iteration budget of each fast solver stage (at least 1,000 for the
        pinball); a proven method finishes a solve they leave uncertified
        (docs/releases.md, "Solver failures").
    tol : float, default=1e-8
        Recorded in ``privacy_``; the pinball solve is certified to the radius
        above instead of a gradient norm.
    random_state : None, int or numpy Generator, default=None
        ``None`` draws every noise bit from the OS CSPRNG (:mod:`dperm.randomness`),
        as a released model must. A seed is meant for testing only.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_features_in_ : int
    privacy_ : dperm.privacy.record.PrivacyRecord
        The guarantee and every number behind it (``lipschitz`` is ``C_L``).

    References
    ----------
    Nie & Wang, "Perturbation of convex risk minimization and its application
    in differential private learning algorithms", J. Inequal. Appl. (2017),
    Thm 2 and Sec. 5. Chaudhuri, Monteleoni & Sarwate (2011), Alg. 1.

    Examples
    --------
    >>> import numpy as np
    >>> from dperm import PrivateQuantileRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(2000, 2))
    >>> y = X @ [1.0, -1.0] + rng.standard_t(2, size=2000)
    >>> model = PrivateQuantileRegressor(quantile=0.5, epsilon=1.0, random_state=0).fit(X, y)
    >>> model.coef_.shape, type(model.intercept_)
    ((2,), <class 'float'>)
    """

    _loss_reference = "pinball loss, L = max(tau, 1 - tau) (Nie & Wang 2017, Sec. 5)"
    _parameter_constraints: dict = {
        **PrivateLinearRegressorBase._parameter_constraints,
        "quantile": [Interval(Real, 0, 1, closed="neither")],
        "y_bound": [POSITIVE, None],
        "y_bounds": "no_validation",  # dperm.linear_model._targets.check_target_bounds
    }

    def __init__(
        self,
        quantile=0.5,
        *,
        y_bound=None,
        y_bounds=None,
        epsilon=1.0,
        alpha="auto",
        data_norm=1.0,
        fit_intercept=True,
        intercept_scaling=1.0,
        max_iter=1000,
        tol=1e-8,
        random_state=None,
        accountant=None,
    ):
        super().__init__(
            epsilon=epsilon, alpha=alpha, data_norm=data_norm, fit_intercept=fit_intercept,
            intercept_scaling=intercept_scaling, max_iter=max_iter, tol=tol,
            random_state=random_state, accountant=accountant,
        )
        self.quantile = quantile
        self.y_bound = y_bound
        self.y_bounds = y_bounds

    def _make_loss(self):
        return PinballLoss(self.quantile)


#: ``loss=`` choices of :class:`PrivateRobustRegressor`: the losses :data:`dperm.catalog.LOSSES` gives it.
ROBUST_LOSSES = loss_names(estimator="PrivateRobustRegressor")


class PrivateRobustRegressor(_OptionalTargetBounds, PrivateLinearRegressorBase):
    """Robust linear regression with a differential privacy guarantee: the pseudo-Huber loss.

    Minimises ``(1/n) sum loss(y_i - w.x_i) + alpha/2 ||w||^2`` with the pseudo-Huber loss
    ``sqrt(h^2 + r^2) - h`` (:class:`dperm.losses.PseudoHuberLoss`): quadratic for residuals
    well inside ``h``, linear beyond, so an outlying target moves the fit by a bounded amount.
    The loss is smooth with ``|loss'| <= 1`` and ``loss'' <= c = 1/h``, so every mechanism
    of the table that covers it may release the model: objective perturbation (003 Alg. 2
    and Thm 2, whose proof carries to a residual: ``docs/design/losses.md``, "Pseudo-Huber"),
    its Gaussian form (004 Thm 4.1) and output perturbation (003 Alg. 1; 000 Thm 2 with
    ``C_L = 1``). ``mechanism="auto"`` chooses among the objective family from public
    quantities. The targets need no bound for privacy (a row's influence is capped by
    ``|loss'| < 1``); public ``y_bounds`` put them on the unit scale ``h`` and the default
    alpha are made for.

    Parameters
    ----------
    loss : {"pseudo_huber"}, default="pseudo_huber"
        The residual loss (the rows of :data:`dperm.catalog.LOSSES` naming this estimator).
    h : float, default=0.1
        The width where the loss turns from quadratic to linear, on the scale the solve sees:
        the ``[-1, 1]`` of ``y_bounds`` when given (0.1 is 5 % of the bounds' range), else the
        target's units. About the scale of the targets' noise on that scale is best: on
        Cauchy-noised synthetic targets (noise scale 0.05 on ``[-1, 1]``, 6 draws, epsilon 1,
        ``benchmarks/results/robust_regression.json``) the median coefficient error was
        0.32 / 0.57 / 1.48 at ``h`` = 0.1 / 0.3 / 1 for n = 3,000 (AdaSSP least squares 2.69)
        and 0.15 / 0.29 / 0.91 for n = 20,000 (0.34).
        ``c = 1/h`` is the objective mechanisms' curvature bound: a smaller ``h`` spends more
        of epsilon on the Jacobian term.
    y_bound, y_bounds : float or (float, float), default=None
        Optional public target bounds, as in :class:`PrivateQuantileRegressor`: targets are
        clipped to them (warned, no row dropped) and mapped onto ``[-1, 1]``; coefficients,
        intercept and predictions are mapped back (post-processing).
    epsilon : float, default=1.0
    delta : float in [0, 1), default=0.0
        ``0``: pure epsilon-DP; ``> 0`` also allows ``"gaussian_objective"``.
    mechanism : {"auto", "objective", "gaussian_objective", "output"}, default="auto"
        A row of :data:`dperm.mechanisms.MECHANISMS` whose theorem covers the loss.
    alpha, data_norm, fit_intercept, intercept_scaling, max_iter, tol, random_state, accountant
        As in :class:`PrivateQuantileRegressor` (``tol`` is the certified gradient norm).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_features_in_ : int
    mechanism_ : str
    alpha_ : float
    privacy_ : dperm.privacy.record.PrivacyRecord

    References
    ----------
    Chaudhuri, Monteleoni & Sarwate (2011), Alg. 1-2, Thms 1-2. Rajkumar & Agarwal (2012),
    Thm 4.1. Nie & Wang (2017), Thm 2.

    Examples
    --------
    >>> import numpy as np
    >>> from dperm import PrivateRobustRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(5000, 2))
    >>> y = 20 + X @ [10.0, -5.0] + rng.standard_t(1, size=5000)
    >>> model = PrivateRobustRegressor(y_bounds=(0, 40), epsilon=1.0).fit(X, y)
    >>> model.mechanism_
    'objective'
    """

    _loss_reference = "pseudo-Huber loss, L = 1, c = 1/h (docs/design/losses.md)"
    _parameter_constraints: dict = {
        **PrivateLinearRegressorBase._parameter_constraints,
        "loss": [StrOptions(set(ROBUST_LOSSES))],
        "h": [POSITIVE],
        "y_bound": [POSITIVE, None],
        "y_bounds": "no_validation",  # dperm.linear_model._targets.check_target_bounds
        "delta": [Interval(Real, 0, 1, closed="left")],
        "mechanism": [StrOptions({AUTO, *binary_mechanisms()})],
    }

    def __init__(
        self,
        *,
        loss="pseudo_huber",
        h=0.1,
        y_bound=None,
        y_bounds=None,
        epsilon=1.0,
        delta=0.0,
        mechanism=AUTO,
        alpha="auto",
        data_norm=1.0,
        fit_intercept=True,
        intercept_scaling=1.0,
        max_iter=1000,
        tol=1e-8,
        random_state=None,
        accountant=None,
    ):
        super().__init__(
            epsilon=epsilon, alpha=alpha, data_norm=data_norm, fit_intercept=fit_intercept,
            intercept_scaling=intercept_scaling, max_iter=max_iter, tol=tol,
            random_state=random_state, accountant=accountant,
        )
        self.loss = loss
        self.h = h
        self.y_bound = y_bound
        self.y_bounds = y_bounds
        self.delta = delta
        self.mechanism = mechanism

    def _make_loss(self):
        return get_loss(self.loss, h=self.h)

    def _spend_label(self):
        return PrivateLinearModelBase._spend_label(self)

    def _problem_budget(self, params, n_problems):
        """One problem: the whole ``(epsilon, delta)``."""
        return params.epsilon, params.delta


#: AdaSSP's two forms (:mod:`dperm.mechanisms.sufficient_statistics`): the rows of
#: :data:`~dperm.mechanisms.catalog.MECHANISMS` with no alpha declared for least squares only.
SUFFICIENT_STATISTICS = tuple(name for name, row in MECHANISMS.items()
                              if row.losses == ("squared",) and row.alpha_rule == "none")
ADASSP, GAUSSIAN_ADASSP = SUFFICIENT_STATISTICS


class PrivateLeastSquares(PrivateLinearRegressorBase):
    """Private linear least squares, good by default: AdaSSP with public target bounds.

    **Default (``mechanism="auto"``, ``alpha="auto"``): AdaSSP** (Wang 2018, Alg. 2;
    :mod:`dperm.mechanisms.sufficient_statistics`). The targets are clipped to the public
    bounds ``[lower, upper]`` and mapped affinely onto ``[-1, 1]``; the rows are clipped
    to ``data_norm`` and get the constant column ``intercept_scaling``. The Gram matrix
    ``sum z z^T``, the moment vector ``sum y z`` and ``lambda_min`` of the Gram matrix
    are released with exact, float-safe noise (49 / 49 / 2 per cent of epsilon in the pure
    form, a third of rho each in the Gaussian form), and the
    coefficients are ``(G~ + lambda P)^-1 m~`` with the adaptive ridge
    ``lambda = max(0, t - lambda~_min)``: as little regularisation as the noise allows,
    less as epsilon grows. The intercept's coordinate is not penalised (``P`` omits it),
    so it is not shrunk toward zero; its column is inside the statistics, and the
    sensitivities use the augmented bound ``R = sqrt(data_norm^2 + intercept_scaling^2)``
    (dperm's convention). Predictions are mapped back and clipped to ``[lower, upper]``
    (post-processing). With ``delta = 0`` the noise is Laplace-type and the fit pure
    ``epsilon``-DP (``"adassp"``); where Wang's ridge target is at least half of ``n R^2``
    (public n, d, R, epsilon: the noise would swamp every slope,
    :func:`~dperm.privacy.sufficient_statistics.slopes_swamped`), ``"auto"`` runs it on the
    intercept's constant column alone, so the model is the private mean of the targets and
    every slope is 0 (``privacy_.dimension`` is 1). With ``delta > 0`` ``"auto"`` compares, from public n,
    d, epsilon and delta only, the noise of the pure form and of the discrete Gaussian
    form (``"gaussian_adassp"``, ``(epsilon, delta)``-DP through zCDP) and takes the
    smaller. Sensitivities, budget split and conversions:
    :mod:`dperm.privacy.sufficient_statistics`.

    **Output perturbation** (``mechanism="output"``, chosen by ``"auto"`` when ``alpha``
    is a number): minimises ``(1/n) sum (y_i - c - w.x_i)^2 + alpha/2 ||w||^2`` on targets
    centred at the public centre ``c`` and clipped to ``[-M, M]`` (``M`` the half width),
    releases the minimiser plus vector noise and clips predictions (002 eq. 2). Its
    calibration (in dperm's convention, ``lambda = alpha / 2``, ``kappa = R``): every
    minimiser has ``||w|| <= M sqrt(2/alpha)``, the loss is ``C_L = 2 M (1 + kappa
    sqrt(2/alpha))``-Lipschitz on the predictions it can make (000 Sec. 5.1, unrelaxed),
    and the sensitivity is ``2 kappa C_L / (n alpha)`` plus twice the certified solve
    radius ``tol / alpha`` (000 Thm 2; 002 Lemma 2).

    Parameters
    ----------
    y_bound : float or None, default=None
        Symmetric shorthand: ``y_bounds = (-y_bound, y_bound)``.
    y_bounds : (float, float) or None, default=None
        Public bounds ``(lower, upper)`` on the target, chosen without looking at the data
        (a published range). Targets outside are clipped to them with a
        ``DataClippingWarning`` (decided exactly, in the target's units: a target at a bound
        never warns); no row is dropped. Giving both ``y_bound`` and ``y_bounds`` is an
        error; giving neither means ``(-1, 1)``.
    epsilon : float, default=1.0
    delta : float in [0, 1), default=0.0
        ``0``: pure epsilon-DP. ``> 0`` allows the Gaussian form (refused if ``>= 1/n``).
    mechanism : {"auto", "adassp", "gaussian_adassp", "output"}, default="auto"
    alpha : float or "auto", default="auto"
        Output perturbation's ridge. ``"auto"`` with ``mechanism="auto"`` selects AdaSSP,
        whose ridge is adaptive; a number selects output perturbation. AdaSSP refuses a
        number.
    data_norm, fit_intercept, intercept_scaling, max_iter, random_state
        As in :class:`PrivateQuantileRegressor`. ``fit_intercept=False``: the model's
        intercept is the public centre of ``y_bounds`` (0 for symmetric bounds), not fitted.
    tol : float, default=1e-8
        Output perturbation's gradient tolerance (AdaSSP solves no iterative problem).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_features_in_ : int
    mechanism_ : str
    alpha_ : float
        Output perturbation only.
    privacy_ : SufficientStatisticsRecord or PrivacyRecord

    References
    ----------
    Wang, "Revisiting differentially private linear regression: optimal and adaptive
    prediction & estimation in unbounded domain", UAI 2018, Alg. 2 (AdaSSP).
    Canonne, Kamath & Steinke (2020), the discrete Gaussian (Thm 4, Sec. 2.3).
    Nie & Wang (2017a), J. Inequal. Appl., Sec. 5.1 and Thm 2; Nie & Wang (2017b),
    J. Appl. Math. Phys. 5, eq. 2 and Lemma 2.

    Examples
    --------
    >>> import numpy as np
    >>> from dperm import PrivateLeastSquares
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(5000, 3))
    >>> y = 20 + X @ [10.0, -5.0, 3.0] + rng.normal(size=5000)
    >>> model = PrivateLeastSquares(y_bounds=(0, 40), epsilon=1.0).fit(X, y)
    >>> model.mechanism_
    'adassp'
    """

    _loss_reference = (
        "least squares with |y| <= M, C_L = 2 M (1 + kappa / sqrt(lambda)) "
        "(Nie & Wang 2017, Sec. 5.1; Nie & Wang 2017b, Lemma 2)"
    )
    _parameter_constraints: dict = {
        **PrivateLinearRegressorBase._parameter_constraints,
        "y_bound": [POSITIVE, None],
        "y_bounds": "no_validation",  # dperm.linear_model._targets.check_target_bounds
        "delta": [Interval(Real, 0, 1, closed="left")],
        "mechanism": [StrOptions({AUTO, "output", *SUFFICIENT_STATISTICS})],
    }

    def __init__(
        self,
        y_bound=None,
        *,
        y_bounds=None,
        epsilon=1.0,
        delta=0.0,
        mechanism=AUTO,
        alpha="auto",
        data_norm=1.0,
        fit_intercept=True,
        intercept_scaling=1.0,
        max_iter=1000,
        tol=1e-8,
        random_state=None,
        accountant=None,
    ):
        super().__init__(
            epsilon=epsilon, alpha=alpha, data_norm=data_norm, fit_intercept=fit_intercept,
            intercept_scaling=intercept_scaling, max_iter=max_iter, tol=tol,
            random_state=random_state, accountant=accountant,
        )
        self.y_bound = y_bound
        self.y_bounds = y_bounds
        self.delta = delta
        self.mechanism = mechanism

    # -- public choices ----------------------------------------------------
    def _target_bounds(self) -> tuple[float, float]:
        return check_target_bounds(self.y_bound, self.y_bounds)

    def _make_loss(self):
        """Least squares on centred targets: ``|y - centre| <= half width`` (output perturbation's ``M``)."""
        return SquaredLoss(centre_and_half_width(*self._target_bounds())[1])

    def _check_params(self):
        params = super()._check_params()  # the row's refusals (gaussian_adassp needs delta > 0)
        if params.mechanism in SUFFICIENT_STATISTICS and params.alpha is not None:
            raise ValueError(f"mechanism={params.mechanism!r} chooses its ridge adaptively (Wang "
                             f"2018); alpha={self.alpha!r} would be ignored. Leave alpha='auto', or "
                             "use mechanism='output' for a fixed alpha.")
        return params

    def _delta_spent(self, params):
        """``delta`` if the (possibly still unresolved) mechanism may spend it, else 0.

        Before ``mechanism="auto"`` is resolved: ``delta`` when AdaSSP's Gaussian form may be
        chosen (``alpha="auto"`` and ``delta > 0``, :meth:`_auto_mechanism`).
        """
        if params.mechanism is None:
            return params.delta if params.alpha is None else 0.0
        return MECHANISMS[params.mechanism].delta_spent(params.delta)

    def _adassp_calibration(self, name, params, n_samples, dimension, norm=None):
        """The row's calibration of AdaSSP's form ``name``, with the public intercept value.

        Its public problem: targets mapped onto ``[-1, 1]`` (``B = 1``), no alpha, the rows'
        norm bound ``norm`` (default :meth:`_effective_norm`). The intercept's constant column
        alone is ``dimension = 1``, ``norm = c``: the rows the mechanism then sees are the
        public constant ``c`` (a per-record map that drops the features), so the released
        model is the private mean of the targets and every slope is 0 (public).
        """
        problem = PublicProblem(n_samples, dimension, SquaredLoss(1.0), 0.0,
                                self._effective_norm(params) if norm is None else norm)
        return MECHANISMS[name].calibrate(problem, params.epsilon, params.delta, params.tol,
                                          intercept=params.scaling if self.fit_intercept else None)

    def _auto_mechanism(self, params, n_samples, dimension):
        """``mechanism="auto"`` from public inputs only: ``(name, reason, calibration)``.

        A given ``alpha`` asks for a fixed ridge: output perturbation (its calibration is
        computed by the generic skeleton). Otherwise AdaSSP. With ``delta = 0`` and an
        intercept, when Wang's ridge target is at least half of ``n R^2``
        (:func:`~dperm.privacy.sufficient_statistics.slopes_swamped`: the noise would swamp
        every slope), AdaSSP on the intercept's column alone: the private mean. With ``delta > 0`` its pure and
        Gaussian forms are both valid and the one whose public noise is smaller wins: the
        ridge target ``t`` (the Gram noise's norm bound) plus the moment noise's RMS norm,
        both in the normal equations' units. The chosen calibration is the one the fit
        releases with (computed once).
        """
        if params.alpha is not None:
            return "output", ("output: alpha is given and output perturbation is the mechanism "
                              "with a fixed ridge"), None
        if params.delta == 0:
            calibration = self._adassp_calibration(ADASSP, params, n_samples, dimension)
            if self.fit_intercept and slopes_swamped(calibration.ridge_target, n_samples,
                                                     calibration.data_norm):
                self._intercept_only = True
                target = calibration.ridge_target
                return (ADASSP, (f"adassp on the intercept's column only: Wang's ridge target "
                                 f"{target:.4g} is at least {INTERCEPT_ONLY_RIDGE_FRACTION:g} n R^2 = "
                                 f"{INTERCEPT_ONLY_RIDGE_FRACTION * n_samples * calibration.data_norm ** 2:.4g} "
                                 "(public n, d, R, epsilon), so the noise would swamp the slopes: "
                                 "the model is the private mean of the targets, delta = 0"),
                        self._adassp_calibration(ADASSP, params, n_samples, 1, norm=params.scaling))
            return (ADASSP, "adassp: sufficient statistics with adaptive ridge (Wang 2018), delta = 0",
                    calibration)
        scores, calibrations = {}, {}
        for name in SUFFICIENT_STATISTICS:
            calibration = calibrations[name] = self._adassp_calibration(name, params, n_samples,
                                                                        dimension)
            moment = calibration.moment
            scores[name] = calibration.ridge_target + moment.entry_std * math.sqrt(moment.dimension)
        chosen = min(SUFFICIENT_STATISTICS, key=scores.__getitem__)
        others = ", ".join(f"{name} {score:.4g}" for name, score in scores.items() if name != chosen)
        return chosen, (f"{chosen}: smaller public noise in the normal equations, {scores[chosen]:.4g} "
                        f"(against {others}; public n, d, R, epsilon, delta)"), calibrations[chosen]

    def _with_public_choices(self, params, n_samples, n_features, n_problems=1, *,
                             check_budget=True):
        """The mechanism (:meth:`_auto_mechanism`), then output perturbation's ``alpha`` and
        calibration (the skeleton's) or AdaSSP's calibration (its row's, once).

        AdaSSP has no alpha and no noise-swamps-signal refusal (its ridge grows with the
        noise and the model falls back to the intercept); the budget's checks at public n
        (:func:`dperm.validation.check_budget_for_data`) still run.
        """
        reason = calibration = None
        self._intercept_only = False  # set by _auto_mechanism; never left over from another fit
        dimension = n_features + int(bool(self.fit_intercept))
        if params.mechanism is None:
            name, reason, calibration = self._auto_mechanism(params, n_samples, dimension)
            params = params._replace(mechanism=name)
        if params.mechanism not in SUFFICIENT_STATISTICS:
            params = super()._with_public_choices(params, n_samples, n_features, n_problems,
                                                  check_budget=check_budget)
        else:
            if calibration is None:
                calibration = self._adassp_calibration(params.mechanism, params, n_samples, dimension)
            params = params._replace(calibration=calibration)
            self.mechanism_ = params.mechanism
            self.__dict__.pop("alpha_", None)  # AdaSSP has none; not left over from another fit
            if check_budget:
                check_budget_for_data(params.epsilon, params.delta, n_samples)
        self._choice_reason = reason
        return params

    # -- fitting -------------------------------------------------------------
    def _solve(self, X, targets, params, rng, effective_norm):
        lower, upper = self._target_bounds()
        y, n_clipped = clip_targets(targets.y, lower, upper)
        warn_clipped_targets(n_clipped, lower, upper)
        if params.mechanism in SUFFICIENT_STATISTICS:
            if self._intercept_only:  # the features dropped (a public per-record map)
                X, effective_norm = X[:, -1:], params.calibration.data_norm
            problem = ERMProblem(X, to_unit_interval(y, lower, upper), SquaredLoss(1.0), 0.0,
                                 effective_norm, sample_weight=targets.sample_weight)
        else:
            problem = ERMProblem(X, to_centred(y, lower, upper), params.loss, params.alpha,
                                 effective_norm, sample_weight=targets.sample_weight)
        return [MECHANISMS[params.mechanism].release(problem, params.calibration, rng, params.tol,
                                                     params.max_iter)]

    def _store(self, outputs, targets, params):
        centre, half = centre_and_half_width(*self._target_bounds())
        coef = outputs[0].coef
        if params.mechanism in SUFFICIENT_STATISTICS:
            coef = coef * half  # from the [-1, 1] scale back to the target's units
            if self._intercept_only:  # every slope is the public 0
                coef = np.concatenate([np.zeros(self.n_features_in_), coef])
        self._set_coefficients(coef, params.scaling)
        self.intercept_ = float(self.intercept_ + centre)

    def _mechanism_choice_reason(self):
        return self._choice_reason

    def _record(self, outputs, params, effective_norm, n_samples, targets, engine="memory"):
        if params.mechanism not in SUFFICIENT_STATISTICS:  # output perturbation: pure, delta 0
            return super()._record(outputs, params, effective_norm, n_samples, targets, engine)
        lower, upper = self._target_bounds()
        return sufficient_statistics_record(
            params.calibration, mechanism=params.mechanism, data_norm=params.data_norm,
            target_lower=lower, target_upper=upper, fit_intercept=bool(self.fit_intercept),
            intercept_scaling=params.scaling, reference=MECHANISMS[params.mechanism].reference,
            engine=engine, mechanism_choice=self._choice_reason)

    def _intercept_on_grid(self) -> bool:
        """Whether ``intercept_`` is ``grid * integer * intercept_scaling`` (:func:`dperm.model_io.check_on_grid`).

        Not when the public centre of the target bounds was added to it.
        """
        return centre_and_half_width(*self._target_bounds())[0] == 0.0

    def predict(self, X):
        """Predict ``X @ coef_ + intercept_``, clipped to the public target bounds (002 eq. 2).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        lower, upper = self._target_bounds()
        return np.clip(self._linear_prediction(X), lower, upper)
