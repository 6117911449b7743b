"""``fallback="majority"``: the private choice between the fitted model and the majority class.

Sensitivity of the released score vector (random and adversarial neighbours), the noise's
law (goodness of fit to the exact discrete Laplace), the choice and the constant model as
post-processing, the spend, the record and model files, a neighbour swap, and an audit that
passes the honest choice and catches a quarter-noise copy. docs/defaults_classifiers.md,
"The majority fallback".
"""

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from dperm import PrivateLogisticRegression
from dperm.audit import audit_samples
from dperm.exceptions import BudgetExceededError
from dperm.mechanisms.fallback import (
    choose,
    class_shares,
    constant_intercepts,
    noisy_scores,
    release_fallback,
    score_vector,
)
from dperm.privacy.accounting import BudgetAccountant
from dperm.privacy.fallback import (
    FALLBACK_MAX_SHARE,
    fallback_calibration,
    fallback_sensitivity,
    fallback_share,
    split_epsilon,
)
from dperm.privacy.release import NOISED, release_kinds


def _scores(theta, X, y, classes):
    """The score vector the fit releases, for a fixed (already released) linear model."""
    predicted = classes[np.argmax(X @ theta, axis=1)] if theta.ndim == 2 else classes[(X @ theta > 0).astype(int)]
    correct = int(np.count_nonzero(predicted == y))
    counts = [int(np.count_nonzero(y == c)) for c in classes]
    return np.array(score_vector(correct, counts, len(classes)))


def _data(rng, n, d, k):
    X = rng.normal(size=(n, d))
    return X, rng.integers(0, k, size=n)


# -- sensitivity ---------------------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 3, 5])
def test_score_vector_moves_by_at_most_delta_between_random_neighbours(k):
    rng = np.random.default_rng(k)
    classes = np.arange(k)
    delta_l1 = fallback_sensitivity(k)
    worst = 0
    for _ in range(400):
        n, d = int(rng.integers(2, 40)), int(rng.integers(1, 5))
        X, y = _data(rng, n, d, k)
        theta = rng.normal(size=d) if k == 2 else rng.normal(size=(d, k))
        i = int(rng.integers(n))
        X2, y2 = X.copy(), y.copy()
        X2[i], y2[i] = rng.normal(size=d), rng.integers(0, k)  # replace-one
        moved = int(np.abs(_scores(theta, X, y, classes) - _scores(theta, X2, y2, classes)).sum())
        assert moved <= delta_l1
        worst = max(worst, moved)
    assert worst == delta_l1  # random neighbours reach the bound: it is not loose


@pytest.mark.parametrize("k", [2, 3, 4])
def test_adversarial_neighbours_reach_delta_and_no_swap_exceeds_it(k):
    """Exhaustive: every replacement of one row by every (row, label) of a small grid."""
    rng = np.random.default_rng(10 + k)
    classes = np.arange(k)
    X, y = _data(rng, 12, 2, k)
    theta = rng.normal(size=2) if k == 2 else rng.normal(size=(2, k))
    base = _scores(theta, X, y, classes)
    candidates = [np.array(p) for p in [(3.0, 3.0), (-3.0, -3.0), (3.0, -3.0), (-3.0, 3.0), (0.0, 0.0)]]
    worst = 0
    for i in range(len(y)):
        for row in candidates:
            for label in classes:
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = row, label
                worst = max(worst, int(np.abs(base - _scores(theta, X2, y2, classes)).sum()))
    assert worst == fallback_sensitivity(k)


def test_two_labels_release_one_count_because_n_is_public():
    assert score_vector(7, [3, 5], 2) == [7, 5]
    assert score_vector(7, [3, 5, 1], 3) == [7, 3, 5, 1]
    with pytest.raises(ValueError, match="expected 3 class counts"):
        score_vector(7, [3, 5], 3)


# -- the noise --------------------------------------------------------------------------------
def test_noise_is_the_exact_discrete_laplace_of_the_calibrated_scale():
    calibration = fallback_calibration(100, 2, 1.0, share=0.5)  # eps_c 0.5, scale 4
    assert calibration.exact_scale == 4
    rng = np.random.default_rng(3)
    draws = np.array([noisy_scores([0, 0], calibration, rng) for _ in range(6000)]).ravel()
    q = math.exp(-1 / 4)
    support = np.arange(-12, 13)
    pmf = (1 - q) / (1 + q) * q ** np.abs(support)
    observed = np.array([np.count_nonzero(draws == z) for z in support] + [np.count_nonzero(np.abs(draws) > 12)])
    expected = np.append(pmf, 1 - pmf.sum()) * draws.size
    assert stats.chisquare(observed, expected).pvalue > 0.001
    assert abs(draws.mean()) < 0.2  # centred


