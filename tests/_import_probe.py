"""Does importing dperm change another library? Run in a fresh interpreter (tests/test_architecture.py).

``python _import_probe.py list`` imports every dperm module and prints, as
JSON, the other libraries' modules that are then loaded. ``python
_import_probe.py compare MODULES_JSON`` imports those modules first,
fingerprints them (:func:`fingerprint`), imports every dperm module and prints
the attributes whose fingerprint changed: a replaced function or class
attribute, a function whose defaults were edited, a changed constant, a
changed logger level or handler list.
"""

from __future__ import annotations

import importlib
import json
import logging
import pkgutil
import sys
import warnings

#: Top-level packages checked: dperm's dependencies and optional extras.
LIBRARIES = ("flwr", "grpc", "numpy", "scipy", "sklearn", "joblib", "threadpoolctl", "tqdm", "dask",
             "distributed", "pandas", "pyarrow", "dp_accounting", "matplotlib")


def library_modules() -> list[str]:
    """The loaded modules of :data:`LIBRARIES`."""
    return sorted(name for name in sys.modules if name.split(".")[0] in LIBRARIES)


def describe(value):
    """What a patch would change: a function's identity, code and defaults; a constant's value; an object's identity."""
    function = getattr(value, "__func__", value)
    if callable(function) and hasattr(function, "__code__"):
        return ["function", id(function), id(function.__code__), repr(function.__defaults__),
                repr(function.__kwdefaults__)]
    if isinstance(value, (int, float, str, bool, bytes, type(None))):
        return ["value", repr(value)]
    return ["object", id(value)]


def fingerprint(module_names) -> dict:
    """``{"module.attr": describe(value)}`` for every module attribute and every attribute of a class
    the module defines (dunder names left out), plus each library's logger state."""
    state = {}
    for name in module_names:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr, value in list(vars(module).items()):
            if attr.startswith("__") and attr.endswith("__"):
                continue
            state[f"{name}.{attr}"] = describe(value)
            if isinstance(value, type) and getattr(value, "__module__", None) == name:
                for key, member in list(vars(value).items()):
                    if not (key.startswith("__") and key.endswith("__")):
                        state[f"{name}.{attr}.{key}"] = describe(member)
    for library in {name.split(".")[0] for name in module_names}:
        logger = logging.getLogger(library)
        state[f"logging:{library}"] = [logger.level, [id(h) for h in logger.handlers], logger.propagate]
    return state


def changed(before: dict, after: dict) -> list[str]:
    """Keys of ``before`` whose fingerprint differs in ``after`` (new attributes are not patches)."""
    return sorted(key for key in before if key in after and before[key] != after[key])


def import_every_dperm_module() -> dict:
    """Import every module of dperm; returns ``{module: error}`` for those that could not be imported."""
    import dperm

    failed = {}
    for info in pkgutil.walk_packages(dperm.__path__, "dperm."):
        try:
            importlib.import_module(info.name)
        except Exception as error:  # noqa: BLE001 - an optional dependency missing: reported, not fatal
            failed[info.name] = f"{type(error).__name__}: {error}"
    return failed


def main(argv) -> int:
    warnings.simplefilter("ignore")
    if argv[0] == "list":
        failed = import_every_dperm_module()
        print(json.dumps({"modules": library_modules(), "failed": failed}))
        return 0
    for name in json.loads(argv[1]):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module importable only after dperm set something up
            pass
    modules = library_modules()
    before = fingerprint(modules)
    failed = import_every_dperm_module()
    print(json.dumps({"changed": changed(before, fingerprint(modules)), "failed": failed}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
