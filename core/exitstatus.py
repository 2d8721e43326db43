"""The one exit status of every ``stordoc`` command (documented once, here and in README).

============  ====  =================================================================
OK               0  done; the cluster (or the result) is fine
WARN             1  warnings: a WARN finding (``check``), a benchmark slower than its
                    baseline (``bench --compare``), an optional access missing (``doctor``)
CRIT             2  a CRIT finding (``check``, ``swift dispersion report``), a configured
                    access that fails (``doctor``)
UNREACHABLE      3  the cluster (its monitors, Swift, the lab) could not be reached
REFUSED          4  nothing was run: the runbook or benchmark refused (a lock held, the
                    cluster changed since the plan, a safety gate, a bad target)
FAILED           5  started and did not succeed: a step failed part-way (cleanup steps
                    ran, the audit says what was done), or the fix did not verify
USAGE           64  bad input: a malformed command, option or config (sysexits EX_USAGE);
                    also "not confirmed" (no ``--yes`` and no terminal to ask on)
NOPERM          77  a file stordoc needs cannot be read or written (EX_NOPERM)
INTERRUPTED    130  Ctrl-C, SIGTERM, SIGHUP or a closed stdout: stopped before the next
                    step, cleanup done
============  ====  =================================================================

``check`` keeps Nagios' scale (0..3) so monitoring can run it as a plugin.
"""

from __future__ import annotations

from enum import IntEnum

from checks.model import Verdict


class ExitStatus(IntEnum):
    OK = 0
    WARN = 1
    CRIT = 2
    UNREACHABLE = 3
    REFUSED = 4
    FAILED = 5
    USAGE = 64
    NOPERM = 77
    INTERRUPTED = 130

    @classmethod
    def of(cls, verdict: Verdict) -> ExitStatus:
        """A check's verdict as an exit status (the same number: Nagios' scale)."""
        return cls(int(verdict))
