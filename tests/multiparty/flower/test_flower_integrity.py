"""Integrity on the deployed reply paths (issue 31): a broken party sends nothing into SecAgg+.

``flower_app.party_reply`` (PSGD) and ``flower.newton.newton_reply`` are what
a party's ClientApp runs before ``secaggplus_mod`` encodes the reply; each
must refuse a non-finite or out-of-bound reply instead of returning it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("flwr")

from dperm.exceptions import DataClippingWarning, MalformedReplyError  # noqa: E402
from dperm.losses import get_loss  # noqa: E402
from dperm.multiparty import calibrate_psgd  # noqa: E402
from dperm.multiparty.flower import app as flower_app  # noqa: E402
from dperm.multiparty.flower._grid_network import new_run_id  # noqa: E402
from dperm.multiparty.newton_privacy import calibrate_newton  # noqa: E402
from dperm.multiparty.protocol import Party  # noqa: E402
from tests._multiparty_data import make_data, write_shard  # noqa: E402
from tests.multiparty.flower.test_flower import party_context  # noqa: E402

LOGISTIC = get_loss("logistic")
FLOOR = {"max-epsilon": 1000.0, "max-delta": 1e-3, "max-rounds": 10}
BROKEN = ["nan", "inf", "-inf", "-50x"]


def _shard(tmp_path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    X, y = make_data(n=60, d=4, seed=5, noise=0.0)
    return party_context(write_shard(tmp_path / "shard.csv", X, y), FLOOR)


def _psgd_party(tmp_path):
    context = _shard(tmp_path)
    calibration = calibrate_psgd(epsilon=1.0, delta=1e-5, alpha=0.05, n_samples=120, n_parties=2, n_features=4,
                                 n_rounds=3, loss=LOGISTIC, data_norm=1.0)
    run_id = new_run_id()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataClippingWarning)
        assert flower_app.party_setup(context, {"action": "setup", "run-id": run_id,
                                                **flower_app.calibration_to_config(calibration, 0.5)})
    return context, {"scale": 1 / 120, "clipping-range": 8.0, "quantization-range": 2**22, "run-id": run_id}


def _newton_party(tmp_path):
    context = _shard(tmp_path)
    calibration = calibrate_newton(epsilon=1.0, delta=1e-5, alpha=0.05, n_rounds=3, n_samples_by_party=(60, 60),
                                   n_features=4, loss=LOGISTIC, data_norm=1.0)
    run_id = new_run_id()
    assert flower_app.party_setup(context, {"action": "setup", "protocol": "newton", "run-id": run_id, "h": 0.5,
                                            **calibration.to_config()})
    return context, {"protocol": "newton", "run-id": run_id, "round": 0}


def _break(values, how):
    values = np.asarray(values, dtype=float)
    return -50.0 * values if how == "-50x" else values + float(how)


def test_the_deployed_replies_pass_when_honest(tmp_path):
    context, config = _psgd_party(tmp_path / "psgd")
    assert np.all(np.isfinite(flower_app.party_reply(context, [np.zeros(4)], config)[0]))
    context, config = _newton_party(tmp_path / "newton")
    assert np.all(np.isfinite(flower_app.party_reply(context, [np.zeros(4)], config)[0]))


@pytest.mark.parametrize("how", BROKEN)
def test_a_deployed_psgd_party_refuses_a_broken_gradient(tmp_path, monkeypatch, how):
    context, config = _psgd_party(tmp_path)
    honest = Party.local_gradient
    monkeypatch.setattr(Party, "local_gradient", lambda self, coef: _break(honest(self, coef), how))
    with pytest.raises(MalformedReplyError, match="party 'p' refuses to send its gradient sum"):
        flower_app.party_reply(context, [np.zeros(4)], config)


@pytest.mark.parametrize("how", ["nan", "inf", "-inf"])
def test_a_deployed_psgd_party_refuses_a_broken_noise_draw(tmp_path, monkeypatch, how):
    context, config = _psgd_party(tmp_path)
    monkeypatch.setattr(Party, "_release_round", lambda self, gradient: _break(gradient, how))
    with pytest.raises(MalformedReplyError, match="party 'p' refuses to send its reply"):
        flower_app.party_reply(context, [np.zeros(4)], config)


@pytest.mark.parametrize("how", BROKEN)
def test_a_deployed_newton_party_refuses_broken_sums(tmp_path, monkeypatch, how):
    from dperm.multiparty import newton

    context, config = _newton_party(tmp_path)
    honest = newton.pack
    monkeypatch.setattr(newton, "pack", lambda g, h, calibration: _break(honest(g, h, calibration), how))
    with pytest.raises(MalformedReplyError, match="party 'p' refuses to send its packed sums"):
        flower_app.party_reply(context, [np.zeros(4)], config)


@pytest.mark.parametrize("how", ["nan", "inf", "-inf"])
def test_a_deployed_newton_party_refuses_a_broken_noise_draw(tmp_path, monkeypatch, how):
    from dperm.multiparty import newton

    context, config = _newton_party(tmp_path)
    honest = newton.grid_vector
    monkeypatch.setattr(newton, "grid_vector", lambda values, step: _break(honest(values, step), how))
    with pytest.raises(MalformedReplyError, match="party 'p' refuses to send its reply"):
        flower_app.party_reply(context, [np.zeros(4)], config)
