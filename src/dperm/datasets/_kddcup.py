"""KDD Cup 1999 network intrusion data, encoded with a public schema.

Data: Stolfo, S., Fan, W., Lee, W., Prodromidis, A. and Chan, P. (1999).
*KDD Cup 1999 Data*. UCI Machine Learning Repository.
https://doi.org/10.24432/C51C7N -- licensed CC BY 4.0. Also cite Dua, D. and
Graff, C. (2019). *UCI Machine Learning Repository*. Irvine, CA: University of
California, School of Information and Computer Science.
http://archive.ics.uci.edu/ml

The files are too large to embed in dperm: :func:`load_kddcup99` reads
``kddcup99/kddcup.data_10_percent.gz`` (training, 494,021 records) and
``kddcup99/corrected.gz`` (the labelled test set, 311,029 records) from a
directory given by ``data_home`` or the ``DPERM_DATA`` environment variable;
:func:`dperm.datasets.download` fetches them from the UCI archive. Both files
are checked against pinned SHA-256 digests before they are parsed.

The task is that of Chaudhuri, Monteleoni & Sarwate (2011), Sec. 7: predict
whether a connection is a denial-of-service (DoS) attack. The encoding follows
their Sec. 7.1 (one-hot the categorical attributes, scale the columns, bound the
row norm by 1), except that every constant is public (paper
note 9): the category lists are those of the published KDD99 schema and the
numeric ranges are the constants below, not column maxima of the private data.
"""

from __future__ import annotations

import functools
import numbers
import textwrap
import warnings
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch, check_random_state

from dperm.datasets._base import file_stamp, public_spec, require_data_home, verify_gzip_sha256
from dperm.exceptions import DataClippingWarning
from dperm.tabular import NumericColumn, TableCellError, TabularSpec, finite_numbers

_KDDCUP99 = "kddcup99"
_KDDCUP99_FILES = {"train": "kddcup.data_10_percent.gz", "test": "corrected.gz"}

#: SHA-256 of the gzipped files as published (shared data README, section 2). The first
#: equals the digest scikit-learn pins for ``fetch_kddcup99(percent10=True)``.
KDDCUP99_SHA256 = {
    "kddcup.data_10_percent.gz": "8045aca0d84e70e622d1148d7df782496f6333bf6eb979a1b0837c42a9fd9561",
    "corrected.gz": "74f0daef49b242badc09f2adbd457dea6a45b4f77177efbd11216d333651044b",
}

#: SHA-256 of the *uncompressed* content of the same files (computed from the verified
#: copies above: 74,889,749 and 47,251,540 bytes). A file whose gzip bytes differ but
#: whose content has this digest is accepted: no second public checksum of UCI's
#: ``corrected.gz`` bytes exists (shared data README), and the data are the content.
KDDCUP99_CONTENT_SHA256 = {
    "kddcup.data_10_percent.gz": "f8c8267ebcd9c0ed1fd7d6277fe5bfff8732e9b7db8e61b873542b2a534b6f9a",
    "corrected.gz": "547dfb9c0f0dc1d9944219ec79e851191faebaeb8acbfa1cd171c418397052a4",
}

#: The 41 attributes in file order (``kddcup.names``, UCI); the 42nd field is the label.
KDDCUP99_ATTRIBUTES = (
    "duration", "protocol_type", "service", "flag", "src_bytes", "dst_bytes", "land",
    "wrong_fragment", "urgent", "hot", "num_failed_logins", "logged_in",
    "num_compromised", "root_shell", "su_attempted", "num_root", "num_file_creations",
    "num_shells", "num_access_files", "num_outbound_cmds", "is_host_login",
    "is_guest_login", "count", "srv_count", "serror_rate", "srv_serror_rate",
    "rerror_rate", "srv_rerror_rate", "same_srv_rate", "diff_srv_rate",
    "srv_diff_host_rate", "dst_host_count", "dst_host_srv_count",
    "dst_host_same_srv_rate", "dst_host_diff_srv_rate", "dst_host_same_src_port_rate",
    "dst_host_srv_diff_host_rate", "dst_host_serror_rate", "dst_host_srv_serror_rate",
    "dst_host_rerror_rate", "dst_host_srv_rerror_rate",
)  # fmt: skip

