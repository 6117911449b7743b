"""Puts this folder on ``sys.path`` (pytest's rootdir-relative conftest rule), so that the Flower tests
below it import the shared reply-noise checks (``_reply_noise``)."""
