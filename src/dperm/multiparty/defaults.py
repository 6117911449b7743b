"""Flower SecAgg+ defaults of the secure sum, import-free.

``dperm coordinate --help`` shows them; this module imports nothing, so building
that parser imports neither NumPy nor Flower. :mod:`dperm.multiparty.secure_sum`
and the Flower engine use them under the same names.
"""

#: Flower SecAgg+ defaults (``flwr.server.workflow.SecAggPlusWorkflow``).
DEFAULT_CLIPPING_RANGE = 8.0
DEFAULT_QUANTIZATION_RANGE = 2**22
DEFAULT_MODULUS_RANGE = 2**32

__all__ = ["DEFAULT_CLIPPING_RANGE", "DEFAULT_MODULUS_RANGE", "DEFAULT_QUANTIZATION_RANGE"]