# Public category lists: the value sets of the published KDD99 schema, as enumerated in
# the ARFF header of NSL-KDD (Tavallaee, Bagheri, Lu & Ghorbani 2009, KDDTrain+.arff),
# which lists every protocol, service and flag value of the KDD99 records. 84 values.
# The 10% training file uses 66 of the 70 services (not aol, harvest, http_2784,
# http_8001); corrected.gz has 2 records with service "icmp", which is not in the
# schema and encodes as an all-zero service block.
_KDDCUP99_CATEGORIES = {
    "protocol_type": ("icmp", "tcp", "udp"),
    "service": (
        "aol", "auth", "bgp", "courier", "csnet_ns", "ctf", "daytime", "discard",
        "domain", "domain_u", "echo", "eco_i", "ecr_i", "efs", "exec", "finger", "ftp",
        "ftp_data", "gopher", "harvest", "hostnames", "http", "http_2784", "http_443",
        "http_8001", "imap4", "IRC", "iso_tsap", "klogin", "kshell", "ldap", "link",
        "login", "mtp", "name", "netbios_dgm", "netbios_ns", "netbios_ssn", "netstat",
        "nnsp", "nntp", "ntp_u", "other", "pm_dump", "pop_2", "pop_3", "printer",
        "private", "red_i", "remote_job", "rje", "shell", "smtp", "sql_net", "ssh",
        "sunrpc", "supdup", "systat", "telnet", "tftp_u", "tim_i", "time", "urh_i",
        "urp_i", "uucp", "uucp_path", "vmnet", "whois", "X11", "Z39_50",
    ),
    "flag": ("OTH", "REJ", "RSTO", "RSTOS0", "RSTR", "S0", "S1", "S2", "S3", "SF", "SH"),
}  # fmt: skip

#: Public cap on the per-connection counts of content events (see below).
_CONTENT_COUNT_UPPER = 10_000.0

# Public (lower, upper, transform) of the 38 numeric attributes, fixed from the feature
# definitions (Lee & Stolfo 2000; the KDD Cup 1999 task description, UCI), not from
# the data. A value outside its range is clipped to it (per record, counted).
KDDCUP99_NUMERIC_BOUNDS = {
    # Length of the connection in seconds. The DARPA 1998 traffic behind KDD99 was
    # recorded and distributed as one tcpdump file per day, so we bound a connection
    # by one day, 86,400 s. Heavy-tailed (most connections last 0 s), hence log1p: a
    # per-record public transform, with the bounds transformed too.
    "duration": (0.0, 86_400.0, "log1p"),
    # Data bytes sent in each direction. No maximum is published; we take 2**32 - 1,
    # the range of a 32-bit unsigned counter and of TCP's 32-bit sequence-number space
    # from which a TCP connection's per-direction byte count is computed. (A 10 Mbit/s
    # Ethernet of the period moves ~1.1e11 bytes a day, so this is a modelling
    # choice, not a physical limit; on the log1p scale a 25x larger cap would change
    # the encoded values by about 13%.) Heavy-tailed (0 to hundreds of MB), hence
    # log1p: a 200-byte request maps to about 0.24.
    "src_bytes": (0.0, 2.0**32 - 1.0, "log1p"),
    "dst_bytes": (0.0, 2.0**32 - 1.0, "log1p"),
    # Declared "symbolic" in kddcup.names; 1 if the condition holds, 0 otherwise.
    "land": (0.0, 1.0, None),
    "logged_in": (0.0, 1.0, None),
    "is_host_login": (0.0, 1.0, None),
    "is_guest_login": (0.0, 1.0, None),
    # "1 if root shell is obtained; 0 otherwise" (task description): a flag.
    "root_shell": (0.0, 1.0, None),
    # Counts of events in one connection: wrong fragments, urgent packets, "hot"
    # indicators, failed logins, compromised conditions, root accesses, file creations,
    # shell prompts, access-control-file operations, outbound ftp commands.
    # su_attempted is described as a 0/1 flag but declared "continuous" in
    # kddcup.names and is known to count (values 2 occur), so it is a count here.
    # No maximum is published; we take the round cap _CONTENT_COUNT_UPPER = 10,000
    # events (about one every 9 s for a whole day, the duration bound) on the log1p
    # scale, where the cap matters little: 1 event maps to 0.075, 100 to 0.50.
    **{
        name: (0.0, _CONTENT_COUNT_UPPER, "log1p")
        for name in (
            "wrong_fragment", "urgent", "hot", "num_failed_logins", "num_compromised",
            "su_attempted", "num_root", "num_file_creations", "num_shells",
            "num_access_files", "num_outbound_cmds",
        )
    },  # fmt: skip
    # Connections to the same host / service in the past two seconds: the KDD99
    # feature extraction caps these counters at 511.
    "count": (0.0, 511.0, None),
    "srv_count": (0.0, 511.0, None),
    # Host-based counters over the preceding connections: capped at 255.
    "dst_host_count": (0.0, 255.0, None),
    "dst_host_srv_count": (0.0, 255.0, None),
    # The 15 "_rate" attributes are fractions of connections: in [0, 1] by definition.
    **{
        name: (0.0, 1.0, None)
        for name in KDDCUP99_ATTRIBUTES
        if name.endswith("_rate")
    },
}

