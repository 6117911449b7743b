"""The few-round multiparty Newton protocol: calibration, sensitivity, noise, sums, checks, estimator.

Each guarantee in dperm.multiparty.newton_privacy is checked here: the packed
vector's sensitivity against random and adversarial neighbours, the grid
centres' sensitivity in steps, each party's noise against the calibrated
discrete Gaussian (and a noise-free, sign-flipped or half-noise party is
caught), the secure sum equals the sum of the replies exactly, the accounted
view meets the target, and a party refuses weaker set-ups before drawing.
"""

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from dperm.exceptions import CalibrationRefusedError
from dperm.losses import get_loss
from dperm.mechanisms.noise import round_to_grid, to_grid
from dperm.multiparty import NewtonClassifier
from dperm.multiparty.newton import (
    InProcessNewtonNetwork,
    NewtonParty,
    newton_update,
    pack,
    party_reply,
    private_newton,
    unpack,
)
from dperm.multiparty.newton_privacy import PartyFloor, calibrate_newton, check_newton_calibration
from dperm.multiparty.secure_sum import MaskedSecureSum
from dperm.privacy.newton import collusion_epsilon, packed_length, rounds_epsilon, view_guarantee
from dperm.privacy.release import released_attributes
from dperm.solvers import loss_sums
from tests._multiparty_data import make_data, split

LOGISTIC = get_loss("logistic")
HUBER = get_loss("huber", h=0.5)


def _calibration(loss=LOGISTIC, epsilon=1.0, delta=1e-5, n_rounds=5, sizes=(100, 120, 80), d=4, **kw):
    return calibrate_newton(epsilon=epsilon, delta=delta, alpha=0.05, n_rounds=n_rounds, n_samples_by_party=sizes,
                            n_features=d, loss=loss, data_norm=1.0, **kw)


# -- calibration ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon, delta, n_rounds, parties", [(0.5, 1e-5, 10, 5), (1.0, 1e-6, 30, 3),
                                                                 (4.0, 1e-3, 2, 2)])
def test_the_view_meets_its_target_and_no_less_noise_would(epsilon, delta, n_rounds, parties):
    calibration = _calibration(epsilon=epsilon, delta=delta, n_rounds=n_rounds, sizes=(50,) * parties, d=6)
    view_epsilon, view_delta = view_guarantee(calibration)
    assert view_epsilon <= epsilon and view_delta <= delta * (1 + 1e-12)
    # 1 % less noise would break the target: the calibration is tight, not padded
    weaker = rounds_epsilon(calibration.sensitivity_steps, 0.98 * calibration.party_sigma_squared,
                            parties - calibration.collusion_threshold,  # the K - t shares the target rests on
                            calibration.dimension, n_rounds, calibration.rdp_delta)
    assert weaker > epsilon
    assert calibration.tau < 1e-300  # KLS's tau vanishes at these grids
    assert calibration.dimension == packed_length(6) == 6 + 21


def test_the_rdp_bound_is_the_gaussian_one_when_tau_vanishes():
    """With tau = 0, T rounds at noise multiplier z have RDP T alpha / (2 z^2): check against dp-accounting."""
    import dp_accounting

    calibration = _calibration(n_rounds=7)
    honest = calibration.n_parties - calibration.collusion_threshold  # K - t shares carry the guarantee
    z = math.sqrt(honest * calibration.party_sigma_squared) / calibration.sensitivity_steps
    event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), 7)
    reference = dp_accounting.rdp.RdpAccountant().compose(event).get_epsilon(calibration.rdp_delta)
    assert calibration.rdp_epsilon == pytest.approx(reference, rel=2e-3)


def test_collusion_lowers_the_guarantee_monotonically():
    calibration = _calibration(sizes=(60,) * 4)
    values = [collusion_epsilon(calibration, j) for j in range(4)]
    assert values[calibration.collusion_threshold] == pytest.approx(calibration.rdp_epsilon)
    assert all(a < b for a, b in zip(values, values[1:]))
    with pytest.raises(ValueError, match="n_colluding"):
        collusion_epsilon(calibration, 4)


