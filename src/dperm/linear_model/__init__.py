"""Private linear classifiers (scikit-learn estimators)."""

from dperm.linear_model._logistic import PrivateLogisticRegression
from dperm.linear_model._regression import PrivateLeastSquares, PrivateQuantileRegressor
from dperm.linear_model._svc import PrivateLinearSVC
from dperm.linear_model._kernel import PrivateKernelLogisticRegression, PrivateKernelSVC  # noqa: E402

__all__ = [
    "PrivateKernelLogisticRegression",
    "PrivateKernelSVC",
    "PrivateLeastSquares",
    "PrivateLinearSVC",
    "PrivateLogisticRegression",
    "PrivateQuantileRegressor",
]
