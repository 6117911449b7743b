"""Differentially private linear SVM (003 Sec. 3.4.2, Cors. 3-4; 000 Thm 2)."""

from __future__ import annotations

from sklearn.utils._param_validation import StrOptions

from dperm.catalog import loss_names
from dperm.linear_model._base import POSITIVE, PrivateLinearClassifierBase
from dperm.losses import get_loss

#: ``loss=`` choices: the losses :data:`dperm.catalog.LOSSES` gives this estimator.
SVC_LOSSES = loss_names(estimator="PrivateLinearSVC")


class PrivateLinearSVC(PrivateLinearClassifierBase):
    """Linear support vector classifier with a differential privacy guarantee.

    Minimises ``(1/n) sum loss(y_i w.x_i) + alpha/2 ||w||^2`` for a hinge-type
    loss under one of three mechanisms and records the guarantee in ``privacy_``.

    Parameters
    ----------
    loss : {"huber", "smooth_hinge", "hinge"}, default="huber"
        Huber-smoothed hinge (003 eq. 41, c = 1/(2h)), quartic smoothed hinge
        (003 eq. 38, c = 3/(4h)) or the hinge itself (003 eq. 37). The hinge is
        not differentiable, so only ``mechanism="output"`` (which ``"auto"`` then
        chooses) accepts it
        (000 Thm 2); it is solved with liblinear and certified by a duality gap.
    h : float, default=0.5
        Width of the smoothed region of the huber and smooth_hinge losses.
    epsilon, delta, alpha, mechanism, data_norm, fit_intercept, intercept_scaling, max_iter, \
    tol, random_state, accountant, scheduler, classes
        As in :class:`dperm.PrivateLogisticRegression`.

    Attributes
    ----------
    coef_, intercept_, classes_, n_features_in_, privacy_
        As in :class:`dperm.PrivateLogisticRegression`.

    References
    ----------
    Chaudhuri, Monteleoni & Sarwate (2011), Sec. 3.4.2, Cors. 3-4.
    Nie & Wang, "Perturbation of convex risk minimization and its application
    in differential private learning algorithms", J. Inequal. Appl. (2017), Thm 2.
    """

    _parameter_constraints: dict = {
        **PrivateLinearClassifierBase._parameter_constraints,
        "loss": [StrOptions(set(SVC_LOSSES))],
        "h": [POSITIVE],
    }

    def __init__(
        self,
        *,
        loss="huber",
        h=0.5,
        epsilon=1.0,
        delta=0.0,
        alpha="auto",
        mechanism="auto",
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
        super().__init__(
            epsilon=epsilon, delta=delta, alpha=alpha, mechanism=mechanism, data_norm=data_norm,
            fit_intercept=fit_intercept, intercept_scaling=intercept_scaling, max_iter=max_iter,
            tol=tol, random_state=random_state, accountant=accountant, scheduler=scheduler,
            classes=classes,
        )
        self.loss = loss
        self.h = h

    def _make_loss(self):  # loss checked by _parameter_constraints
        return get_loss(self.loss, h=self.h)
