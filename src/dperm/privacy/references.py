"""The one table of references: what each mechanism and protocol proves, and where.

Every record's ``reference`` field and the mechanism registry
(:data:`dperm.mechanisms.MECHANISMS`) read it, so a paper's theorem is cited
in one place.
"""

REFERENCES = {
    # single-machine mechanisms (dperm.mechanisms)
    "output": "Chaudhuri, Monteleoni & Sarwate (2011), Alg. 1 and Thm 1; Nie & Wang (2017), "
    "Thm 2 for non-differentiable Lipschitz losses",
    "objective": "Chaudhuri, Monteleoni & Sarwate (2011), Alg. 2 and Thm 2 (Cor. 4 for Huber), with "
    "the Jacobian ratio bounded by one factor (matrix determinant lemma, docs/design/gaussian_objective.md "
    "step 2); approximate minima perturbation, Iyengar et al. (2019), Alg. 1 and Thm 1",
    "gaussian_objective": "dperm's derivation (docs/design/gaussian_objective.md) after Redberg, "
    "Koskela & Wang (2023), objective perturbation's privacy profile for GLMs with Gaussian noise, "
    "for replace-one neighbours and the noise grid; Canonne, Kamath & Steinke (2020), Cor. 9; approximate "
    "minima perturbation, Iyengar et al. (2019), Alg. 1 and Thm 1",
    "gaussian_objective_004": "Rajkumar & Agarwal (2012), Alg. 4 and Thm 4.1; approximate minima "
    "perturbation, Iyengar et al. (2019), Alg. 1 and Thm 1",
    "multinomial_objective": "Chaudhuri, Monteleoni & Sarwate (2011), Alg. 2 and Thm 2 carried to the "
    "multinomial logistic loss of K classes: noise shift 2 sqrt(2) R, Jacobian term (K - 1) log(1 + R^2 / "
    "(K n alpha)) (docs/design/multinomial.md); approximate minima perturbation, Iyengar et al. (2019), "
    "Alg. 1 and Thm 1",
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
