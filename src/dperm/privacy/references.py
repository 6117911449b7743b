"""The references of the protocols beyond the ERM mechanisms: what each proves, and where.

The records of private prediction, parameter search and the multiparty protocols read
it. The ERM mechanisms' references are in their rows of
:data:`dperm.mechanisms.catalog.MECHANISMS`, so a paper's theorem is cited in one place.
"""

__all__ = ["REFERENCES"]

REFERENCES = {
    # private prediction (dperm.mechanisms.prediction)
    "private_prediction": (
        "Nie & Wang (2017), J. Inequal. Appl., Lemma 1, Thm 2, Prop. 1 and Sec. 5, for the exact "
        "kernel or the finite-rank kernel z(x).z(x') of public random Fourier features (noise scale "
        "B_Delta / epsilon per paper note 5 in docs/paper_notes.md); Nie & Wang (2017b), J. Appl. Math. Phys. 5, "
        "eq. 2 (projection) and Lemma 2"
    ),
    # private parameter tuning (dperm.tuning)
    "tuning_alg4": (
        "Chaudhuri, Monteleoni & Sarwate (2011), Alg. 4 and Thm 8: parallel composition over "
        "m + 1 disjoint parts, exponential mechanism selection"
    ),
    "tuning_random_stopping": (
        "Papernot & Steinke (ICLR 2022), Hyperparameter Tuning with Renyi Differential Privacy, "
        "Thm 2 (truncated negative binomial number of repetitions; its pure-DP limit, "
        "(2 + eta) epsilon, is Liu & Talwar (STOC 2019) Thm 3.4's 3 epsilon at eta = 1)"
    ),
    # multiparty protocols (dperm.multiparty)
    "psgd": "Rajkumar & Agarwal (2012), Alg. 1, Procs. 2-3, Thm 4.2 (via GOP, Alg. 4 and Thm 4.1); "
    "paper notes 2-4, 13-14 in docs/paper_notes.md",
    "psgd_coordinator_dp": "Rajkumar & Agarwal (2012), Alg. 1 and Prop. 3.1 with per-round Gaussian "
    "noise instead of Proc. 3's (beyond the paper: paper note 13 in docs/paper_notes.md); accounting by Google's "
    "dp-accounting (privacy loss distributions, Koskela et al. 2020 / Doroshenko et al. 2022; or "
    "Renyi DP, Mironov 2017)",
    "local_aggregation": "Pathak, Rane & Raj (2010) as in Rajkumar & Agarwal (2012), eq. 5; "
    "Chaudhuri et al. (2011), Cor. 1; paper notes 1, 2, 12, 14 in docs/paper_notes.md",
    "newton": (
        "beyond the papers: damped Newton (Nesterov 2004, Sec. 4.1.5) on secure sums of gradient and Hessian "
        "sums; distributed discrete Gaussian noise (Kairouz, Liu & Steinke 2021, Thm 1; Canonne, Kamath & "
        "Steinke 2020, Alg. 3); Renyi DP composition (Mironov 2017) converted by dp-accounting"
    ),
}