#: Denial-of-service attack labels (y = 1). Training labels: the "dos" entries of the
#: KDD Cup 99 attack taxonomy ``training_attack_types`` (kdd.ics.uci.edu/databases/
#: kddcup99/training_attack_types). Test-only labels of corrected.gz: the attacks the
#: DARPA 1998/1999 evaluation classifies as denial of service (MIT Lincoln Laboratory;
#: Kendall 1999, "A database of computer attacks for the evaluation of intrusion
#: detection systems"). Every other label, including "normal", is y = 0.
KDDCUP99_DOS_LABELS = (
    "back", "land", "neptune", "pod", "smurf", "teardrop",  # training_attack_types
    "apache2", "mailbomb", "processtable", "udpstorm",  # new in corrected.gz
)  # fmt: skip

#: Class counts of the full ``kddcup.data`` (4,898,431 records, 23 labels), the
#: distribution published with the UCI KDD archive's KDD Cup 1999 data (the file itself
#: is not used). ``subset="stratified"`` draws training rows in these proportions.
KDDCUP99_FULL_CLASS_COUNTS = {
    "smurf": 2_807_886, "neptune": 1_072_017, "normal": 972_781, "satan": 15_892,
    "ipsweep": 12_481, "portsweep": 10_413, "nmap": 2_316, "back": 2_203,
    "warezclient": 1_020, "teardrop": 979, "pod": 264, "guess_passwd": 53,
    "buffer_overflow": 30, "land": 21, "warezmaster": 20, "imap": 12, "rootkit": 10,
    "loadmodule": 9, "ftp_write": 8, "multihop": 7, "phf": 4, "perl": 3, "spy": 2,
}  # fmt: skip
_KDDCUP99_FULL_N_ROWS = 4_898_431
assert sum(KDDCUP99_FULL_CLASS_COUNTS.values()) == _KDDCUP99_FULL_N_ROWS

#: Training-set size of Chaudhuri et al. (2011), Sec. 7.2 / Table 2.
_DEFAULT_SUBSET_SIZE = 70_000
_KDDCUP99_SUBSETS = (None, "random", "stratified")

KDDCUP99_ENCODINGS = {
    # name: row_norm_mode of the TabularSpec
    "unit_norm": "scale",
    "constant": "constant",
}