def test_noise_of_a_wrong_scale_fails_the_same_test():
    calibration = fallback_calibration(100, 2, 1.0, share=0.5)
    rng = np.random.default_rng(3)
    wide = dataclasses.replace(calibration, epsilon=calibration.epsilon / 1.3)
    draws = np.array([noisy_scores([0, 0], wide, rng) for _ in range(6000)]).ravel()
    q = math.exp(-1 / 4)
    support = np.arange(-12, 13)
    pmf = (1 - q) / (1 + q) * q ** np.abs(support)
    observed = np.array([np.count_nonzero(draws == z) for z in support] + [np.count_nonzero(np.abs(draws) > 12)])
    expected = np.append(pmf, 1 - pmf.sum()) * draws.size
    assert stats.chisquare(observed, expected).pvalue < 1e-6


# -- calibration (public inputs only) ---------------------------------------------------------
def test_share_rule_is_public_bounded_and_falls_with_n_epsilon():
    assert fallback_share(100, 2, 0.1) == FALLBACK_MAX_SHARE
    shares = [fallback_share(n, 2, 1.0) for n in (500, 2_000, 10_000, 100_000)]
    assert all(a >= b for a, b in zip(shares, shares[1:])) and shares[-1] < shares[0]
    assert fallback_share(10_000, 3, 1.0) == pytest.approx(1.5 * fallback_share(10_000, 2, 1.0))
    for eps in (0.01, 0.1, 0.3, 1.0, 3.0, 1e4):
        for n in (2, 37, 1_000, 10**6):
            calibration = fallback_calibration(n, 2, eps)
            assert 0 < calibration.share <= FALLBACK_MAX_SHARE
            rest = split_epsilon(eps, calibration)
            assert 0 < rest < eps and rest + calibration.epsilon <= eps
            assert calibration.noise_scale == pytest.approx(2 / calibration.epsilon)


def test_split_never_spends_more_than_epsilon_in_floating_point():
    """``(eps - eps_c) + eps_c`` exceeds ``eps`` by one ulp for many floats: the split steps down."""
    naive_over = 0
    for eps in np.linspace(0.01, 10, 997):
        for share in (0.05, 0.1, 0.13, 0.2, 0.3):
            calibration = fallback_calibration(1000, 2, float(eps), share=share)
            naive_over += (float(eps) - calibration.epsilon) + calibration.epsilon > float(eps)
            assert split_epsilon(float(eps), calibration) + calibration.epsilon <= float(eps)
    assert naive_over > 0  # the case the step guards against does occur


def test_bad_share_refused():
    with pytest.raises(ValueError, match="share"):
        fallback_calibration(100, 2, 1.0, share=1.0)
    with pytest.raises(ValueError, match="n_classes"):
        fallback_sensitivity(1)


# -- the choice and the constant model are post-processing --------------------------------------
def test_choice_prefers_the_larger_noisy_count_and_keeps_the_model_on_ties():
    assert choose([60, 70], 100, 2).choice == "constant"  # constant labels 70 correctly
    assert choose([70, 70], 100, 2).choice == "model"  # tie
    assert choose([71, 30], 100, 2).choice == "model"  # constant: max(70, 30) = 70 < 71
    assert choose([69, 30], 100, 2).choice == "constant"
    release = choose([10, 4, 12, 3], 19, 3)
    assert release.choice == "constant" and release.class_counts.tolist() == [4, 12, 3]


@pytest.mark.parametrize("counts, multinomial", [
    ([30, 70], False), ([70, 30], False), ([-5, 40], False),  # two labels: one binary problem
    ([5, 80, 15], False), ([50, -3, 60, 2], False), ([5, 80, 15], True), ([50, -3, 60, 2], True),
])
def test_constant_intercepts_predict_the_noisy_majority_on_the_grid(counts, multinomial):
    grid, scaling = 2.0**-20, 1.0
    values = constant_intercepts(counts, multinomial, grid, scaling)
    steps = values / grid
    assert np.array_equal(steps, np.round(steps))
    if len(counts) == 2:
        assert (values[0] > 0) == (counts[1] > counts[0])
        assert 1 / (1 + math.exp(-values[0])) == pytest.approx(class_shares(counts)[1], abs=1e-5)
    else:
        assert int(np.argmax(values)) == int(np.argmax(counts))


