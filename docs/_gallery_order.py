"""The gallery's reading order: a new user's path from a first model to deployment.

sphinx-gallery instantiates :class:`GalleryOrder` with the examples' directory
and sorts each example by the key it returns (``within_subsection_order`` in
``conf.py``). Examples not listed here come last, by file name, so a new
example never breaks the build.
"""

ORDER = [
    # first models
    "plot_breast_cancer.py",
    "plot_digits_multiclass.py",
    "plot_diabetes_regression.py",
    "plot_pandas_pipeline.py",
    "plot_cli_end_to_end.py",
    # publishing: budget, tuning, evaluation
    "plot_budget_accountant.py",
    "plot_private_tuning.py",
    "plot_private_evaluation.py",
    # how much privacy costs
    "plot_privacy_accuracy.py",
    "plot_learning_curve.py",
    "plot_diffprivlib_comparison.py",
    # scale, several data holders, checking the guarantee
    "plot_dask.py",
    "plot_multiparty.py",
    "plot_multiparty_loopback.py",
    "plot_audit_histogram.py",
]


class GalleryOrder:
    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        name = str(filename).rsplit("/", 1)[-1]
        return (ORDER.index(name), name) if name in ORDER else (len(ORDER), name)

    def __repr__(self):
        return f"{type(self).__name__}()"
