"""Private linear classifiers (scikit-learn estimators)."""

from dperm.linear_model._logistic import PrivateLogisticRegression
from dperm.linear_model._svc import PrivateLinearSVC

__all__ = ["PrivateLinearSVC", "PrivateLogisticRegression"]