# -- the estimator --------------------------------------------------------------------------
def _binary(n=600, signal=4.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (signal * X[:, 0] + rng.logistic(size=n) > 1.2).astype(int)
    return X, y


def test_fit_spends_the_whole_epsilon_once_and_splits_it():
    X, y = _binary()
    accountant = BudgetAccountant(epsilon=1.0)
    model = PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], fallback="majority", random_state=0,
                                      accountant=accountant).fit(X, y)
    assert accountant.spent == (1.0, 0.0)
    record = model.privacy_
    assert record.epsilon == 1.0
    assert record.fallback_epsilon == pytest.approx(record.fallback_share * 1.0)
    assert record.epsilon_per_problem + record.fallback_epsilon <= 1.0
    assert record.epsilon_per_problem == pytest.approx(1.0 - record.fallback_epsilon)
    with pytest.raises(BudgetExceededError):
        PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], fallback="majority",
                                  accountant=accountant).fit(X, y)


def test_erm_runs_exactly_as_a_fit_at_the_rest_of_epsilon():
    """The model part is today's fit at ``(1 - s) epsilon`` with the same noise: nothing else moves."""
    X, y = _binary(n=2_000, signal=8.0)
    guarded = PrivateLogisticRegression(epsilon=2.0, classes=[0, 1], fallback="majority", random_state=5).fit(X, y)
    assert guarded.privacy_.fallback_choice == "model"
    rest = split_epsilon(2.0, fallback_calibration(len(y), 2, 2.0))
    plain = PrivateLogisticRegression(epsilon=rest, classes=[0, 1], alpha="monotone", fallback=None,
                                      random_state=5).fit(X, y)  # "auto" is "monotone" under the fallback
    np.testing.assert_array_equal(guarded.coef_, plain.coef_)
    np.testing.assert_array_equal(guarded.intercept_, plain.intercept_)
    assert guarded.alpha_ == plain.alpha_


def test_no_signal_and_small_epsilon_falls_back_to_the_majority_class():
    rng = np.random.default_rng(1)
    n = 3_000
    X = rng.normal(size=(n, 10)) / 4
    y = (rng.random(n) < 0.75).astype(int)  # labels independent of X
    choices = []
    for seed in range(8):
        model = PrivateLogisticRegression(epsilon=0.3, classes=[0, 1], fallback="majority",
                                          random_state=seed).fit(X, y)
        choices.append(model.privacy_.fallback_choice)
        if model.privacy_.fallback_choice == "constant":
            assert np.all(model.coef_ == 0)
            assert np.all(model.predict(X) == 1)
            assert model.predict_proba(X)[0, 1] == pytest.approx(0.75, abs=0.05)
    assert choices.count("constant") >= 6


@pytest.mark.parametrize("multi_class", ["ovr", "multinomial"])
def test_multiclass_constant_predicts_the_noisy_majority(multi_class):
    rng = np.random.default_rng(2)
    n = 1_500
    X = rng.normal(size=(n, 4)) / 3
    y = rng.choice(["a", "b", "c"], size=n, p=[0.2, 0.6, 0.2])
    choices = []
    for seed in range(6):
        model = PrivateLogisticRegression(epsilon=0.2, classes=["a", "b", "c"], multi_class=multi_class,
                                          fallback="majority", random_state=seed).fit(X, y)
        assert model.multi_class_ == multi_class
        assert model.privacy_.fallback_sensitivity == 3
        choices.append(model.privacy_.fallback_choice)
        if choices[-1] == "constant":
            assert np.all(model.coef_ == 0)
            assert set(model.predict(X)) == {"b"}
            assert model.predict_proba(X)[0].argmax() == 1
            # the noisy frequency: three counts with noise of scale 75 on n = 1,500
            assert model.predict_proba(X)[0, 1] == pytest.approx(0.6, abs=0.2)
    assert "constant" in choices


