"""``import crc32c`` without the cost of the package's ``__init__``.

The crc32c package looks its own ``__version__`` up with ``importlib.metadata`` on import,
which imports email, zipfile, csv, datetime, calendar and more and scans the installed
distributions: as long as importing asyncio, for a string the broker never reads. Its
checksum functions live in one extension module, ``crc32c._crc32c``. ``install`` loads that
extension and registers the package under its own name with those functions, so every later
``import crc32c`` (records, segments, the stores) gets them at once; the package's other
names (``__version__``, ``CRC32CHash``, ``main``) run its real ``__init__`` on first use, so
nothing of its interface is lost. Whatever goes wrong here leaves the ordinary import.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from typing import Any

# The names crc32c/__init__.py takes from the extension.
_EXTENSION_NAMES = ("big_endian", "crc32", "crc32c", "hardware_based")


def install() -> None:
    if "crc32c" in sys.modules:
        return
    try:
        spec = importlib.util.find_spec("crc32c")  # finds the package; runs nothing
        if spec is None or spec.loader is None or not spec.submodule_search_locations:
            return
        found = importlib.machinery.PathFinder.find_spec(
            "crc32c._crc32c", list(spec.submodule_search_locations)
        )
        if found is None or found.loader is None:
            return
        extension = importlib.util.module_from_spec(found)
        found.loader.exec_module(extension)
        if not all(hasattr(extension, name) for name in _EXTENSION_NAMES):
            return
    except (ImportError, OSError):
        return
    package = importlib.util.module_from_spec(spec)
    for name in _EXTENSION_NAMES:
        setattr(package, name, getattr(extension, name))
    package._crc32c = extension  # type: ignore[attr-defined]
    loader = spec.loader

    def rest_of_package(name: str) -> Any:
        """The package's own ``__init__``, run into this module the first time a name it
        defines besides the extension's is asked for."""
        delattr(package, "__getattr__")
        loader.exec_module(package)
        return getattr(package, name)

    setattr(package, "__getattr__", rest_of_package)  # noqa: B010 (a module hook)
    sys.modules["crc32c._crc32c"] = extension
    sys.modules["crc32c"] = package