def test_bad_public_inputs_are_refused_with_the_parameter_named():
    with pytest.raises(ValueError, match="gradient_share"):
        _calibration(gradient_share=1.0)
    with pytest.raises(ValueError, match="at least 2 parties"):
        _calibration(sizes=(100,))
    with pytest.raises(ValueError, match="loss among"):
        _calibration(loss=get_loss("hinge"))
    with pytest.raises(ValueError, match="delta"):
        _calibration(delta=0.0)


# -- sensitivity ---------------------------------------------------------------------------------------


def _packed(X, y, loss, calibration, w):
    _, gradient, hessian = loss_sums(loss, X, y, w, with_hessian=True)
    return pack(gradient, hessian, calibration)


def _adversarial_rows(d, rng):
    """Rows on the sphere: axis vectors, their negatives and random directions (norm exactly 1)."""
    rows = [np.eye(d)[i] * s for i in range(d) for s in (1, -1)]
    rows += list(rng.normal(size=(20, d)))
    return [row / np.linalg.norm(row) for row in rows]


@pytest.mark.parametrize("loss", [LOGISTIC, HUBER], ids=["logistic", "huber"])
def test_packed_sensitivity_is_at_most_one_on_random_and_adversarial_neighbours(loss):
    rng = np.random.default_rng(3)
    d = 4
    calibration = _calibration(loss=loss, d=d)
    X, y = make_data(n=30, d=d, seed=2)
    worst = 0.0
    rows = _adversarial_rows(d, rng)
    for trial in range(300):
        w = rng.normal(scale=[0.0, 0.5, 3.0, 30.0][trial % 4], size=d)
        i = int(rng.integers(len(y)))
        X2, y2 = X.copy(), y.copy()
        X[i] = rows[int(rng.integers(len(rows)))]
        X2[i] = rows[int(rng.integers(len(rows)))]
        y[i], y2[i] = rng.choice([-1.0, 1.0]), rng.choice([-1.0, 1.0])
        change = np.linalg.norm(_packed(X, y, loss, calibration, w) - _packed(X2, y2, loss, calibration, w))
        worst = max(worst, change)
        centres = np.array(to_grid(_packed(X, y, loss, calibration, w), calibration.grid_step))
        centres2 = np.array(to_grid(_packed(X2, y2, loss, calibration, w), calibration.grid_step))
        assert np.linalg.norm(centres - centres2) <= calibration.sensitivity_steps
    assert worst <= 1.0 + 1e-12
    # near the bound: the gradient part alone tends to sqrt(gradient_share) = 0.87 at large margins
    # (both parts cannot peak at once: |phi'| -> L where phi'' -> 0)
    assert worst > 0.7


def test_the_hessian_bound_sqrt2_c_r2_is_attained_by_orthogonal_rows():
    """At w = 0 (phi'' = 1/4 for logistic), swapping e_1 for e_2 moves the Hessian sum by sqrt(2)/4 exactly."""
    calibration = _calibration(d=3)
    X = np.zeros((5, 3))
    X[:, 0] = 1.0
    X2 = X.copy()
    X2[0] = [0.0, 1.0, 0.0]
    y = np.ones(5)
    _, _, h1 = loss_sums(LOGISTIC, X, y, np.zeros(3), with_hessian=True)
    _, _, h2 = loss_sums(LOGISTIC, X2, y, np.zeros(3), with_hessian=True)
    assert np.linalg.norm(h1 - h2) == pytest.approx(calibration.hessian_sensitivity)


def test_pack_and_unpack_are_inverse_and_pack_keeps_the_frobenius_norm():
    calibration = _calibration(d=5)
    rng = np.random.default_rng(0)
    gradient = rng.normal(size=5)
    a = rng.normal(size=(5, 5))
    hessian = a + a.T
    packed = pack(gradient, hessian, calibration)
    back_gradient, back_hessian = unpack(packed, calibration)
    np.testing.assert_allclose(back_gradient, gradient, rtol=1e-12)
    np.testing.assert_allclose(back_hessian, hessian, rtol=1e-12, atol=1e-12)
    assert np.linalg.norm(packed[5:]) == pytest.approx(calibration.hessian_scale * np.linalg.norm(hessian))