def test_refusals_spend_nothing():
    X, y = _binary()
    accountant = BudgetAccountant(epsilon=1.0)
    with pytest.raises(ValueError, match="fit_intercept=True"):
        PrivateLogisticRegression(classes=[0, 1], fallback="majority", fit_intercept=False,
                                  accountant=accountant).fit(X, y)
    with pytest.raises(ValueError, match="fallback"):
        PrivateLogisticRegression(classes=[0, 1], fallback="minority").fit(X, y)
    assert accountant.spent == (0.0, 0.0)


def test_record_states_share_noise_and_choice_and_public_record_agrees():
    X, y = _binary()
    model = PrivateLogisticRegression(epsilon=0.5, classes=[0, 1], fallback="majority", random_state=0).fit(X, y)
    record = model.privacy_
    assert "Majority fallback" in str(record)
    data = record.to_dict()
    for key in ("fallback_share", "fallback_epsilon", "fallback_sensitivity", "fallback_noise_scale",
                "fallback_choice"):
        assert key in data
    assert type(record).from_dict(data) == record
    public = PrivateLogisticRegression(epsilon=0.5, classes=[0, 1], fallback="majority")._public_record(
        len(y), X.shape[1], 1, label_set_public=True).to_dict()
    assert "fallback_choice" not in public
    assert {k: v for k, v in data.items() if k != "fallback_choice"} == public
    plain = PrivateLogisticRegression(epsilon=0.5, classes=[0, 1], fallback=None, random_state=0).fit(X, y)
    assert not any(key.startswith("fallback") for key in plain.privacy_.to_dict())


@pytest.mark.parametrize("seed", [0, 1])
def test_neighbour_swap_changes_only_noised_values(seed):
    """Same seed on D and D' (one row replaced): every public or calibrated number is the same."""
    X, y = _binary(seed=seed)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = -X[0], 1 - y[0]
    fits = [PrivateLogisticRegression(epsilon=0.4, classes=[0, 1], fallback="majority",
                                      random_state=seed).fit(a, b) for a, b in ((X, y), (X2, y2))]
    on_d, on_d_prime = (f.privacy_ for f in fits)
    kinds = release_kinds(on_d)
    for name, kind in kinds.items():
        if kind != NOISED and name != "fallback_choice":  # the choice is a function of noised scores
            assert getattr(on_d, name) == getattr(on_d_prime, name), name
    for name in ("alpha_", "mechanism_", "multi_class_", "n_features_in_"):
        assert getattr(fits[0], name) == getattr(fits[1], name)
    np.testing.assert_array_equal(fits[0].classes_, fits[1].classes_)


# -- audit ------------------------------------------------------------------------------------
def _audit_statistics(calibration, runs, seed):
    """The released score vector on D and on a worst-case neighbour D' (a row the model labels
    correctly, of class 1, replaced by one of class 0 it labels wrongly: both scores fall by 1)."""
    rng = np.random.default_rng(seed)
    on_d = [sum(noisy_scores([70, 55], calibration, rng)) for _ in range(runs)]
    on_d_prime = [sum(noisy_scores([69, 54], calibration, rng)) for _ in range(runs)]
    return on_d, on_d_prime


def test_audit_passes_the_honest_choice_and_catches_a_quarter_noise_copy():
    calibration = fallback_calibration(100, 2, 2.0, share=0.5)  # eps_c = 1
    honest = audit_samples(*_audit_statistics(calibration, 6_000, 11), claimed_epsilon=1.0)
    assert honest.eps_lower <= 1.0
    quarter = dataclasses.replace(calibration, epsilon=4 * calibration.epsilon)  # a quarter of the noise
    caught = audit_samples(*_audit_statistics(quarter, 6_000, 12), claimed_epsilon=1.0)
    assert caught.eps_lower > 1.0


def test_release_fallback_is_noisy_scores_then_choose():
    calibration = fallback_calibration(100, 3, 1.0, share=0.3)
    a = release_fallback(50, [20, 60, 20], calibration, 100, np.random.default_rng(4))
    noisy = noisy_scores([50, 20, 60, 20], calibration, np.random.default_rng(4))
    b = choose(noisy, 100, 3)
    assert a.choice == b.choice and a.class_counts.tolist() == b.class_counts.tolist()


