"""``dperm show``: print a model file's privacy guarantee, checked against its recomputed calibration."""

from __future__ import annotations

from dperm.cli._common import expect_digest_option

__all__ = ["options", "run"]


def options(show) -> None:
    """Add ``dperm show``'s options to its parser and set its handler, :func:`run`."""
    show.add_argument("--model", required=True, metavar="FILE",
                      help="model file written by dperm train or dperm coordinate")
    expect_digest_option(show)
    show.set_defaults(func=run)


def run(args) -> int:
    """Run ``dperm show`` with the parsed ``args``; return the exit status."""
    from dperm.model_io import describe_model, load_model

    # a single-party or a multiparty model file; its calibration and digest are checked on load
    model, spec, document = load_model(args.model, expected_digest=args.expect_digest)
    print(describe_model(document, spec))
    if hasattr(model, "fit_intercept"):  # a multiparty file's description says "no intercept"
        print(_intercept_line(model))
    print(model.privacy_.summary())
    if document.get("schema_from_data"):
        print(f"WARNING: bounds/categories of {document['schema_from_data']} came from the data.")
    digest = document.get("digest")
    if digest is None:
        print("Digest: none (the file carries no digest, so nothing shows it is the file its "
              "publisher wrote).")
    else:
        check = ("matches --expect-digest" if args.expect_digest
                 else "compare it with the digest the publisher printed")
        print(f"Digest: {digest} ({check}).")
    return 0


def _intercept_line(model) -> str:
    """Whether ``model`` has an intercept: a public parameter of the fit, never its value."""
    if model.fit_intercept:
        return ("Intercept: fitted (fit_intercept=True); it is released with the coefficients, "
                "under the same guarantee.")
    return "Intercept: none (fit_intercept=False): predictions use w.x alone."