_ENCODING_DESCRIPTIONS = {
    "unit_norm": (
        "every row is scaled to L2 norm exactly 1 (x / ||x||; no row is zero, since "
        "protocol_type is always one of the three listed values), a per-record step"
    ),
    "constant": (
        "every row is divided by the worst-case constant sqrt(41) (41 attributes, each "
        "contributing at most 1 to the squared norm), so norms are at most 1: the "
        "plain encoding of Chaudhuri et al. (2011), Sec. 7.1, with public constants"
    ),
}

_N_FIELDS = len(KDDCUP99_ATTRIBUTES) + 1
#: A numeric attribute of the checksummed files that is not a finite number.
_CELL_REMEDY = "the published KDD Cup 99 files hold a finite number here; fetch the file again"


def kddcup99_spec(encoding: str = "unit_norm") -> TabularSpec:
    """The public :class:`~dperm.tabular.TabularSpec` behind :func:`load_kddcup99`.

    Parameters
    ----------
    encoding : {"unit_norm", "constant"}

    Returns
    -------
    spec : TabularSpec
        122 features: 38 numeric attributes scaled to [0, 1] with the public
        bounds of ``KDDCUP99_NUMERIC_BOUNDS`` (duration, the byte counts and the
        content counts through log1p) and protocol_type (3), service (70) and
        flag (11) one-hot encoded with the public KDD99 value lists.
    """
    if encoding not in KDDCUP99_ENCODINGS:
        raise ValueError(
            f"encoding must be one of {sorted(KDDCUP99_ENCODINGS)}; got {encoding!r}."
        )
    return public_spec(KDDCUP99_ATTRIBUTES, _KDDCUP99_CATEGORIES, KDDCUP99_NUMERIC_BOUNDS,
                       KDDCUP99_ENCODINGS[encoding])