# -- model files ------------------------------------------------------------------------------
def _spec(n_features):
    from dperm.tabular import NumericColumn, TabularSpec

    return TabularSpec([NumericColumn(f"x{i}", -1.0, 1.0) for i in range(n_features)])


def _fallback_models():
    """A released model, a released constant (two labels), and multinomial / one-vs-rest constants."""
    X, y = _binary(n=2_000, signal=8.0)
    model = PrivateLogisticRegression(epsilon=2.0, classes=[0, 1], fallback="majority", random_state=5).fit(X, y)
    rng = np.random.default_rng(1)
    noise = rng.normal(size=(3_000, 3)) / 4
    labels = (rng.random(3_000) < 0.75).astype(int)
    constant = PrivateLogisticRegression(epsilon=0.3, classes=[0, 1], fallback="majority",
                                         random_state=0).fit(noise, labels)
    three = rng.choice([0, 1, 2], size=3_000, p=[0.2, 0.6, 0.2])
    multi = [PrivateLogisticRegression(epsilon=0.3, classes=[0, 1, 2], multi_class=mc, fallback="majority",
                                       random_state=s).fit(noise, three)
             for mc in ("multinomial", "ovr") for s in range(4)]
    return [(model, 3), (constant, 3)] + [(m, 3) for m in multi]


def test_model_files_round_trip_with_the_fallback(tmp_path):

    from dperm.model_io import load_model, save_model

    models = _fallback_models()
    assert models[0][0].privacy_.fallback_choice == "model"
    assert models[1][0].privacy_.fallback_choice == "constant"
    assert "constant" in {m.privacy_.fallback_choice for m, _ in models[2:]}
    for i, (model, d) in enumerate(models):
        path = tmp_path / f"m{i}.json"
        save_model(path, model, _spec(d), "label")
        loaded, _, document = load_model(path)
        assert document["params"]["fallback"] == "majority"
        assert loaded.privacy_ == model.privacy_
        np.testing.assert_array_equal(loaded.coef_, model.coef_)
        np.testing.assert_array_equal(loaded.intercept_, model.intercept_)
        probe = np.random.default_rng(i).normal(size=(50, d)) / 3
        np.testing.assert_array_equal(loaded.predict(probe), model.predict(probe))
        np.testing.assert_allclose(loaded.predict_proba(probe), model.predict_proba(probe))


def test_model_file_edits_of_the_fallback_are_refused(tmp_path):
    import json

    from dperm.model_io import load_model, save_model, with_digest

    (model, d), (constant, _) = _fallback_models()[:2]
    for fitted, edit, message in [
        (model, lambda doc: doc["privacy"].__setitem__("fallback_share", 0.5), "fallback_share"),
        (model, lambda doc: doc["privacy"].__setitem__("fallback_choice", "both"), "fallback_choice"),
        (model, lambda doc: doc["params"].__setitem__("fallback", None), "epsilon_per_problem"),
        (model, lambda doc: [doc["privacy"].pop(k) for k in list(doc["privacy"]) if k.startswith("fallback")],
         "fallback"),
        (model, lambda doc: doc["privacy"].pop("fallback_choice"), "fallback"),
        (constant, lambda doc: doc["coef"][0].__setitem__(0, doc["intercept"][0]), "coef"),
    ]:
        path = tmp_path / "m.json"
        save_model(path, fitted, _spec(d), "label")
        document = json.loads(path.read_text())
        edit(document)
        document.pop("digest")
        path.write_text(json.dumps(with_digest(document)))
        with pytest.raises(ValueError, match=message):
            load_model(path)


def test_files_without_the_fallback_do_not_name_it(tmp_path):
    import json

    from dperm.model_io import save_model

    X, y = _binary()
    plain = PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], fallback=None, random_state=0).fit(X, y)
    path = tmp_path / "plain.json"
    save_model(path, plain, _spec(3), "label")
    document = json.loads(path.read_text())
    assert "fallback" not in document["params"]
    assert not any(key.startswith("fallback") for key in document["privacy"])


# -- the default (issue 30): fallback="auto" -------------------------------------------------------


