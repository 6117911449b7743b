"""The one table of losses (``dperm.catalog.LOSSES``): its rows agree with the loss classes, and
every list of losses in dperm is a filter of it, so that a loss declared there is picked up."""

import inspect
import subprocess
import sys
import textwrap

import pytest

import dperm.losses as losses
from dperm.catalog import LOSSES, LossInfo, build_estimator, cli_models, loss_names, loss_names_with

#: Parameters at which the declared formulas of L and c are checked against the classes.
PARAMS = {"h": 0.3, "quantile": 0.3, "y_bound": 2.0}


def _build(info):
    return losses.get_loss(info.name, **PARAMS)


@pytest.mark.parametrize("name", LOSSES)
def test_each_row_names_its_class_and_agrees_with_it(name):
    info = LOSSES[name]
    cls = losses.loss_class(name)
    assert cls.__name__ == info.class_name and issubclass(cls, losses.ConvexLoss)
    loss = _build(info)
    assert (loss.name, loss.kind) == (info.name, info.kind)
    assert loss.twice_differentiable == info.smooth
    assert tuple(inspect.signature(cls).parameters) == info.params
    assert loss.params() == {key: PARAMS[key] for key in info.params}


@pytest.mark.parametrize("name", LOSSES)
def test_the_declared_constants_are_the_classes(name):
    """``lipschitz`` and ``curvature`` as the papers write them evaluate to the class's numbers."""
    info = LOSSES[name]
    loss = _build(info)
    scope = {"max": max, "inf": float("inf"), **PARAMS}
    assert eval(info.lipschitz, scope) == pytest.approx(loss.lipschitz, rel=1e-15)
    if info.curvature is None:
        assert loss.curvature is None
    else:
        assert eval(info.curvature, scope) == pytest.approx(loss.curvature, rel=1e-15)


def test_every_loss_class_has_a_row():
    classes = {obj.__name__ for obj in vars(losses).values()
               if inspect.isclass(obj) and issubclass(obj, losses.ConvexLoss) and not inspect.isabstract(obj)
               and obj.__module__ == "dperm.losses"}
    assert classes == {info.class_name for info in LOSSES.values()}


def test_rows_use_known_kinds_and_their_estimators_exist():
    import dperm

    for info in LOSSES.values():
        assert info.kind in ("margin", "residual")
        assert info.curvature is None or info.smooth
        for name in (info.estimator, info.kernel_estimator):
            if name is not None:
                assert name in dperm.__all__, name
        if info.kernel_estimator is not None or info.multiparty or info.paper_label:
            assert info.kind == "margin", info.name


@pytest.mark.parametrize("name", loss_names_with("estimator"))
def test_the_estimator_of_each_loss_fits_that_loss(name):
    info = LOSSES[name]
    estimator = build_estimator(name, h=PARAMS["h"], quantile=PARAMS["quantile"], y_bound=PARAMS["y_bound"])
    assert type(estimator).__name__ == info.estimator
    loss = estimator._make_loss()
    assert loss.name == name
    assert loss.params() == {key: PARAMS[key] for key in info.params}


def test_build_estimator_refuses_a_loss_without_one():
    with pytest.raises(ValueError, match="loss must be one of .*'logistic'"):
        build_estimator("smooth_pinball")
    with pytest.raises(ValueError, match="loss must be one of"):
        build_estimator("squared", kernel=True)
    with pytest.raises(ValueError, match="loss must be one of"):
        build_estimator(None)


def test_every_list_of_losses_is_a_filter_of_the_table():
    from dperm.audit.cli import AUDIT_TARGETS
    from dperm.experiments import chaudhuri2011, demo
    from dperm.linear_model._svc import SVC_LOSSES
    from dperm.mechanisms.prediction import PREDICTION_LOSSES
    from dperm.multiparty.estimator import MULTIPARTY_LOSSES
    from dperm.multiparty.newton_privacy import NEWTON_LOSSES

    # the values these lists had before the table: a filter must not change them
    assert SVC_LOSSES == ("huber", "smooth_hinge", "hinge")
    assert MULTIPARTY_LOSSES == NEWTON_LOSSES == ("logistic", "huber")
    assert set(PREDICTION_LOSSES) == {"squared", "hinge"}  # in table order now
    assert loss_names(kind="margin") == ("logistic", "huber", "smooth_hinge", "hinge")
    assert demo.LOSSES == {"logistic": "LR", "huber": "Huber SVM"}
    assert chaudhuri2011.LOSSES == ("logistic", "huber")
    assert AUDIT_TARGETS == ("logistic", "huber", "smooth_hinge", "hinge", "tuning")
    assert cli_models() == {
        "logistic": ("classifier", "logistic"), "huber": ("classifier", "huber"),
        "smooth_hinge": ("classifier", "smooth_hinge"), "hinge": ("classifier", "hinge"),
        "least_squares": ("regressor", "squared"), "quantile": ("regressor", "pinball"),
        "pseudo_huber": ("regressor", "pseudo_huber"),
        "kernel_logistic": ("kernel", "logistic"), "kernel_huber": ("kernel", "huber"),
        "kernel_smooth_hinge": ("kernel", "smooth_hinge"), "kernel_hinge": ("kernel", "hinge"),
    }


