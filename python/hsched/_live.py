"""Live runs: :func:`live` runs a scenario's hierarchy on this machine's
real CPUs, as ``hsched live`` does, and returns the run as a
:class:`LiveRun`, the same tables and outputs as a simulation's.

It goes through the command line's live pipeline (the extension module
calls it): the same refusals, the same agent, the same figures; the
policies registered from Python schedule real threads there as they do in
the simulator. See docs/python.md, "Live runs".
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any, List, Mapping, Optional, Union

from . import _hsched
from ._errors import LiveInterrupted, RunError, RunStoppedError, UncomposedWarning
from ._run import DurationLike, Run, ScenarioSource, _nanoseconds, load

__all__ = ["live", "live_unavailable", "LiveRun", "LiveInterrupted", "RunStoppedError"]

PathLike = Union[str, "os.PathLike[str]"]

# Run by the interpreter for the guardian and the workers (see its docstring).
_BOOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_live_boot.py")


def _process_command(role: str) -> List[str]:
    """The command that starts the guardian or a worker (``role``
    ``__guardian`` or ``__worker``): this interpreter, isolated, running
    ``_live_boot.py`` on this extension module."""
    if not sys.executable or not os.path.isfile(sys.executable):
        raise RunError(
            f"hsched.live starts its guardian and workers with this Python interpreter, "
            f"and sys.executable ({sys.executable!r}) is not one"
        )
    return [sys.executable, "-I", "-S", _BOOT, os.path.abspath(_hsched.__file__), role]


def live_unavailable() -> Optional[str]:
    """Why this process cannot run :func:`live`, or None if it can: the
    agent takes a real-time policy (``SCHED_FIFO``), which needs root (or
    CAP_SYS_NICE with a real-time limit)."""
    return _hsched.live_unavailable()


class LiveRun(Run):
    """A finished live run: a :class:`Run` (the same tables, ``to_json``,
    ``write_trace``, ``write_report``; its ``platform`` is ``live``, or
    ``live-scx`` under the sched_ext backend), with the simulation beside
    it when :func:`live` was asked to ``compare_sim``."""

    def __init__(
        self,
        inner: Any,
        scenario: Any,
        simulated: Optional[Run] = None,
        comparison: Optional[str] = None,
        stopped: Optional[str] = None,
    ) -> None:
        super().__init__(inner, scenario)
        #: The simulation of the same scenario (same seed) to the same end
        #: (``compare_sim=True``), else None.
        self.simulated = simulated
        #: The table ``hsched live --compare-sim`` prints: each thread's CPU
        #: share, wakeup latency and deadline misses, simulated and live.
        self.comparison = comparison
        #: Why the run ended before its horizon (then ``horizon`` is when).
        self.stopped = stopped

    @property
    def platform(self) -> str:
        """``live`` (the user-space agent) or ``live-scx`` (sched_ext)."""
        return self._inner.platform

    def __repr__(self) -> str:
        return f"<hsched.LiveRun of {self.scenario.name!r} on {self.platform}: horizon {self.horizon}, {self.events} events>"


def live(
    scenario: ScenarioSource,
    *,
    horizon: Optional[DurationLike] = None,
    backend: Optional[str] = None,
    allow_uncomposed: bool = False,
    trace: bool = True,
    compare_sim: bool = False,
    park: str = "soft",
    speculate: bool = False,
    partial: bool = False,
    attach: Optional[Mapping[str, int]] = None,
    agent_cpu: Optional[int] = None,
    keep_autogroup: bool = False,
    keep_commands: bool = False,
    socket: Optional[PathLike] = None,
) -> LiveRun:
    """Runs a scenario for real, as ``hsched live`` does: its hierarchy
    schedules one process per thread (its ``command``, an attached process,
    or else hsched's worker executing its ``program``) on this machine's
    highest-numbered ``[machine] cpus`` CPUs, from a real-time agent.
    Needs root: without, raises PermissionError before anything starts.

    ``scenario`` is anything :func:`load` takes; the policies registered
    from Python so far run as they do in :func:`simulate`. ``horizon``
    overrides the scenario's (nanoseconds, ``"2s"`` or a timedelta).
    ``backend`` is ``"agent"`` (the user-space agent, any Linux),
    ``"scx"`` (hsched's sched_ext scheduler) or None (sched_ext where this
    build and the kernel offer it). ``allow_uncomposed`` runs a hierarchy
    that does not compose, with a :class:`UncomposedWarning`; ``trace``
    records the timeline; ``compare_sim`` also simulates the scenario to
    the same end (``LiveRun.simulated``, ``LiveRun.comparison``). The rest
    are ``hsched live``'s options: ``park`` (``"soft"`` or ``"hard"``),
    ``speculate``, ``partial``, ``attach`` (thread name to the pid of an
    existing process, taken over and given back), ``agent_cpu``,
    ``keep_autogroup``, ``keep_commands``, ``socket`` (the control socket;
    default ``/run/hsched/hsched-PID.sock``).

    The run goes on without the GIL, on a thread of its own; a Python
    policy takes the GIL for each callback. Ctrl-C (from the main thread)
    stops it in order, every thread given back, and raises
    :class:`LiveInterrupted` (a KeyboardInterrupt) with what ran as
    ``.run``; a second Ctrl-C during that stop ends the process at once,
    as it ends ``hsched live`` (the guardian gives the threads back). A
    run the platform ends early raises :class:`RunStoppedError` with
    ``.run``. A scenario live cannot run (interrupt sources, protection
    domains, a program the worker cannot run) raises
    :class:`ScenarioError`, a hierarchy that does not compose
    :class:`AnalysisError`, as ``hsched live`` refuses them.

    Returns the :class:`LiveRun`.
    """
    if park not in ("soft", "hard"):
        raise ValueError(f"park: {park!r}: expected 'soft' or 'hard'")
    if attach is not None and not isinstance(attach, Mapping):
        raise TypeError(f"attach: expected a mapping of thread name to pid, not {type(attach).__name__}")
    why_not = live_unavailable()
    if why_not is not None:
        raise PermissionError(why_not)
    scn = load(scenario)
    inner, messages, beside, stop = _hsched.live(
        scn._inner,
        guardian=_process_command("__guardian"),
        worker=_process_command("__worker"),
        horizon_ns=_nanoseconds(horizon, "horizon"),
        backend=backend,
        allow_uncomposed=allow_uncomposed,
        trace=trace,
        compare_sim=compare_sim,
        park_hard=park == "hard",
        speculate=speculate,
        partial=partial,
        attach=[(str(name), int(pid)) for name, pid in (attach or {}).items()],
        agent_cpu=agent_cpu,
        keep_autogroup=keep_autogroup,
        keep_commands=keep_commands,
        socket=os.fspath(socket) if socket is not None else None,
    )
    for message in messages:
        warnings.warn(message, UncomposedWarning, stacklevel=2)
    simulated, comparison = (Run(beside[0], scn), beside[1]) if beside is not None else (None, None)
    run = LiveRun(inner, scn, simulated, comparison, stopped=stop[1] if stop is not None else None)
    if stop is None:
        return run
    kind, message, raised = stop
    if raised is not None and not isinstance(raised, KeyboardInterrupt):
        # Another handler's exception (an alarm, say): the run was stopped
        # for it in order; it goes on as it was raised.
        raise raised
    if kind == "signal":
        raise LiveInterrupted(message, run) from raised
    raise RunStoppedError(message, run)