def load_kddcup99(
    data_home=None,
    subset=None,
    n_samples=None,
    random_state=0,
    encoding: str = "unit_norm",
) -> Bunch:
    """Load KDD Cup 1999 for DoS detection, encoded for private ERM with public constants.

    The task of Chaudhuri et al. (2011), Sec. 7: y = 1 when a connection is a
    denial-of-service attack (labels ``KDDCUP99_DOS_LABELS``), else 0. The
    encoding follows their Sec. 7.1 (categorical attributes one-hot, columns
    scaled to [0, 1], row norm at most 1) with public bounds and category lists
    only (paper note 9); every step is per-record. The result
    has 122 features where the paper reports 119: the public schema lists all
    70 services, whereas the paper's one-hot blocks were presumably built from
    the values present in its data (the 10% file has 66 services).

    Parameters
    ----------
    data_home : str or os.PathLike, optional
        A directory containing ``kddcup99/kddcup.data_10_percent.gz`` and
        ``kddcup99/corrected.gz`` (the original UCI files). Default: the
        ``DPERM_DATA`` environment variable. The files are not embedded in
        dperm; get them with :func:`dperm.datasets.download`. They are checked
        against their published SHA-256 and parsed once per process.
    subset : {None, "random", "stratified"}, default=None
        Training rows. ``None``: the whole 10% file (494,021 rows, file order).
        ``"random"``: ``n_samples`` rows drawn uniformly without replacement.
        ``"stratified"``: ``n_samples`` rows whose label shares (23 labels)
        match the full 4.9M-record file's published class counts
        (``KDDCUP99_FULL_CLASS_COUNTS``); a class with fewer rows in the 10%
        file than its quota contributes all its rows and its shortfall is shared
        among the others in proportion (the ``DESCR`` says so). Subset rows
        come in random order. The test set is always the whole corrected file.
    n_samples : int, optional
        Size of a subset; default 70,000, the training size of Chaudhuri et
        al. (2011), Sec. 7.2. Only with ``subset``.
    random_state : int, RandomState instance or None, default=0
        Seeds the subset draw.
    encoding : {"unit_norm", "constant"}, default="unit_norm"
        The row step. ``"unit_norm"`` scales every row to norm exactly 1;
        ``"constant"`` divides every row by sqrt(41), the paper's plain encoding.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X_train`` (n x 122 float64), ``y_train`` (int64, 1 for DoS),
        ``X_test`` (311,029 x 122), ``y_test``, ``feature_names`` (list of str,
        e.g. ``"log1p(duration)"``, ``"service=http"``), ``spec`` (the public
        :class:`~dperm.tabular.TabularSpec` used), ``labels_train`` and
        ``labels_test`` (raw label strings without the trailing period, e.g.
        ``"smurf"``), ``train_rows`` (0-based row numbers of the training rows in
        the 10% file), ``subset``, ``encoding``, ``source`` (the directory read)
        and ``DESCR``.

    Raises
    ------
    FileNotFoundError
        If no directory holding the files was given (``data_home`` or
        ``DPERM_DATA``), or it lacks a file.
    ValueError
        If a file fails its checksum or is malformed, or an argument is invalid.

    Warns
    -----
    DataClippingWarning
        If a numeric value fell outside its public range (none does in the
        published files).

    References
    ----------
    .. [1] S. Stolfo, W. Fan, W. Lee, A. Prodromidis, P. Chan. KDD Cup 1999
       Data. UCI Machine Learning Repository (1999).
       https://doi.org/10.24432/C51C7N (CC BY 4.0).
    .. [2] K. Chaudhuri, C. Monteleoni, A. D. Sarwate. Differentially Private
       Empirical Risk Minimization. JMLR 12 (2011), Sec. 7 and 7.1.
    """
    spec = kddcup99_spec(encoding)
    n_samples = _check_subset_args(subset, n_samples)
    directory = require_data_home(
        data_home,
        _KDDCUP99,
        tuple(_KDDCUP99_FILES.values()),
        how_to_get=(
            "The files are too large to ship with dperm; get them with "
            "dperm.datasets.download('kddcup99', data_home)."
        ),
    )
    train = _load_file(directory, _KDDCUP99_FILES["train"])
    test = _load_file(directory, _KDDCUP99_FILES["test"])
    train_rows, allocation = _select_rows(train, subset, n_samples, random_state)
    X_train, labels_train = _encode_rows(spec, train, train_rows)
    X_test, labels_test = _encode_rows(spec, test, np.arange(test.inverse.shape[0]))
    return Bunch(
        X_train=X_train,
        y_train=dos_target(labels_train),
        X_test=X_test,
        y_test=dos_target(labels_test),
        feature_names=spec.feature_names(),
        spec=spec,
        labels_train=labels_train,
        labels_test=labels_test,
        train_rows=train_rows,
        subset=subset,
        encoding=encoding,
        source=str(directory),
        DESCR=_describe(encoding, str(directory), subset, len(train_rows), allocation),
    )


def dos_target(labels) -> np.ndarray:
    """``1`` for a denial-of-service label (``KDDCUP99_DOS_LABELS``), else ``0`` (int64).

    ``labels`` are raw KDD99 label strings, with or without the trailing period.
    """
    labels = np.char.rstrip(np.asarray(labels, dtype=str), ".")
    return np.isin(labels, KDDCUP99_DOS_LABELS).astype(np.int64)


# --------------------------------------------------------------------------------------
# Reading the files
# --------------------------------------------------------------------------------------


class _ParsedFile:
    """A KDD99 file parsed once: its distinct records plus the map from rows to them.

    KDD99 repeats records heavily (494,021 rows but 145,586 distinct ones in the 10%
    file), so the distinct records are parsed and encoded once and rows index them.
    ``columns`` (attribute -> array over distinct records), ``labels`` (str, no
    trailing period) and ``inverse`` (row -> distinct record) are shared between
    calls: do not modify them.
    """

    def __init__(self, columns: dict, labels: np.ndarray, inverse: np.ndarray, where: str):
        self.columns = columns
        self.labels = labels
        self.inverse = inverse
        self.where = where

    @property
    def n_rows(self) -> int:
        return self.inverse.shape[0]