def test_loss_names_refuses_an_unknown_field():
    with pytest.raises(AttributeError, match="no field 'smoth'"):
        loss_names(smoth=True)
    assert loss_names(objective=True) == ("logistic", "huber", "smooth_hinge", "smooth_pinball",
                                          "pseudo_huber")


def test_get_loss_builds_every_row_and_refuses_other_names():
    assert isinstance(losses.get_loss("squared", y_bound=3.0, h=0.1), losses.SquaredLoss)
    assert losses.get_loss("pinball", quantile=0.2).quantile == 0.2
    with pytest.raises(ValueError, match="loss must be one of"):
        losses.get_loss("squared_hinge")


def _package_copy(tmp_path):
    """A copy of the installed-from-source dperm package under ``tmp_path/src``, and its environment."""
    import os
    import shutil
    from pathlib import Path

    import dperm

    copy = tmp_path / "src" / "dperm"
    shutil.copytree(Path(dperm.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy, {**os.environ, "PYTHONPATH": str(tmp_path / "src")}


def _insert_before(path, anchor, text):
    source = path.read_text()
    assert source.count(anchor) == 1, anchor
    path.write_text(source.replace(anchor, text + anchor))


#: The loss walkthrough of docs/developer.md, followed literally on a copy of the package: one
#: class in dperm/losses.py and one row in dperm/catalog.py, nothing else.
WIDE_HUBER_CLASS = '''

class WideHuberLoss(HuberLoss):
    """The Huber hinge under another name, default width 1 (003 eq. 41); ``L = 1``, ``c = 1/(2h)``."""

    name = "wide_huber"

    def __init__(self, h: float = 1.0):
        super().__init__(h)


'''
WIDE_HUBER_ROW = '''        LossInfo("wide_huber", "WideHuberLoss", "margin", smooth=True, lipschitz="1",
                 curvature="1/(2*h)", params=("h",), estimator="PrivateLinearSVC",
                 kernel_estimator="PrivateKernelSVC", cli_name="wide_huber", reference="003 eq. 41"),
'''
USE_WIDE_HUBER = textwrap.dedent("""
    import contextlib, io, sys
    import numpy as np
    from dperm import PrivateKernelSVC, PrivateLinearSVC
    from dperm.audit.cli import AUDIT_TARGETS
    from dperm.cli import main
    from dperm.linear_model._svc import SVC_LOSSES
    from dperm.losses import WideHuberLoss, get_loss
    from dperm.model_io import load_model
    from dperm.multiparty.estimator import MULTIPARTY_LOSSES

    assert isinstance(get_loss("wide_huber", h=0.7), WideHuberLoss)
    assert "wide_huber" in SVC_LOSSES and "wide_huber" in AUDIT_TARGETS
    assert "wide_huber" not in MULTIPARTY_LOSSES
    help_text = io.StringIO()
    with contextlib.redirect_stdout(help_text):
        try:
            main(["train", "--help"])
        except SystemExit:
            pass
    assert "wide_huber" in help_text.getvalue() and "kernel_wide_huber" in help_text.getvalue()
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(200, 2))
    y = (X[:, 0] > 0).astype(int)
    model = PrivateLinearSVC(loss="wide_huber", epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    assert model.privacy_.loss == "wide_huber" and model.privacy_.mechanism == "objective"
    kernel = PrivateKernelSVC(loss="wide_huber", n_components=10, classes=[0, 1], random_state=0).fit(X, y)
    assert kernel.privacy_.loss == "wide_huber"
    data, out = sys.argv[1], sys.argv[2]
    with open(data, "w") as handle:
        handle.write("x0,x1,label\\n" + "".join(f"{a:.4f},{b:.4f},{c}\\n" for (a, b), c in zip(X, y)))
    assert main(["train", "--data", data, "--target", "label", "--model", "wide_huber",
                 "--classes", "0,1", "--epsilon", "1", "--random-state", "0", "--out", out]) == 0
    loaded, _, _ = load_model(out)
    assert loaded.loss == "wide_huber" and loaded.privacy_.loss == "wide_huber"
    print("OK")
""")


def test_a_loss_declared_in_the_table_alone_is_offered_everywhere(tmp_path):
    """The loss walkthrough of docs/developer.md: one class and one row, nothing else."""
    copy, environment = _package_copy(tmp_path)
    _insert_before(copy / "losses.py", "def check_quantile(", WIDE_HUBER_CLASS.lstrip("\n"))
    _insert_before(copy / "catalog.py", '        LossInfo("squared", ', WIDE_HUBER_ROW)
    result = subprocess.run([sys.executable, "-c", USE_WIDE_HUBER, str(tmp_path / "train.csv"),
                             str(tmp_path / "model.json")], capture_output=True, text=True, env=environment)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("OK")


def test_a_row_is_frozen():
    with pytest.raises(AttributeError):
        LOSSES["logistic"].smooth = False
    assert isinstance(LOSSES["logistic"], LossInfo)


# -- the one table of estimators (dperm.ESTIMATORS) ---------------------------------------


def test_every_estimator_row_resolves_to_its_class():
    import dperm

    for name, info in dperm.ESTIMATORS.items():
        cls = getattr(dperm, name)
        assert cls.__name__ == name and name in dperm.__all__
        assert info.model_file in (None, "classifier", "regressor", "kernel")


def test_linear_model_and_model_files_read_the_estimator_table():
    import dperm
    import dperm.linear_model
    from dperm import model_io

    assert dperm.linear_model.__all__ == sorted(
        name for name, info in dperm.ESTIMATORS.items() if info.module.startswith("dperm.linear_model."))
    assert list(model_io.ESTIMATORS) == [name for name, info in dperm.ESTIMATORS.items() if info.model_file]
    assert {cls.__name__ for cls in model_io.REGRESSORS} == {"PrivateLeastSquares", "PrivateQuantileRegressor",
                                                             "PrivateRobustRegressor"}
    assert {cls.__name__ for cls in model_io.KERNEL_CLASSIFIERS} == {
        "PrivateKernelLogisticRegression", "PrivateKernelSVC"}


def test_the_tests_estimator_list_covers_every_estimator_and_loss():
    """tests/conftest.py's list has every model-file estimator, the linear ones with every loss the
    table gives them (a kernel model fits its loss through the linear one: once is enough)."""
    import dperm
    from tests.conftest import ESTIMATORS

    def loss_of(estimator):  # a kernel model fits its loss through its linear model
        linear = estimator._make_linear_model(1.0) if hasattr(estimator, "_make_linear_model") else estimator
        return linear._make_loss().name

    covered = {(type(e).__name__, loss_of(e)) for e in ESTIMATORS.values()}
    for info in LOSSES.values():
        if info.estimator is not None and dperm.ESTIMATORS[info.estimator].model_file:
            assert (info.estimator, info.name) in covered, (info.estimator, info.name)
    assert {name for name, _ in covered} == {name for name, info in dperm.ESTIMATORS.items() if info.model_file}


#: The estimator walkthrough of docs/developer.md, followed literally on a copy of the package:
#: one new module under dperm/linear_model and one row in dperm.ESTIMATORS, nothing else.
WIDE_SVC_MODULE = '''"""A second linear SVC (a walkthrough test's estimator)."""

from dperm.linear_model._svc import PrivateLinearSVC


class PrivateWideSVC(PrivateLinearSVC):
    """:class:`dperm.PrivateLinearSVC` under another name."""
'''
USE_WIDE_SVC = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import dperm
    from dperm import model_io
    from dperm.linear_model import PrivateWideSVC
    from dperm.tabular import NumericColumn, TabularSpec

    assert dperm.PrivateWideSVC is PrivateWideSVC and "PrivateWideSVC" in dperm.__all__
    assert model_io.ESTIMATORS["PrivateWideSVC"] is PrivateWideSVC
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(120, 2))
    y = np.where(X[:, 0] > 0, "b", "a")
    model = PrivateWideSVC(loss="smooth_hinge", epsilon=1.0, classes=["a", "b"], random_state=0).fit(X, y)
    spec = TabularSpec([NumericColumn("x0", -0.5, 0.5), NumericColumn("x1", -0.5, 0.5)])
    model_io.save_model(sys.argv[1], model, spec, "label")
    loaded, _, _ = model_io.load_model(sys.argv[1])
    assert type(loaded) is PrivateWideSVC and json.loads(open(sys.argv[1]).read())["estimator"] == "PrivateWideSVC"
    assert np.array_equal(loaded.coef_, model.coef_) and loaded.privacy_.loss == "smooth_hinge"
    print("OK")
""")


def test_an_estimator_declared_by_one_row_is_exported_and_saved(tmp_path):
    """The estimator walkthrough of docs/developer.md: one module and one row, nothing else."""
    copy, environment = _package_copy(tmp_path)
    (copy / "linear_model" / "_wide.py").write_text(WIDE_SVC_MODULE)
    _insert_before(copy / "__init__.py", '    "PrivatePredictor": EstimatorInfo("dperm.prediction"),\n',
                   '    "PrivateWideSVC": EstimatorInfo("dperm.linear_model._wide", "classifier"),\n')
    result = subprocess.run([sys.executable, "-c", USE_WIDE_SVC, str(tmp_path / "model.json")],
                            capture_output=True, text=True, env=environment)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("OK")
