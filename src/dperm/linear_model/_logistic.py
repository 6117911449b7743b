"""Differentially private logistic regression (003 Sec. 3.4.1, Cor. 2; 004 Alg. 4)."""

from __future__ import annotations

from sklearn.utils._param_validation import StrOptions

from dperm.linear_model._base import PrivateLinearClassifierBase
from dperm.linear_model._fallback import FallbackMixin
from dperm.linear_model._multinomial import MULTI_CLASS_OPTIONS, MultinomialClassifierMixin
from dperm.losses import LogisticLoss
from dperm.mechanisms.choice import AUTO


class PrivateLogisticRegression(FallbackMixin, MultinomialClassifierMixin, PrivateLinearClassifierBase):
    """Logistic regression with a differential privacy guarantee.

    Minimises ``(1/n) sum log(1 + exp(-y_i w.x_i)) + alpha/2 ||w||^2`` under one
    of three mechanisms and records the guarantee in ``privacy_``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy loss bound of the released model (must be > 0).
    delta : float, default=0.0
        Failure probability, in [0, 1). Only the Gaussian objective mechanisms
        use it (and need it > 0); the other two are pure epsilon-DP.
    alpha : float, "auto" or "monotone", default="auto"
        L2 regularisation strength: the objective is
        ``(1/n) sum loss + (alpha/2) ||w||^2``, so ``alpha`` is Chaudhuri et
        al.'s ``Lambda`` and Nie & Wang's ``lambda`` is ``alpha/2`` (paper
        note 7). ``"auto"`` sets it from
        public quantities only (n, d, epsilon, delta, the norm bound, the loss and
        the mechanism; :func:`dperm.mechanisms.choice.auto_alpha`), never from the data; the
        value used is ``alpha_``. Larger alpha means less noise. ``"monotone"`` is issue
        30's rule from the same public quantities, whose noise never moves the
        weights more as epsilon grows and whose floor is scikit-learn's ``C = 1``
        (:func:`dperm.privacy.alpha.default_alpha` with ``variant="monotone"``).
        ``"auto"`` is ``"monotone"`` while the majority fallback is on (the default
        for two labels with an intercept: the pairing fitted on the fitting tables and
        measured on the evaluation tables, docs/defaults_classifiers.md), and issue 17's
        rule otherwise.
    mechanism : {"auto", "objective", "output", "gaussian_objective", "gaussian_objective_004"}, default="auto"
        ``"auto"`` chooses from public quantities (:mod:`dperm.mechanisms.choice`,
        recorded in ``privacy_``): objective perturbation under a pure budget, the
        Gaussian one when ``delta > 0`` and its noise is smaller. Otherwise
        objective perturbation (Chaudhuri et al. 2011, Alg. 2, c = 1/4), output
        perturbation (Alg. 1) or Gaussian objective perturbation ((epsilon, delta)-DP,
        GLM calibration with the one-factor Jacobian bound, docs/design/gaussian_objective.md;
        ``"gaussian_objective_004"`` keeps Rajkumar & Agarwal 2012, Alg. 4's sigma*).
    data_norm : float, default=1.0
        Public bound on the L2 norm of a row of X. Longer rows are scaled onto
        it (per record, so the guarantee holds) with a ``DataClippingWarning``.
        Choose it from public knowledge, never from the data.
    fit_intercept : bool, default=True
        Fit an intercept by appending a constant feature ``intercept_scaling``
        to every row. That feature counts toward the norm bound: the noise is
        calibrated to ``sqrt(data_norm**2 + intercept_scaling**2)``, and the
        intercept is regularised like the other coefficients.
    intercept_scaling : float, default=1.0
        Value of the constant feature.
    max_iter : int, default=1000
        Maximum L-BFGS iterations of the fast solver. A fit that has spent its
        budget always releases: if these leave the solve uncertified, a proven
        method finishes it (docs/releases.md, "Solver failures").
    tol : float, default=1e-8
        Tolerance on the L2 norm of the gradient of the (perturbed) objective.
        The proofs assume the exact minimiser; the final gradient norm is
        recorded in ``privacy_`` as a certificate.
    random_state : None, int or numpy Generator, default=None
        ``None`` draws every noise bit from the OS CSPRNG (:mod:`dperm.randomness`),
        as a released model must. A seed makes fits reproducible and is meant for
        testing only: whoever knows it can subtract the noise.
    accountant : dperm.privacy.accounting.BudgetAccountant, optional
        If given, ``fit`` spends ``(epsilon, delta)`` from it (delta only for
        ``gaussian_objective``) after every parameter, data and label check
        (labels against ``classes``) and before any noise is drawn, and raises
        ``BudgetExceededError`` without fitting if that would overspend. A
        configuration error spends nothing.
    scheduler : None, str or distributed.Client, default=None
        Used only when ``X`` is a Dask array or DataFrame (``pip install
        'dperm[dask]'``, :mod:`dperm.scale`): the fit then runs as map-reduce
        passes over the row chunks without loading the data. ``None`` uses the
        active ``distributed.Client``, else starts a ``LocalCluster`` on
        127.0.0.1 for the fit; a scheduler address ``"tcp://host:port"`` runs on
        that cluster; ``"threads"``/``"synchronous"`` use Dask's local schedulers.
        There ``max_iter`` bounds the data passes of each Newton solve.
    classes : None or list of labels, default=None
        The public label set (strings or numbers of the type of y, at least
        two, e.g. ``["no", "yes"]``); ``classes_`` is it, sorted like
        :func:`numpy.unique`. It alone sets the model's shape: ``K`` columns of the
        multinomial model, or the one-vs-rest split (``n_problems`` is 1 for two
        labels, else the number of labels, and each problem gets
        ``epsilon / n_problems``). A training label outside it raises ValueError
        before any budget is spent; a label no row carries is fine (its
        class is fitted with no row carrying it). ``None`` reads the labels
        from y as scikit-learn does; then one record of a rare class can change
        ``classes_``, the shape of ``coef_`` and the epsilon per problem, which
        the guarantee does not cover: a :class:`~dperm.PrivacyLeakWarning` says
        so and ``privacy_.label_set_public`` is False.
    multi_class : {"auto", "multinomial", "ovr"}, default="auto"
        With three or more labels: ``"multinomial"`` fits one softmax model under
        multinomial objective perturbation with the whole epsilon (one noise matrix,
        docs/design/multinomial.md); ``"ovr"`` fits one binary problem per label at
        ``epsilon / K`` each; ``"auto"`` chooses the one with less noise per class from
        public quantities (K, n, d, epsilon, delta, the norm bound;
        :func:`dperm.linear_model._multinomial.compare_multiclass`), recorded in
        ``multi_class_`` and ``privacy_.mechanism_choice``. The multinomial model runs with
        ``mechanism="auto"`` (pure, or with ``delta > 0`` the pure or Gaussian form with less
        public noise, docs/design/gaussian_multinomial.md), ``"objective"`` (pure) or
        ``"gaussian_objective"`` (Gaussian); other mechanisms and Dask input use one-vs-rest.
        Two labels always give one binary problem.
    fallback : "auto", "majority" or None, default="auto"
        ``"auto"``: ``"majority"`` with two labels and ``fit_intercept=True`` on in-memory
        data, else None (three or more labels: off, as measured; Dask input: off).
        ``"majority"``: spend a small public share ``s`` of epsilon
        (:func:`dperm.privacy.fallback.fallback_share`, from n, K and epsilon) on a private
        choice between the fitted model (fitted at the rest of epsilon) and the constant model,
        the privately estimated majority class: the training rows' correct count of the model
        and the class counts, released with exact discrete Laplace noise; the constant model
        (``coef_`` 0, ``intercept_`` the log-odds of the noisy class frequencies) is released
        when its noisy count is larger. Needs ``fit_intercept=True`` and in-memory data.
        ``privacy_.fallback_choice`` says which was released (docs/defaults_classifiers.md,
        "The majority fallback").

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray of shape (n_classes,)
        ``classes`` sorted, or the labels of y when ``classes=None``.
    alpha_ : float
        The regularisation strength used (``alpha``, or the public rule's value).
    multi_class_ : {"multinomial", "ovr"}
        The multiclass model fitted (``"ovr"`` for two labels: one binary problem).
    n_features_in_ : int
    privacy_ : dperm.privacy.record.PrivacyRecord
        The guarantee and every number behind it; ``print(model.privacy_)``.
        Solver diagnostics (iterations, achieved gradient norm) and how many
        rows were clipped depend on the private data and are not released
        (:mod:`dperm.privacy.release`).

    References
    ----------
    Chaudhuri, Monteleoni & Sarwate, "Differentially Private Empirical Risk
    Minimization", JMLR 12 (2011), Algs. 1-2, Cor. 2.
    Rajkumar & Agarwal, "A Differentially Private SGD Algorithm for Multiparty
    Classification", AISTATS 2012, Alg. 4.

    Examples
    --------
    >>> from dperm import PrivateLogisticRegression
    >>> from dperm.datasets import load_adult
    >>> adult = load_adult()
    >>> model = PrivateLogisticRegression(epsilon=0.5, alpha=1e-3, fit_intercept=False,
    ...                                   classes=[0, 1])  # Adult's public labels
    >>> model = model.fit(adult.X_train, adult.y_train)
    >>> round(model.score(adult.X_test, adult.y_test), 1) >= 0.7
    True
    """

    _parameter_constraints: dict = {
        **PrivateLinearClassifierBase._parameter_constraints,
        "multi_class": [StrOptions(set(MULTI_CLASS_OPTIONS))],
        **FallbackMixin._fallback_constraints,
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
        multi_class=AUTO,
        fallback="auto",
    ):
        super().__init__(
            epsilon=epsilon, delta=delta, alpha=alpha, mechanism=mechanism, data_norm=data_norm,
            fit_intercept=fit_intercept, intercept_scaling=intercept_scaling, max_iter=max_iter,
            tol=tol, random_state=random_state, accountant=accountant, scheduler=scheduler,
            classes=classes,
        )
        self.multi_class = multi_class
        self.fallback = fallback

    def _make_loss(self):
        return LogisticLoss()

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        import numpy as np

        return np.log(self.predict_proba(X))