def _load_file(directory: Path, filename: str) -> _ParsedFile:
    path = directory / filename
    return _parsed_kddcup_file(str(path), filename, file_stamp(path))


@functools.lru_cache(maxsize=4)
def _parsed_kddcup_file(path: str, filename: str, stamp) -> _ParsedFile:
    """Verified, parsed file; cached per process (``stamp`` keys out replaced files)."""
    del stamp  # only a cache key
    with open(path, "rb") as handle:
        data = handle.read()
    content = verify_gzip_sha256(
        data, KDDCUP99_SHA256[filename], KDDCUP99_CONTENT_SHA256[filename], path
    )
    return _parse_kddcup_text(content.decode("ascii"), path)


def _parse_kddcup_text(text: str, where: str) -> _ParsedFile:
    """Parse comma-separated KDD99 records (41 attributes, label with trailing period)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    distinct: dict[str, int] = {}
    inverse = np.fromiter(
        (distinct.setdefault(line, len(distinct)) for line in lines),
        dtype=np.intp,
        count=len(lines),
    )
    rows = [line.split(",") for line in distinct]
    for number, row in enumerate(rows):
        if len(row) != _N_FIELDS:
            first = int(np.argmax(inverse == number))
            raise ValueError(
                f"{where}: record {first} (line {first + 1}) has {len(row)} fields, "
                f"expected {_N_FIELDS}."
            )
    fields = list(zip(*rows)) if rows else [()] * _N_FIELDS
    columns = {}
    for name, values in zip(KDDCUP99_ATTRIBUTES, fields):
        if name in _KDDCUP99_CATEGORIES:
            columns[name] = np.array(values, dtype=str)
            continue
        try:
            columns[name] = finite_numbers(values, name, source=where, remedy=_CELL_REMEDY)
        except TableCellError as error:  # its row counts distinct records: name the file's record
            raise TableCellError(name, int(np.argmax(inverse == error.row)), error.problem,
                                 error.remedy, where) from None
    labels = np.char.rstrip(np.array(fields[-1], dtype=str), ".")
    return _ParsedFile(columns, labels, inverse, where)


# --------------------------------------------------------------------------------------
# Choosing and encoding rows
# --------------------------------------------------------------------------------------


def _check_subset_args(subset, n_samples):
    if subset not in _KDDCUP99_SUBSETS:
        raise ValueError(f"subset must be one of {_KDDCUP99_SUBSETS}; got {subset!r}.")
    if subset is None:
        if n_samples is not None:
            raise ValueError(
                "n_samples needs subset='random' or subset='stratified'; with "
                "subset=None the whole 10% file is returned."
            )
        return None
    if n_samples is None:
        return _DEFAULT_SUBSET_SIZE
    if isinstance(n_samples, (bool, np.bool_)) or not isinstance(n_samples, numbers.Integral) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}.")
    return int(n_samples)


def _select_rows(parsed: _ParsedFile, subset, n_samples, random_state):
    """Row numbers of the training rows, and the stratified allocation (or None)."""
    if subset is None:
        return np.arange(parsed.n_rows), None
    if n_samples > parsed.n_rows:
        raise ValueError(
            f"n_samples={n_samples} exceeds the {parsed.n_rows} rows of "
            f"{_KDDCUP99_FILES['train']}."
        )
    rng = check_random_state(random_state)
    if subset == "random":
        return rng.choice(parsed.n_rows, size=n_samples, replace=False), None
    classes, distinct_codes = np.unique(parsed.labels, return_inverse=True)
    row_codes = distinct_codes[parsed.inverse]
    available = np.bincount(row_codes, minlength=classes.shape[0])
    weights = np.array([KDDCUP99_FULL_CLASS_COUNTS.get(c, 0) for c in classes], dtype=float)
    quotas = _stratified_quotas(weights, available, n_samples)
    order = np.argsort(row_codes, kind="stable")
    starts = np.concatenate(([0], np.cumsum(available)))
    chosen = [
        rng.choice(order[starts[k] : starts[k + 1]], size=quotas[k], replace=False)
        for k in range(classes.shape[0])
    ]
    rows = rng.permutation(np.concatenate(chosen))
    allocation = {
        str(label): (int(weights[k]), int(quotas[k]), int(available[k]))
        for k, label in enumerate(classes)
    }
    return rows, allocation


def _stratified_quotas(weights: np.ndarray, available: np.ndarray, n_samples: int):
    """Integer quotas summing to ``n_samples``, in proportion to ``weights``.

    Class ``k`` gets at most ``available[k]`` rows. Water-filling: a class whose
    proportional share exceeds its rows gets all of them
    and the rest is shared among the other classes in proportion to their weights,
    until no share exceeds its class; the shares are then rounded by largest
    remainders (ties to the earlier class), which never exceeds a cap.
    """
    capped = np.zeros(weights.shape[0], dtype=bool)
    while True:
        free = ~capped & (weights > 0)
        remaining = n_samples - available[capped].sum()
        if weights[free].sum() == 0:
            raise ValueError(
                f"cannot draw {n_samples} rows in the published class proportions: "
                "the 10% file has too few rows of the classes with published counts."
            )
        ideal = np.zeros(weights.shape[0])
        ideal[free] = remaining * weights[free] / weights[free].sum()
        over = free & (ideal > available)
        if not over.any():
            break
        capped |= over
    quotas = np.where(capped, available, np.floor(ideal)).astype(np.int64)
    shortfall = n_samples - int(quotas.sum())
    fractions = np.where(free, ideal - np.floor(ideal), -1.0)
    quotas[np.argsort(-fractions, kind="stable")[:shortfall]] += 1
    return quotas


def _encode_rows(spec: TabularSpec, parsed: _ParsedFile, rows: np.ndarray):
    """Encoded features and raw labels of the given rows; distinct records encoded once."""
    needed, position = np.unique(parsed.inverse[rows], return_inverse=True)
    columns = {name: values[needed] for name, values in parsed.columns.items()}
    with warnings.catch_warnings():
        # The spec counts clipped values per distinct record; re-counted per row below.
        warnings.simplefilter("ignore", DataClippingWarning)
        X_distinct = spec.transform(columns)
    _warn_clipped(spec, columns, np.bincount(position, minlength=needed.shape[0]), parsed.where)
    return X_distinct[position], parsed.labels[needed][position]


def _warn_clipped(spec: TabularSpec, columns: dict, multiplicity: np.ndarray, where: str):
    counts = {}
    for column in spec.columns:
        if isinstance(column, NumericColumn):
            values = columns[column.name]
            outside = (values < column.lower) | (values > column.upper)
            if outside.any():
                counts[column.name] = int(multiplicity[outside].sum())
    if counts:
        parts = ", ".join(f"{count} in {name!r}" for name, count in counts.items())
        warnings.warn(
            f"{where}: {sum(counts.values())} value(s) in {int(multiplicity.sum())} rows "
            f"were outside the public bounds and were clipped to them ({parts}). "
            "Clipping is a per-record step that keeps the privacy guarantee.",
            DataClippingWarning,
            stacklevel=3,
        )


# --------------------------------------------------------------------------------------
# Description
# --------------------------------------------------------------------------------------


def _describe(encoding: str, source: str, subset, n_train: int, allocation) -> str:
    bounds = "\n".join(
        f"    {name}: [{lower:g}, {upper:g}]" + (f", {transform}" if transform else "")
        for name, (lower, upper, transform) in KDDCUP99_NUMERIC_BOUNDS.items()
    )
    task = (
        "Task (Chaudhuri, Monteleoni & Sarwate 2011, Sec. 7): y = 1 when the connection "
        f"is a denial-of-service attack, labels {', '.join(KDDCUP99_DOS_LABELS)} (the "
        '"dos" entries of the KDD99 training_attack_types file, plus the DoS attacks '
        "new in the test set per the DARPA 1998/1999 taxonomy); y = 0 for normal and "
        "every other attack. DoS is 79.3% of the full file (79.2% of the 10% file, "
        "73.9% of the test set); the paper's \"fraction of positive labels 0.20\" is "
        "the non-DoS share, so its +1 class was presumably \"not DoS\", a relabelling "
        "that leaves error rates unchanged."
    )
    read_from = (
        f"Read from: {source} (SHA-256 verified): training rows from "
        "kddcup.data_10_percent.gz (494,021 records), test rows from corrected.gz "
        "(311,029 labelled records)."
    )
    return f"""KDD Cup 1999 (DoS detection), encoded by dperm.datasets.load_kddcup99
