"""Certified solvers: every solve returns a proven bound on its distance to the exact minimiser.

- :mod:`dperm.solvers.erm`: the (perturbed) regularised linear ERM objective,
  L-BFGS + Newton with a gradient-norm certificate, and the duality-gap /
  smoothing certificates of piecewise-linear losses (paper note 8).
- :mod:`dperm.solvers.newton`: the one damped Newton loop (to a gradient
  certificate) of the in-memory polish and the Dask solver, each with its own
  data provider.
- :mod:`dperm.solvers.proven`: the proven completions (accelerated gradient,
  FISTA) that finish any solve the fast methods leave short, so a fit that has
  spent its budget always releases (issue 28).
- :mod:`dperm.solvers.kernel`: the kernel ERM of :class:`dperm.PrivatePredictor`,
  exact (Gram matrix) or on public random features, and the memory plan that
  chooses between them.

The names of :mod:`dperm.solvers.erm` are re-exported here (``from dperm.solvers
import minimize_erm``); the kernel solvers are imported from their module.
"""

from dperm.solvers.erm import (
    INITIAL_SMOOTHING_WIDTH,
    LIBLINEAR_SHUFFLE_SEED,
    LIBLINEAR_TOLS,
    MARGIN_BANDS,
    MAX_MARGIN_ROWS,
    MAX_NEWTON_STEPS,
    MAX_STEP_HALVINGS,
    SMOOTHING_SHRINK,
    RegularizedERMObjective,
    RegularizedMarginObjective,
    SolveResult,
    hinge_duality_gap,
    loss_sums,
    minimize_certified,
    minimize_erm,
    piecewise_linear_duality_gap,
    regularized_value_and_gradient,
    solve_by_smoothing,
    solve_hinge_svm,
    solve_nonsmooth,
)

__all__ = [
    "INITIAL_SMOOTHING_WIDTH",
    "LIBLINEAR_SHUFFLE_SEED",
    "LIBLINEAR_TOLS",
    "MARGIN_BANDS",
    "MAX_MARGIN_ROWS",
    "MAX_NEWTON_STEPS",
    "MAX_STEP_HALVINGS",
    "SMOOTHING_SHRINK",
    "RegularizedERMObjective",
    "RegularizedMarginObjective",
    "SolveResult",
    "hinge_duality_gap",
    "loss_sums",
    "minimize_certified",
    "minimize_erm",
    "piecewise_linear_duality_gap",
    "regularized_value_and_gradient",
    "solve_by_smoothing",
    "solve_hinge_svm",
    "solve_nonsmooth",
]