# -- a party's noise -----------------------------------------------------------------------------------


def _noise_in_steps(reply_fn, calibration, X, y, w, n_draws):
    centre = np.array(to_grid(_packed(X, y, LOGISTIC, calibration, w), calibration.grid_step))
    draws = [np.rint(reply_fn(np.random.default_rng(seed)) / calibration.grid_step) - centre
             for seed in range(n_draws)]
    return np.concatenate(draws) / math.sqrt(calibration.party_sigma_squared)


def _calibrated_noise_passes(standardised) -> bool:
    """KS against N(0, 1) (the discrete Gaussian at sigma ~ 1e4+ steps is normal to within 1e-8 in CDF)."""
    return stats.kstest(standardised, "norm").pvalue > 1e-3 and abs(np.mean(standardised)) < 0.05


def test_a_party_adds_exactly_the_calibrated_discrete_gaussian_and_broken_parties_are_caught():
    # t = 0: the noise of K = 2 split in halves, the case the broken parties' power was measured for (at t = 1
    # each share carries the whole noise and a flipped gradient hides in it)
    calibration = _calibration(d=3, sizes=(40, 40), collusion_threshold=0)
    X, y = make_data(n=40, d=3, seed=5)
    w = np.array([0.3, -0.2, 0.1])

    def honest(rng):
        return party_reply(X, y, LOGISTIC, calibration, w, rng)

    noise = _noise_in_steps(honest, calibration, X, y, w, 300)
    assert _calibrated_noise_passes(noise)
    assert noise.std() == pytest.approx(1.0, rel=0.05)

    def no_noise(rng):
        return np.array(to_grid(_packed(X, y, LOGISTIC, calibration, w), calibration.grid_step)) * calibration.grid_step

    def flipped(rng):  # the gradient part sign-flipped, with honest noise
        reply = honest(rng)
        reply[:3] -= 2 * no_noise(rng)[:3]
        return reply

    def half_noise(rng):
        return 0.5 * (honest(rng) + no_noise(rng))

    for broken in (no_noise, flipped, half_noise):
        assert not _calibrated_noise_passes(_noise_in_steps(broken, calibration, X, y, w, 300)), broken.__name__


def test_replies_lie_on_the_grid_and_within_the_secure_sum_range():
    calibration = _calibration(d=3, sizes=(40, 40))
    X, y = make_data(n=40, d=3, seed=5)
    reply = party_reply(X, y, LOGISTIC, calibration, np.zeros(3), np.random.default_rng(1))
    steps = reply / calibration.grid_step
    assert np.array_equal(steps, np.rint(steps))
    assert np.all(np.abs(reply) <= calibration.clipping_range)


# -- the secure sum and the coordinator ----------------------------------------------------------------


class _RecordingParty(NewtonParty):
    replies = []

    def reply(self, coef):
        out = super().reply(coef)
        type(self).replies.append(out.copy())
        return out


def _parties(shards, calibration, cls=NewtonParty, seed=0, **floor):
    rngs = np.random.default_rng(seed).spawn(len(shards))
    limits = {"max_epsilon": 10.0, "max_delta": 1e-3, "max_rounds": calibration.n_rounds, **floor}
    return [cls(X, y, loss=LOGISTIC, party_id=k, random_state=rng, **limits)
            for k, ((X, y), rng) in enumerate(zip(shards, rngs))]


@pytest.mark.parametrize("engine", ["masked", "flower"])
def test_the_secure_sum_is_exactly_the_sum_of_the_parties_noisy_replies(engine):
    X, y = make_data(n=200, d=3, seed=7)
    shards = split(X, y, (70, 70, 60))
    calibration = _calibration(d=3, sizes=(70, 70, 60), n_rounds=3)
    encoding = (calibration.clipping_range, calibration.quantization_range, calibration.modulus_range)
    if engine == "masked":
        secure_sum = MaskedSecureSum(*encoding, random_state=1)
    else:
        pytest.importorskip("flwr")
        from dperm.multiparty.flower.engine import FlowerSecureSum

        secure_sum = FlowerSecureSum(*encoding)
    _RecordingParty.replies = []
    network = InProcessNewtonNetwork(_parties(shards, calibration, _RecordingParty), secure_sum)
    network.setup(calibration)
    total, report = network.round_sum(np.array([0.1, 0.2, -0.3]), 0)
    expected = np.sum(_RecordingParty.replies, axis=0)  # exact: integers times a power of two
    np.testing.assert_array_equal(round_to_grid(total, calibration.grid_step), expected)
    assert report.coordinates_clipped is None  # nothing about clipping is revealed


