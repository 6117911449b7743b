"""dperm: differentially private empirical risk minimisation.

Public names only; see the submodules for the mechanisms and their papers.
"""

from dperm.privacy.accounting import BudgetAccountant
from dperm.exceptions import (
    BudgetExceededError,
    BudgetWarning,
    CertificateError,
    DataClippingWarning,
    PrivacyLeakWarning,
)
from dperm.kernels import RandomFourierFeatures
from dperm.linear_model import (
    PrivateKernelLogisticRegression,
    PrivateKernelSVC,
    PrivateLeastSquares,
    PrivateLinearSVC,
    PrivateLogisticRegression,
    PrivateQuantileRegressor,
)
from dperm.multiparty import LocalAggregationClassifier, PSGDClassifier
from dperm.prediction import PrivatePredictor
from dperm.privacy.record import PrivacyRecord
from dperm.tuning import PrivateParameterSearch

__version__ = "0.1.0"

__all__ = [
    "BudgetAccountant",
    "LocalAggregationClassifier",
    "PSGDClassifier",
    "BudgetExceededError",
    "BudgetWarning",
    "CertificateError",
    "DataClippingWarning",
    "PrivacyLeakWarning",
    "PrivacyRecord",
    "PrivateKernelLogisticRegression",
    "PrivateKernelSVC",
    "PrivateLeastSquares",
    "PrivateLinearSVC",
    "PrivateLogisticRegression",
    "PrivateParameterSearch",
    "PrivatePredictor",
    "PrivateQuantileRegressor",
    "RandomFourierFeatures",
    "__version__",
]
