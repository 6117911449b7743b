"""Package names loaded on first use (PEP 562), so that ``dperm COMMAND --help`` imports nothing heavy.

A package lists its public names and the module each comes from; importing the package
then costs nothing, and the first look-up of a name (or of a submodule not imported yet)
imports it and caches it in the package's namespace.
"""

from __future__ import annotations

import importlib


def lazy_attributes(package: str, public: dict[str, str], namespace: dict):
    """``(__getattr__, __dir__)`` for ``package`` whose ``public`` names live in other modules.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    public : dict
        Public name -> the module that defines it.
    namespace : dict
        The package's ``globals()``: a loaded name is stored there, so later look-ups
        skip ``__getattr__``.
    """

    def __getattr__(name):
        if name in public:
            value = getattr(importlib.import_module(public[name]), name)
        else:  # a submodule not imported yet
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        namespace[name] = value
        return value

    def __dir__():
        return sorted(public)

    return __getattr__, __dir__