def test_newton_converges_to_the_erm_minimiser_when_the_noise_is_negligible():
    from dperm.solvers import RegularizedERMObjective, minimize_certified

    X, y = make_data(n=600, d=4, seed=11)
    shards = split(X, y, (200, 200, 200))
    calibration = _calibration(epsilon=1e4, delta=1e-3, d=4, sizes=(200, 200, 200), n_rounds=12,
                               collusion_threshold=0)
    result = private_newton(InProcessNewtonNetwork(_parties(shards, calibration, max_epsilon=1e4,
                                                            min_collusion_threshold=0),
                                                   MaskedSecureSum(calibration.clipping_range,
                                                                   calibration.quantization_range,
                                                                   calibration.modulus_range, random_state=0)),
                            calibration)
    exact = minimize_certified(RegularizedERMObjective(LOGISTIC, X, y, 0.05), tol=1e-10, max_iter=500).coef
    assert np.linalg.norm(result.coef - exact) < 1e-3 * max(1.0, np.linalg.norm(exact))


def test_a_noisy_step_stays_in_the_ball_that_holds_the_minimiser():
    calibration = _calibration(d=3)
    wild = newton_update(np.zeros(3), np.array([1e9, -1e9, 1e9]), -1e9 * np.eye(3), calibration)
    assert np.linalg.norm(wild) <= calibration.lipschitz * calibration.data_norm / calibration.alpha + 1e-9


# -- a party's check -----------------------------------------------------------------------------------


def _check(announced, floor=PartyFloor(2.0, 1e-4, 10), n_samples=100, n_features=4):
    return check_newton_calibration(announced, floor, loss=LOGISTIC, data_norm=1.0, n_samples=n_samples,
                                    n_features=n_features, party_id="p")


def test_a_party_accepts_the_honest_set_up():
    announced = _calibration()
    assert _check(announced) == announced


@pytest.mark.parametrize("change, reason", [
    ({"party_sigma_squared": "half"}, "too little noise"),
    ({"grid_step": "double"}, "grid_step"),
    ({"gradient_scale": "double"}, "gradient_scale"),
    ({"data_norm": 0.5}, "data_norm"),
    ({"curvature": 0.1}, "curvature"),
    ({"rdp_epsilon": 0.1}, "rdp_epsilon"),
    ({"n_rounds": 11}, "max_rounds"),
    ({"n_features": 5}, "features"),
    ({"max_party_samples": 50}, "rows"),
    ({"n_samples": 10_000}, "cannot be"),
])
def test_a_party_refuses_a_rogue_set_up_before_drawing(change, reason):
    announced = _calibration()
    values = {}
    for name, value in change.items():
        if value == "half":
            value = getattr(announced, name) / 2
        elif value == "double":
            value = getattr(announced, name) * 2
        values[name] = value
    with pytest.raises(CalibrationRefusedError, match=reason):
        _check(replace(announced, **values))


def test_a_party_refuses_a_target_above_its_floor():
    with pytest.raises(CalibrationRefusedError, match="max_epsilon"):
        _check(_calibration(epsilon=3.0))
    with pytest.raises(CalibrationRefusedError, match="max_epsilon"):
        _check(_calibration(epsilon=1.0, delta=1e-3))


def test_a_party_answers_only_the_agreed_rounds():
    X, y = make_data(n=50, d=4, seed=1)
    calibration = _calibration(sizes=(50, 50), n_rounds=2)
    party = NewtonParty(X, y, loss=LOGISTIC, random_state=0, max_epsilon=2.0, max_delta=1e-4, max_rounds=5)
    with pytest.raises(RuntimeError, match="before its set-up"):
        party.reply(np.zeros(4))
    party.setup(calibration)
    party.reply(np.zeros(4))
    party.reply(np.zeros(4))
    with pytest.raises(RuntimeError, match="all 2 agreed rounds"):
        party.reply(np.zeros(4))