def test_default_is_the_monotone_rule_with_the_fallback_for_two_labels_with_an_intercept():
    """Two labels, an intercept, rows in memory: the fallback is on and alpha="auto" is the monotone rule;
    fallback=None gives the previous default exactly; no intercept or three labels: no fallback."""
    X, y = _binary()
    default = PrivateLogisticRegression(epsilon=0.5, classes=[0, 1], random_state=3).fit(X, y)
    explicit = PrivateLogisticRegression(epsilon=0.5, classes=[0, 1], fallback="majority", alpha="monotone",
                                         random_state=3).fit(X, y)
    assert default.privacy_.fallback is not None and default.alpha_ == explicit.alpha_
    np.testing.assert_array_equal(default.coef_, explicit.coef_)
    np.testing.assert_array_equal(default.intercept_, explicit.intercept_)
    old = PrivateLogisticRegression(epsilon=0.5, classes=[0, 1], fallback=None, random_state=3).fit(X, y)
    assert old.privacy_.fallback is None and old.alpha_ != default.alpha_
    no_intercept = PrivateLogisticRegression(epsilon=0.5, classes=[0, 1], fit_intercept=False, random_state=3)
    assert no_intercept.fit(X, y).privacy_.fallback is None
    labels = np.where(X[:, 1] > 0, 2, y)
    three = PrivateLogisticRegression(epsilon=0.5, classes=[0, 1, 2], random_state=3).fit(X, labels)
    assert three.privacy_.fallback is None
    with pytest.raises(ValueError, match="fit_intercept=True"):
        PrivateLogisticRegression(classes=[0, 1], fallback="majority", fit_intercept=False).fit(X, y)


def test_default_releases_the_majority_class_where_the_labels_carry_no_signal():
    """The issue's worst case: with labels independent of X at a small epsilon the default predicts the
    majority class in most fits instead of falling below it."""
    rng = np.random.default_rng(11)
    n = 1_500
    X = rng.normal(size=(n, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (rng.random(n) < 0.75).astype(int)
    constant = [PrivateLogisticRegression(epsilon=0.3, classes=[0, 1], random_state=seed).fit(X, y)
                .privacy_.fallback_choice == "constant" for seed in range(8)]
    assert sum(constant) >= 6


def test_files_written_before_the_default_changed_load_with_the_fallback_off(tmp_path):
    """A file leaves out ``fallback`` when it was None: such a file (every file of an older dperm) loads as
    fallback=None, not as today's default "auto", so its record without a fallback is consistent."""
    import json

    from dperm.model_io import load_model, save_model, with_digest

    X, y = _binary()
    old = PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], fallback=None, random_state=0).fit(X, y)
    path = tmp_path / "old.json"
    save_model(path, old, _spec(3), "label")
    assert "fallback" not in json.loads(path.read_text())["params"]
    loaded, _, _ = load_model(path)
    assert loaded.fallback is None
    np.testing.assert_array_equal(loaded.coef_, old.coef_)
    default = PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    path = tmp_path / "default.json"
    save_model(path, default, _spec(3), "label")
    assert json.loads(path.read_text())["params"]["fallback"] == "auto"
    loaded, _, _ = load_model(path)
    assert loaded.fallback == "auto" and loaded.privacy_ == default.privacy_
    document = json.loads(path.read_text())  # the same file claiming the old default: refused
    del document["params"]["fallback"]
    document.pop("digest")
    path.write_text(json.dumps(with_digest(document)))
    with pytest.raises(ValueError, match="epsilon_per_problem|fallback"):
        load_model(path)


def test_a_default_fit_without_the_fallback_writes_the_file_it_always_wrote(tmp_path):
    """fallback="auto" resolved to off (no intercept, three labels) is written as None: left out of the
    file, whose bytes are those of the previous default's file."""
    import json

    from dperm.model_io import load_model, save_model

    X, y = _binary()
    for params, labels in (({"fit_intercept": False, "classes": [0, 1]}, y),
                           ({"classes": [0, 1, 2]}, np.where(X[:, 1] > 0.3, 2, y))):
        paths = []
        for fallback in ("auto", None):
            model = PrivateLogisticRegression(epsilon=1.0, fallback=fallback, random_state=0, **params)
            paths.append(tmp_path / f"{fallback}.json")
            save_model(paths[-1], model.fit(X, labels), _spec(3), "label")
        assert paths[0].read_bytes() == paths[1].read_bytes()
        assert "fallback" not in json.loads(paths[0].read_text())["params"]
        assert load_model(paths[0])[0].fallback is None
