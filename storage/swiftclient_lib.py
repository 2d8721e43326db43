"""python-swiftclient without ``pkg_resources``: the one door to it.

Debian's python3-swiftclient (4.1) imports ``pkg_resources`` in ``swiftclient.version``
only to read its own version string, and every ``swiftclient`` import goes through it:
about 0.4-0.8 s of CPU, in the middle of a check (the dispersion sample through the
proxy), more than all the rest of a check's imports. The same version comes from
``importlib.metadata`` (the same PKG-INFO), put in place as ``swiftclient.version`` before
the package is first imported; a swiftclient that no longer uses ``pkg_resources``
is unaffected (its version module is then simply not loaded).
"""

from __future__ import annotations

import sys
import types
from importlib import metadata
from types import ModuleType

_VERSION = "swiftclient.version"


def client() -> ModuleType:
    """``swiftclient.client`` (``Connection``, ``get_auth``, ``ClientException``)."""
    if _VERSION not in sys.modules and "swiftclient" not in sys.modules:
        mod = types.ModuleType(_VERSION)
        try:
            mod.version_string = metadata.version("python-swiftclient")  # type: ignore[attr-defined]
        except metadata.PackageNotFoundError:
            mod.version_string = "unknown"  # type: ignore[attr-defined]
        sys.modules.setdefault(_VERSION, mod)
    import swiftclient.client as sc

    client_module: ModuleType = sc
    return client_module