======================================================================

Source: Stolfo, S., Fan, W., Lee, W., Prodromidis, A. and Chan, P. (1999). KDD Cup
1999 Data. UCI Machine Learning Repository. https://doi.org/10.24432/C51C7N
(CC BY 4.0). Cite also: Dua, D. and Graff, C. (2019). UCI Machine Learning Repository.
Irvine, CA: University of California, School of Information and Computer Science.
http://archive.ics.uci.edu/ml

{_fill(read_from)}

{_fill(task)}

{_describe_subset(subset, n_train, allocation)}

Encoding (Chaudhuri et al. 2011, Sec. 7.1, with public constants):
122 features = 38 numeric attributes scaled to [0, 1] with these public ranges
(values outside are clipped; log1p is applied after clipping, to the bounds too)
{bounds}
plus protocol_type (3), service (70) and flag (11) one-hot encoded with the value
lists of the public KDD99 schema (an unlisted value, such as service "icmp" in 2 test
records, encodes as zeros). The paper reports 119 features, a number its description
does not pin down: the same construction gives 122 with the public value lists and 118
with only the values present in the 10% file (66 of the 70 services). The paper
presumably one-hot encoded the values present in its own data, a data-dependent
choice the public schema avoids.
{_fill(f'Row step "{encoding}": {_ENCODING_DESCRIPTIONS[encoding]}.')}
"""


def _fill(text: str) -> str:
    return textwrap.fill(text, width=88, break_on_hyphens=False)


def _describe_subset(subset, n_train: int, allocation) -> str:
    if subset is None:
        return "Training rows: the whole 10% file, in file order."
    if subset == "random":
        return _fill(
            f"Training rows: {n_train:,} rows drawn uniformly without replacement from "
            "the 10% file (in random order)."
        )
    total = sum(weight for weight, _, _ in allocation.values())
    lines = [
        _fill(
            f"Training rows: {n_train:,} rows drawn from the 10% file so that the label "
            "shares match the published class counts of the full kddcup.data "
            f"({_KDDCUP99_FULL_N_ROWS:,} records); within a label rows are drawn "
            "uniformly without replacement (in random order)."
        ),
        f"    {'label':<16}{'full file':>12}{'share':>10}{'drawn':>9}{'available':>11}",
    ]
    short = []
    for label, (weight, quota, available) in sorted(
        allocation.items(), key=lambda item: (-item[1][0], item[0])
    ):
        share = weight / total if total else 0.0
        lines.append(f"    {label:<16}{weight:>12,}{share:>10.6f}{quota:>9,}{available:>11,}")
        if weight and quota == available and n_train * share > available:
            short.append(label)
    if short:
        lines.append(
            _fill(
                "The 10% file has fewer rows than the proportional quota for "
                f"{', '.join(short)}: all their rows were taken and the shortfall was "
                "shared among the other labels in proportion to their published "
                "counts, so those labels are under-represented and the others "
                "slightly over-represented."
            )
        )
    else:
        lines.append("Every label had enough rows for its proportional quota.")
    return "\n".join(lines)
