"""The exceptions and warnings hsched raises (the extension module raises
them too, by name, with their fields as keyword arguments)."""

from __future__ import annotations

from typing import Any, List, Optional


class HschedError(Exception):
    """Base class of every error hsched raises."""


class ScenarioError(HschedError, ValueError):
    """A scenario that cannot be used: where and what.

    ``str(e)`` is the command line's one-line message,
    ``file:line:column: key: message``. ``line`` and ``column`` are 1-based,
    0 when the error is about the file as a whole (it cannot be read, a
    plugin it names cannot be loaded); ``key`` is the key path
    (``thread[2].program[1].run``), empty for a TOML syntax error.
    """

    def __init__(
        self,
        text: str,
        *,
        file: str = "",
        line: int = 0,
        column: int = 0,
        key: str = "",
        message: str = "",
        hint: Optional[str] = None,
    ) -> None:
        super().__init__(text)
        self.file = file
        self.line = line
        self.column = column
        self.key = key
        self.message = message or text
        self.hint = hint


class AnalysisError(HschedError, ValueError):
    """A hierarchy that does not compose (HLS guarantees), refused as
    ``hsched sim`` refuses it. ``errors`` lists why, one message each;
    ``analysis`` is the whole :class:`hsched.Analysis`."""

    def __init__(self, text: str, *, file: str = "", errors: Optional[List[str]] = None, analysis: Any = None) -> None:
        super().__init__(text)
        self.file = file
        self.errors = list(errors or [])
        self._analysis = analysis

    @property
    def analysis(self) -> Any:
        """The labelled hierarchy (an :class:`hsched.Analysis`)."""
        from ._run import Analysis

        return Analysis(self._analysis) if self._analysis is not None else None


class RunError(HschedError, RuntimeError):
    """A run that failed for a reason other than its input."""


class RunLimitError(RunError):
    """A run that reached its bound on events (``max_events``) and stopped
    short of its horizon. ``run`` is what it covered."""

    def __init__(self, text: str, run: Any) -> None:
        super().__init__(text)
        self.run = run


class UncomposedWarning(UserWarning):
    """A hierarchy that does not compose, run anyway
    (``allow_uncomposed=True``), or a change during the run that broke a
    promise."""


class LiveInterrupted(KeyboardInterrupt):
    """A live run stopped by Ctrl-C (or another signal handler that
    raised): the run was stopped in order, every thread given back, and
    this is raised in its place. ``run`` is what it covered (a
    :class:`hsched.LiveRun`, its horizon the moment it stopped); the
    exception the handler raised is ``__cause__``."""

    def __init__(self, text: str, run: Any) -> None:
        super().__init__(text)
        self.run = run


class RunStoppedError(RunError):
    """A live run that ended before its horizon for a reason of the
    platform's (its guardian ended, the kernel ejected the sched_ext
    scheduler); every thread was given back. ``run`` is what it covered."""

    def __init__(self, text: str, run: Any) -> None:
        super().__init__(text)
        self.run = run