# -- the estimator -------------------------------------------------------------------------------------


def _shards(seed=1):
    X, y = make_data(n=300, d=4, seed=seed)
    return split(X, y, (100, 100, 100))


def test_the_estimator_learns_and_releases_only_public_or_noised_values():
    shards = _shards()
    model = NewtonClassifier(epsilon=8.0, alpha=0.05, random_state=0, classes=[-1.0, 1.0]).fit(shards)
    X = np.vstack([X for X, _ in shards])
    y = np.concatenate([y for _, y in shards])
    assert model.score(X, y) > 0.8
    released = released_attributes(model)
    assert set(released) >= {"coef_", "privacy_", "classes_"}
    record = model.privacy_
    assert record.epsilon <= 8.0 and record.delta <= 1e-5 * (1 + 1e-12)
    assert record.mechanism == "multiparty_newton" and record.secure_sum.coordinates_clipped is None
    assert "Collusion" in record.summary()


def test_neighbouring_shards_give_the_same_record():
    shards = _shards()
    X0, y0 = shards[0]
    X1, y1 = X0.copy(), y0.copy()
    X1[0], y1[0] = [0.0, 0.0, 0.0, 1.0], -y1[0]
    a = NewtonClassifier(epsilon=1.0, random_state=0, classes=[-1.0, 1.0]).fit(shards)
    b = NewtonClassifier(epsilon=1.0, random_state=0, classes=[-1.0, 1.0]).fit([(X1, y1)] + shards[1:])
    released_a, released_b = released_attributes(a), released_attributes(b)
    assert set(released_a) == set(released_b)
    for name in set(released_a) - {"coef_"}:  # everything but the noised coefficients is the same
        assert np.array_equal(released_a[name], released_b[name]) if isinstance(released_a[name], np.ndarray) \
            else released_a[name] == released_b[name], name
    assert not np.array_equal(a.coef_, b.coef_)


def test_bad_parameters_fail_before_the_budget_is_spent():
    from dperm.privacy.accounting import BudgetAccountant

    accountant = BudgetAccountant(epsilon=5.0, delta=1e-3)
    for bad in ({"gradient_share": 0.0}, {"n_rounds": 0}, {"loss": "hinge"}, {"secure_sum": "gossip"}):
        with pytest.raises(ValueError):
            NewtonClassifier(accountant=accountant, classes=[-1.0, 1.0], **bad).fit(_shards())
    assert accountant.spent == (0.0, 0.0)


def test_the_label_set_is_read_from_the_data_only_with_a_warning():
    from dperm.exceptions import PrivacyLeakWarning

    with pytest.warns(PrivacyLeakWarning):
        NewtonClassifier(random_state=0).fit(_shards())


def test_the_calibration_has_one_owner_under_privacy_and_the_boundary_only_checks():
    """dperm.privacy.newton computes; calibrate_newton checks the public inputs and the loss, then asks it."""
    from dperm.privacy.newton import NewtonCalibration as Owned
    from dperm.privacy.newton import newton_calibration

    loss = get_loss("huber", h=0.5)
    checked = calibrate_newton(epsilon=1.0, delta=1e-5, alpha=0.01, n_rounds=4, n_samples_by_party=(30, 50),
                               n_features=3, loss=loss, data_norm=1.0)
    direct = newton_calibration(1.0, 1e-5, 0.01, 4, (80, 2, 50), 3, "huber", float(loss.lipschitz),
                                float(loss.curvature), 1.0, 0.75, 1)
    assert isinstance(checked, Owned) and checked == direct
    with pytest.raises(ValueError, match="needs a loss among"):
        calibrate_newton(epsilon=1.0, delta=1e-5, alpha=0.01, n_rounds=4, n_samples_by_party=(30, 50),
                         n_features=3, loss=get_loss("hinge"), data_norm=1.0)
