"""dperm's one table of losses: what each loss is and where it may be used, without importing it.

:data:`LOSSES` declares every loss of :mod:`dperm.losses` once: its name, its
class, whether it is a margin or a residual loss, whether it is smooth, its
constants ``L`` and ``c`` as the papers write them, the parameters that build it
(a width ``h``, a quantile, a target bound) and which estimators, protocols and
commands accept it. Every other list of losses in dperm is a filter of this
table (:func:`loss_names`): the ``loss=`` choices of the estimators, the
multiparty protocols and :class:`dperm.PrivatePredictor`, the ``--model`` and
``--loss`` choices of the command line, the losses of the papers' experiments
and the demo. The loss objects themselves (values, derivatives, the numbers
``L`` and ``c``) live in :mod:`dperm.losses`, which builds them from this table
(:func:`dperm.losses.get_loss`).

This module imports the standard library only, so the command line reads it
to build ``dperm train --help`` without NumPy (a test checks). Adding a loss is
one entry here and its class in :mod:`dperm.losses` (``docs/developer.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The two kinds of argument a loss takes: ``z = y w.x`` (003 Sec. 3.4) or ``r = y - w.x`` (000 Sec. 5).
KINDS = ("margin", "residual")


@dataclass(frozen=True)
class LossInfo:
    """One loss: what it is, its constants, and who accepts it.

    Attributes
    ----------
    name : str
        The value of ``loss=``, of the privacy record's ``loss`` and of model files.
    class_name : str
        Its class (a :class:`~dperm.losses.ConvexLoss`) in ``module``.
    kind : {"margin", "residual"}
        A function of the margin ``z = y w.x`` with labels ``y`` in {-1, +1}
        (classification, 003 Sec. 3.4) or of the residual ``r = y - w.x``
        (regression, 000 Sec. 5).
    smooth : bool
        Twice differentiable with a bound ``c`` on ``|loss''|`` (almost everywhere,
        003 Cor. 4). Objective perturbation needs it (003 Thm 2, 004 Thm 4.1); a
        loss that is not smooth is released by output perturbation, which needs
        only convexity and ``C_L`` (000 Thm 2) and applies to every loss here.
    lipschitz : str
        ``L``, a bound on ``|loss'|``, as the papers write it (``"inf"``: none on the
        real line; output perturbation then uses ``C_L`` over the solutions).
    curvature : str or None
        ``c``, a bound on ``|loss''|``, as the papers write it; ``None`` if not smooth.
    params : tuple of str
        The constructor's parameters: ``"h"``, the width of a smoothed region;
        ``"quantile"``, ``tau``; ``"y_bound"``, the public bound ``M`` on ``|y|``
        the targets are clipped to.
    estimator : str or None
        The linear estimator of :mod:`dperm.linear_model` that fits it (its only
        loss, or one value of its ``loss=``); ``None``: built only inside dperm.
    kernel_estimator : str or None
        The random-Fourier-feature estimator of :mod:`dperm.linear_model` that fits it.
    cli_name : str or None
        ``dperm train --model`` value of the linear model (``kernel_<cli_name>``
        for the kernel one); ``None``: not offered on the command line.
    multiparty : bool
        The multiparty protocols (:mod:`dperm.multiparty`: PSGD, the Newton
        protocol, local aggregation) accept it: smooth and Lipschitz with
        ``0 <= loss'' <= c`` (004 Thm 4.1).
    prediction : bool
        :class:`dperm.PrivatePredictor` accepts it (000 Sec. 5.1 and 5.2).
    paper_label : str or None
        Its name in 003's experiments (Sec. 6, "LR", "Huber SVM"): the losses
        the reproduction of 003 and the demo run.
    reference : str
        Where the loss and its constants come from.
    module : str
        The module that defines the class: :mod:`dperm.losses`, or a module of
        its own for a loss with a longer story.
    """

    name: str
    class_name: str
    kind: str
    smooth: bool
    lipschitz: str
    curvature: str | None
    params: tuple[str, ...] = ()
    estimator: str | None = None
    kernel_estimator: str | None = None
    cli_name: str | None = None
    multiparty: bool = False
    prediction: bool = False
    paper_label: str | None = None
    reference: str = ""
    module: str = "dperm.losses"

    @property
    def objective(self) -> bool:
        """Whether objective perturbation's proof covers it: smooth and globally Lipschitz (003 Thm 2, 004 Thm 4.1).

        003 Thm 2 needs ``|loss'| <= L`` and ``0 <= loss'' <= c``; its proof reads the loss
        only through a row's gradient and rank-one Hessian, in which a residual's
        ``d r / d (w.x) = -1`` stands where a margin's label ``y`` does, so a smooth
        Lipschitz residual loss qualifies as a margin loss does (``docs/design/losses.md``).
        Least squares does not (``L`` is infinite); the mechanisms' rows check the same
        two numbers on the loss object (:meth:`dperm.mechanisms.catalog.Mechanism.refusal`).
        """
        return self.smooth and self.lipschitz != "inf"

    @property
    def family(self) -> str:
        """``"classifier"`` for a margin loss, ``"regressor"`` for a residual loss."""
        return "classifier" if self.kind == "margin" else "regressor"


#: Every loss by name, in the order the help, the docs and the choices list them.
LOSSES: dict[str, LossInfo] = {
    info.name: info
    for info in (
        LossInfo("logistic", "LogisticLoss", "margin", smooth=True, lipschitz="1", curvature="1/4",
                 estimator="PrivateLogisticRegression",
                 kernel_estimator="PrivateKernelLogisticRegression", cli_name="logistic",
                 multiparty=True, paper_label="LR", reference="003 Sec. 3.4.1"),
        LossInfo("huber", "HuberLoss", "margin", smooth=True, lipschitz="1", curvature="1/(2*h)",
                 params=("h",), estimator="PrivateLinearSVC", kernel_estimator="PrivateKernelSVC",
                 cli_name="huber", multiparty=True, paper_label="Huber SVM",
                 reference="003 eq. 41"),
        LossInfo("smooth_hinge", "SmoothHingeLoss", "margin", smooth=True, lipschitz="1",
                 curvature="3/(4*h)", params=("h",), estimator="PrivateLinearSVC",
                 kernel_estimator="PrivateKernelSVC", cli_name="smooth_hinge",
                 reference="003 eqs. 38-40"),
        LossInfo("hinge", "HingeLoss", "margin", smooth=False, lipschitz="1", curvature=None,
                 estimator="PrivateLinearSVC", kernel_estimator="PrivateKernelSVC",
                 cli_name="hinge", prediction=True, reference="003 eq. 37; 000 Thm 2, Sec. 5.2"),
        LossInfo("squared", "SquaredLoss", "residual", smooth=True, lipschitz="inf", curvature="2",
                 params=("y_bound",), estimator="PrivateLeastSquares", cli_name="least_squares",
                 prediction=True, reference="000 Sec. 5.1; 002 eq. 1"),
        LossInfo("pinball", "PinballLoss", "residual", smooth=False,
                 lipschitz="max(quantile, 1 - quantile)", curvature=None, params=("quantile",),
                 estimator="PrivateQuantileRegressor", cli_name="quantile",
                 reference="000 Sec. 5"),
        LossInfo("smooth_pinball", "SmoothPinballLoss", "residual", smooth=True,
                 lipschitz="max(quantile, 1 - quantile)", curvature="1/(2*h)",
                 params=("quantile", "h"),
                 reference="the pinball's smoothing certificate (dperm.solvers.solve_by_smoothing)"),
        LossInfo("pseudo_huber", "PseudoHuberLoss", "residual", smooth=True, lipschitz="1",
                 curvature="1/h", params=("h",), estimator="PrivateRobustRegressor",
                 cli_name="pseudo_huber",
                 reference="003 Thm 2 and 004 Thm 4.1 for a residual (docs/design/losses.md); "
                 "000 Thm 2 with C_L = 1"),
    )
}


def loss_names(**capabilities) -> tuple[str, ...]:
    """The names of the losses whose fields (or properties) equal ``capabilities``, in table order.

    ``loss_names(estimator="PrivateLinearSVC")`` is ``PrivateLinearSVC``'s
    ``loss=`` choices; ``loss_names(multiparty=True)`` the protocols'.

    Raises
    ------
    AttributeError
        If a keyword is not a field of :class:`LossInfo`.
    """
    for field in capabilities:
        if not hasattr(LossInfo, field) and field not in LossInfo.__dataclass_fields__:
            raise AttributeError(f"LossInfo has no field {field!r}; see dperm.catalog.LossInfo.")
    return tuple(info.name for info in LOSSES.values()
                 if all(getattr(info, field) == value for field, value in capabilities.items()))


def build_estimator(loss: str, *, kernel: bool = False, **options):
    """The estimator that fits ``loss`` (its table entry's), given the ``options`` it has parameters for.

    Each option goes to the estimator only if it has a parameter of that name,
    so one set of options serves every loss: a regressor takes no ``delta`` and a
    kernel model no ``data_norm``. An estimator with a ``loss`` parameter (one
    of several losses) is given ``loss``. Imports the estimator's module on first use.

    Parameters
    ----------
    loss : str
        A name in :data:`LOSSES` with an ``estimator`` (``kernel_estimator`` if ``kernel``).
    kernel : bool, default=False
        Build the random-Fourier-feature estimator instead of the linear one.
    **options
        Estimator parameters (``epsilon``, ``alpha``, ``h``, ...), ``loss`` excepted.

    Raises
    ------
    ValueError
        If no estimator of that kind fits ``loss``.
    """
    import importlib

    info = LOSSES.get(loss) if isinstance(loss, str) else None
    name = None if info is None else (info.kernel_estimator if kernel else info.estimator)
    if name is None:
        field = "kernel_estimator" if kernel else "estimator"
        raise ValueError(f"loss must be one of {loss_names_with(field)}; got {loss!r}.")
    estimator = getattr(importlib.import_module("dperm"), name)
    accepted = estimator().get_params(deep=False)
    options = {**options, "loss": loss}
    return estimator(**{key: value for key, value in options.items() if key in accepted})


def loss_names_with(field: str) -> tuple[str, ...]:
    """The names of the losses whose ``field`` is set (not ``None``, not ``False``), in table order."""
    return tuple(info.name for info in LOSSES.values() if getattr(info, field))


def cli_models() -> dict[str, tuple[str, str]]:
    """``dperm train --model`` values and what each fits: ``(family, loss name)``.

    One value per loss with a ``cli_name`` (``family`` "classifier" or
    "regressor"), then ``kernel_<cli_name>`` for each with a kernel estimator
    (``family`` "kernel").
    """
    linear = {info.cli_name: (info.family, info.name) for info in LOSSES.values() if info.cli_name}
    kernel = {f"kernel_{info.cli_name}": ("kernel", info.name) for info in LOSSES.values()
              if info.cli_name and info.kernel_estimator}
    return {**linear, **kernel}


__all__ = ["KINDS", "LOSSES", "LossInfo", "build_estimator", "cli_models", "loss_names", "loss_names_with"]
