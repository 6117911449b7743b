"""dperm's warnings: once per fit, at the user's line, with advice that is right (issue 18)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline

from dperm import DataClippingWarning, PrivateLogisticRegression
from dperm.exceptions import user_stacklevel, warn_at_caller
from dperm.preprocessing import PublicBoundsScaler, RowNormalizer


def _data(n=200, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 12.0, size=(n, d))  # bounds (0, 10): some values outside
    y = (X[:, 0] + X[:, 1] > 12).astype(int)
    return X, y


def _pipeline():
    return make_pipeline(PublicBoundsScaler(bounds=(0.0, 10.0)), RowNormalizer(data_norm=1.0),
                         PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0))


def _clipping(caught):
    return [w for w in caught if issubclass(w.category, DataClippingWarning)]


def test_pipeline_warns_once_per_step_at_fit_and_never_at_predict_transform_score():
    X, y = _data()
    pipe = _pipeline()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe.fit(X, y)  # fit_transform of each transformer runs inside Pipeline.fit
    fit_warnings = _clipping(caught)
    assert len(fit_warnings) == 2  # values outside the bounds; rows above the norm
    assert {w.filename for w in fit_warnings} == {__file__}  # the user's line, not sklearn's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe.predict(X)
        pipe.score(X, y)
        pipe[:-1].transform(X)
        pipe.decision_function(X)
    assert _clipping(caught) == []


def test_cross_val_score_warns_once_per_fit_at_the_users_call():
    X, y = _data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cross_val_score(_pipeline(), X, y, cv=3)
    clipping = _clipping(caught)
    assert len(clipping) == 2 * 3  # two steps clip, three fits; nothing from the 3 scorings
    assert {w.filename for w in clipping} == {__file__}


def test_estimator_clips_rows_at_fit_only_and_points_at_the_call():
    X, y = _data()
    X /= 10.0  # norms up to 2.4: some rows above data_norm=1
    model = PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
        model.predict(X)
        model.score(X, y)
    (warning,) = _clipping(caught)
    assert warning.filename == __file__
    message = str(warning.message)
    n_long = int(np.count_nonzero(np.linalg.norm(X, axis=1) > 1.0))
    assert str(n_long) not in message  # the count of clipped rows is not released
    assert "RowNormalizer" in message and "per-record" in message


@pytest.mark.parametrize("make", [
    lambda: PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0),
    lambda: RowNormalizer(data_norm=1.0),
])
def test_no_clipping_advice_suggests_a_larger_data_norm(make):
    X, y = _data()
    with pytest.warns(DataClippingWarning) as caught:
        make().fit(X / 10.0, y)
    message = str(caught[0].message).lower()
    assert "privacy guarantee is the same either way" in message
    assert "a larger data_norm is not a fix" in message
    for advice in ("set data_norm", "increase data_norm", "raise data_norm", "to avoid this"):
        assert advice not in message


def _library_frame(call):
    """``call()`` from a frame whose file looks like dperm's (so the walk skips it)."""
    import dperm.exceptions as exceptions

    code = compile("result = call()", exceptions.__file__, "exec")
    namespace = {"call": call}
    exec(code, namespace)
    return namespace["result"]


def test_warn_at_caller_skips_library_frames():
    def issue():
        warn_at_caller("hello", UserWarning)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        issue()  # from a test file: attributed to issue(), the first frame outside the libraries
        _library_frame(issue)
    assert [w.filename for w in caught] == [__file__, __file__]


def test_user_stacklevel_counts_the_library_frames_it_skips():
    import dperm.exceptions as exceptions

    source = "def inner():\n    return user_stacklevel()\nresult = inner()\n"
    namespace = {"user_stacklevel": user_stacklevel}
    exec(compile(source, exceptions.__file__, "exec"), namespace)  # inner, <module>: library
    assert namespace["result"] == 3  # level 3 is this test function
    assert user_stacklevel() == 1  # called from user code: that frame itself


def test_label_set_warning_points_at_the_users_line():
    """Issue 18: classes=None's PrivacyLeakWarning names the caller's line, not dperm's."""
    import warnings as _warnings

    import numpy as _np

    from dperm import PrivacyLeakWarning, PrivateLogisticRegression

    rng = _np.random.default_rng(0)
    X = rng.normal(size=(100, 3)) / 3.0
    y = (X[:, 0] > 0).astype(int)
    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        PrivateLogisticRegression(random_state=0).fit(X, y)
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert leaks and all(w.filename == __file__ for w in leaks)
