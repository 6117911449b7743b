"""dperm: differentially private empirical risk minimisation.

Public names only; see the submodules for the mechanisms and their papers.
"""

from dperm.accounting import BudgetAccountant
from dperm.exceptions import (
    BudgetExceededError,
    CertificateError,
    DataClippingWarning,
    OptimalityCertificateWarning,
    PrivacyLeakWarning,
)
from dperm.linear_model import PrivateLinearSVC, PrivateLogisticRegression
from dperm.privacy.record import PrivacyRecord
from dperm.tuning import PrivateParameterSearch

__version__ = "0.1.0"

__all__ = [
    "BudgetAccountant",
    "BudgetExceededError",
    "CertificateError",
    "DataClippingWarning",
    "OptimalityCertificateWarning",
    "PrivacyLeakWarning",
    "PrivacyRecord",
    "PrivateLinearSVC",
    "PrivateLogisticRegression",
    "PrivateParameterSearch",
    "__version__",
]
