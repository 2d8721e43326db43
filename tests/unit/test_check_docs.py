"""Every registered code is documented with its own anchor, and registration is strict."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import checks.catalog  # noqa: F401
import checks.engine  # noqa: F401
from checks.model import REGISTRY, CodeInfo, Registry, Severity

DOC = Path(__file__).resolve().parents[2] / "docs" / "checks.md"


def test_every_code_has_a_section() -> None:
    headings = set(re.findall(r"^### ([A-Z0-9_]+)\s*$", DOC.read_text(), re.M))
    missing = sorted(set(REGISTRY.codes) - headings)
    assert not missing, f"undocumented codes: {missing}"
    assert len(REGISTRY.codes) >= 50


def test_registry_refuses_duplicates_and_bad_codes() -> None:
    reg = Registry()
    reg.register("a", [CodeInfo("X_ONE", Severity.WARN, "x")])(lambda s, c: [])
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("b", [CodeInfo("X_ONE", Severity.WARN, "x")])(lambda s, c: [])
    with pytest.raises(ValueError, match="UPPER_SNAKE"):
        reg.register("c", [CodeInfo("lower_case", Severity.WARN, "x")])(lambda s, c: [])
