"""What a fault scenario is: a name, the options it takes (each with its validation), and
``break_``/``heal`` that inject and undo the fault on a lab, each returning one line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from lab.layout import SWIFT_DEVICES, SWIFT_SERVERS

if TYPE_CHECKING:
    from lab.parts import LabParts as Lab


@dataclass(frozen=True)
class FaultArgs:
    """The options of ``lab break``/``lab heal``; a scenario reads the ones it declares."""

    osd: int = 1
    out: bool = False
    device: str = "d2"
    mode: str = "drift"
    server: str = "object"


DEFAULTS = FaultArgs()
OPTION_NAMES = tuple(f.name for f in fields(FaultArgs))

Check = Callable[["Lab", object, str], None]


def _no_check(lab: Lab, value: object, scenario: str) -> None:
    return None


@dataclass(frozen=True)
class Option:
    """One option of a scenario: its name (a field of FaultArgs), help, the values it
    takes (``choices``; a flag has none), and the check against the lab (ValueError)."""

    name: str
    help: str
    choices: tuple[str, ...] = ()
    check: Check = _no_check

    def validate(self, lab: Lab, args: FaultArgs, scenario: str) -> None:
        value = getattr(args, self.name)
        if self.choices and value not in self.choices:
            raise ValueError(self.choices_error())
        self.check(lab, value, scenario)

    def choices_error(self) -> str:
        if self.name == "device":
            return f"the lab's Swift devices are {', '.join(self.choices)}"
        if self.name == "server":
            return f"the lab's Swift servers are {', '.join(self.choices)}"
        return f"--{self.name} must be one of {', '.join(self.choices)}"


def _osd_of_kind(kind: str) -> Check:
    def check(lab: Lab, value: object, scenario: str) -> None:
        mine = [i for i, k in enumerate(lab.kinds) if k == kind]
        if value not in mine:
            raise ValueError(f"{scenario} needs a {kind} OSD; this lab's are "
                             f"{', '.join(f'osd.{i}' for i in mine) or 'none'} "
                             f"(layout {lab.layout})")
    return check


def _osd_of_lab(lab: Lab, value: object, scenario: str) -> None:
    if not (isinstance(value, int) and 0 <= value < lab.n_osds):
        raise ValueError(f"the lab has osd.0-osd.{lab.n_osds - 1}, not osd.{value}")


OSD_XFS = Option("osd", "OSD id", check=_osd_of_kind("xfs"))
OSD_RAW = Option("osd", "OSD id", check=_osd_of_kind("raw"))
OSD_ANY = Option("osd", "OSD id", check=_osd_of_lab)
OUT = Option("out", "also mark the OSD out")
DEVICE = Option("device", "Swift device", choices=SWIFT_DEVICES)
SERVER = Option("server", "Swift server", choices=SWIFT_SERVERS)
MODE = Option("mode", "builder/ring drift or too many replicas", choices=("drift", "replicas"))


class Scenario:
    """One fault. Subclasses set ``name``, ``summary``, ``options`` (what ``break_``
    reads) and ``heal_options`` (what ``heal`` reads), and implement both."""

    name: str = ""
    summary: str = ""
    options: tuple[Option, ...] = ()
    heal_options: tuple[Option, ...] = ()

    def break_(self, lab: Lab, args: FaultArgs) -> str:
        raise NotImplementedError

    def heal(self, lab: Lab, args: FaultArgs) -> str:
        raise NotImplementedError

    def run_break(self, lab: Lab, args: FaultArgs) -> str:
        """Validate the options this scenario reads (ValueError, nothing done), break."""
        for opt in self.options:
            opt.validate(lab, args, self.name)
        return self.break_(lab, args)

    def run_heal(self, lab: Lab, args: FaultArgs) -> str:
        for opt in self.heal_options:
            opt.validate(lab, args, self.name)
        return self.heal(lab, args)
