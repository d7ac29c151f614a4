"""Scenarios, runs and analyses: :func:`load`, :func:`simulate`,
:func:`check`, :func:`policies`, :func:`repro`.

Everything goes through the same pipeline as the command line (the
extension module calls it), so a scenario loaded here is parsed, refused,
simulated and written exactly as ``hsched sim`` and ``hsched check`` do:
``Run.to_json()`` is ``hsched sim FILE --json -`` byte for byte. The tables
come from the extension module as typed columns and become pandas
DataFrames here: every time is an integer nanoseconds column (``*_ns``)
followed by the same time as a pandas Timedelta column (the name without
``_ns``).
"""

from __future__ import annotations

import datetime
import html
import json
import os
from collections.abc import Mapping
from functools import cached_property
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
import pandas as pd

from . import _hsched
from ._errors import (
    AnalysisError,
    HschedError,
    RunError,
    RunLimitError,
    ScenarioError,
    UncomposedWarning,
)

__all__ = [
    "load",
    "simulate",
    "check",
    "policies",
    "repro",
    "Scenario",
    "Run",
    "Analysis",
    "HschedError",
    "ScenarioError",
    "AnalysisError",
    "RunError",
    "RunLimitError",
    "UncomposedWarning",
]

PathLike = Union[str, "os.PathLike[str]"]
ScenarioSource = Union["Scenario", PathLike, Mapping]
DurationLike = Union[int, str, datetime.timedelta]


def _frame(columns: List[tuple]) -> pd.DataFrame:
    """A DataFrame from the extension module's typed columns; each ``*_ns``
    column is followed by its Timedelta twin."""
    data: Dict[str, Any] = {}
    for name, kind, raw, extra in columns:
        if kind == "i8":
            col = np.frombuffer(raw, dtype=np.int64)
        elif kind == "i8?":
            col = pd.arrays.IntegerArray(np.frombuffer(raw, dtype=np.int64), np.frombuffer(extra, dtype=np.bool_))
        elif kind == "f8":
            col = np.frombuffer(raw, dtype=np.float64)
        elif kind == "b1":
            col = np.frombuffer(raw, dtype=np.bool_)
        elif kind == "b1?":
            col = pd.arrays.BooleanArray(np.frombuffer(raw, dtype=np.bool_), np.frombuffer(extra, dtype=np.bool_))
        elif kind in ("str", "str?"):
            col = pd.array(raw, dtype=object)
        elif kind == "cat":
            col = pd.Categorical.from_codes(np.frombuffer(raw, dtype=np.int32), categories=extra)
        else:  # pragma: no cover - the extension module and this file change together
            raise RunError(f"column {name}: unknown encoding {kind}")
        data[name] = col
        if name.endswith("_ns"):
            data[name[: -len("_ns")]] = pd.to_timedelta(col, unit="ns")
    return pd.DataFrame(data)


def _nanoseconds(value: Optional[DurationLike], what: str) -> Optional[int]:
    """A duration as whole nanoseconds: an int is nanoseconds, a str is
    written as in a scenario (``"10ms"``, ``"1.5s"``), a timedelta (pandas'
    too) is taken exactly."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{what}: expected a duration, not a bool")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return _hsched.parse_duration(value)
    if isinstance(value, pd.Timedelta):
        return int(value.value)
    if isinstance(value, datetime.timedelta):
        return (value.days * 86_400 + value.seconds) * 1_000_000_000 + value.microseconds * 1_000
    raise TypeError(f"{what}: expected nanoseconds (int), a duration like '10ms' or a timedelta, not {type(value).__name__}")


def _looks_like_path(text: str) -> bool:
    """Whether a str names a file rather than holding TOML: an existing
    file, or one line with neither ``=`` nor ``[`` (which every scenario
    text has), so that a mistyped path says the file is missing."""
    if os.path.isfile(text):
        return True
    return "\n" not in text and "=" not in text and "[" not in text


class Scenario:
    """A scenario, parsed and checked (not yet analysed or run).

    Made by :func:`load`. ``text`` (or :meth:`to_toml`) is the TOML it was
    parsed from.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def name(self) -> str:
        """Its ``name`` key, else the file's stem."""
        return self._inner.name

    @property
    def description(self) -> str:
        return self._inner.description

    @property
    def file(self) -> str:
        """The name its messages give it: the path as given, or the name
        the text was loaded with (``<string>``, ``<dict>``)."""
        return self._inner.file

    @property
    def horizon(self) -> pd.Timedelta:
        return pd.Timedelta(self._inner.horizon_ns, unit="ns")

    @property
    def horizon_ns(self) -> int:
        return self._inner.horizon_ns

    @property
    def seed(self) -> int:
        return self._inner.seed

    @property
    def cpus(self) -> int:
        return self._inner.cpus

    @property
    def text(self) -> str:
        """The TOML it was parsed from."""
        return self._inner.text

    def to_toml(self) -> str:
        """The TOML it was parsed from (a dict's, as written for it)."""
        return self._inner.text

    @property
    def threads(self) -> List[str]:
        """The threads' names, in file order."""
        return self._inner.threads

    @property
    def schedulers(self) -> List[str]:
        """The scheduler instances' names at the start."""
        return [name for name, _ in self._inner.schedulers]

    @property
    def policies(self) -> Dict[str, str]:
        """Each scheduler instance's policy, by instance name."""
        return dict(self._inner.schedulers)

    @property
    def default_scheduler(self) -> str:
        return self._inner.default_scheduler

    def simulate(self, **options: Any) -> "Run":
        """:func:`simulate` of this scenario."""
        return simulate(self, **options)

    def check(self) -> "Analysis":
        """:func:`check` of this scenario."""
        return check(self)

    def __repr__(self) -> str:
        return (
            f"<hsched.Scenario {self.name!r} ({self.file}): {self.cpus} CPU(s), "
            f"{len(self.threads)} thread(s), {len(self.schedulers)} scheduler(s), "
            f"horizon {self.horizon}, seed {self.seed}>"
        )


def load(source: ScenarioSource, *, name: Optional[str] = None, plugins: Sequence[PathLike] = ()) -> Scenario:
    """Reads and parses a scenario with the command line's parser.

    ``source`` is a path (``str`` or ``pathlib.Path``; a ``.json`` file is
    an rt-app workload, imported), TOML text (a ``str`` that is not an
    existing file and holds ``=`` or ``[`` or a line break), a dict (written
    as TOML, then parsed; durations may be timedeltas) or a
    :class:`Scenario` (returned as is). ``name`` is the file name messages
    give text or a dict (default ``<string>``, ``<dict>``); ``plugins`` are
    policy plugin libraries, as ``--plugin``. Policies registered from
    Python so far are known by name.

    Returns the :class:`Scenario`; raises :class:`ScenarioError` (file,
    line, column, key, message, hint) for a scenario that cannot be used.
    """
    plugin_paths = [os.fspath(p) for p in plugins]
    if isinstance(source, Scenario):
        return source
    if isinstance(source, Mapping):
        label = name or "<dict>"
        text = _hsched.toml_of(dict(source), label)
        return Scenario(_hsched.load_text(text, label, plugin_paths))
    if isinstance(source, os.PathLike):
        return Scenario(_hsched.load_path(os.fspath(source), plugin_paths))
    if isinstance(source, str):
        if name is None and _looks_like_path(source):
            return Scenario(_hsched.load_path(source, plugin_paths))
        return Scenario(_hsched.load_text(source, name or "<string>", plugin_paths))
    raise TypeError(f"load() takes a path, TOML text, a dict or a Scenario, not {type(source).__name__}")


class Analysis:
    """A hierarchy labelled with its HLS guarantees, as ``hsched check``
    labels it. ``edges`` is one row per edge; ``text`` is what ``hsched
    check`` prints; in Jupyter it shows as the drawing of ``hsched check
    --svg``."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def composes(self) -> bool:
        """Whether no problem is an error."""
        return self._inner.composes

    @property
    def errors(self) -> List[str]:
        """Why the hierarchy does not compose, one message each (empty when
        it composes)."""
        return self._inner.errors

    @property
    def warnings(self) -> List[str]:
        return self._inner.warnings

    @property
    def notes(self) -> List[str]:
        """What was not analysed, and the assumptions that apply."""
        return self._inner.notes

    @property
    def verdict(self) -> str:
        return self._inner.verdict

    @property
    def text(self) -> str:
        """What ``hsched check FILE`` prints."""
        return self._inner.text()

    @cached_property
    def edges(self) -> pd.DataFrame:
        """One row per labelled edge, parents before children: ``parent``
        (None for the machine), ``child``, ``child_kind`` (scheduler or
        thread), ``vps``, ``label`` (as ``check`` writes it: ``RESBH 5, 33``,
        ``ALL ×2``), ``guarantee`` (per VP), ``kind``, ``share`` (per VP, an
        exact fraction as text), ``share_per_vp`` (float), ``refused``,
        ``why``, ``taken_as``."""
        columns = ["parent", "child", "child_kind", "vps", "label", "guarantee", "kind", "share", "share_per_vp", "refused", "why", "taken_as"]
        return pd.DataFrame(self._inner.edge_rows(), columns=columns)

    @cached_property
    def problems(self) -> pd.DataFrame:
        """One row per problem: ``severity`` (error or warning), ``node``,
        ``edge_from``, ``edge_to``, ``message``."""
        return pd.DataFrame(self._inner.problem_rows(), columns=["severity", "node", "edge_from", "edge_to", "message"])

    def to_json(self) -> str:
        """``hsched check --json`` (without its final newline)."""
        return self._inner.json()

    def svg(self) -> str:
        """``hsched check --svg``: the hierarchy drawn like HLS Fig. 3."""
        return self._inner.svg()

    def dot(self) -> str:
        """``hsched check --dot`` (Graphviz)."""
        return self._inner.dot()

    def _repr_svg_(self) -> str:
        return self.svg()

    def __repr__(self) -> str:
        return f"<hsched.Analysis: {self.verdict}>"


def check(scenario: ScenarioSource) -> Analysis:
    """Labels a scenario's hierarchy with its HLS guarantees, as ``hsched
    check`` does (a hierarchy that does not compose is returned, with
    ``composes`` false and its ``errors``; nothing is raised for it).
    ``scenario`` is anything :func:`load` takes. Returns the
    :class:`Analysis`."""
    return Analysis(_hsched.check(load(scenario)._inner))


class Run:
    """A finished simulation: its tables as DataFrames, and the command
    line's outputs (``to_json``, ``summary``, ``write_trace``,
    ``write_report``, ``write_jobs_csv``)."""

    def __init__(self, inner: Any, scenario: Scenario) -> None:
        self._inner = inner
        self.scenario = scenario

    def _table(self, name: str) -> pd.DataFrame:
        return _frame(self._inner.table(name))

    @cached_property
    def threads(self) -> pd.DataFrame:
        """One row per thread, as ``--json``'s ``threads``: ``id``, ``name``,
        ``scheduler`` (ended under), ``cpu_time_ns``, ``share``,
        ``guarantee``, ``guaranteed_share``, ``guaranteed_from_ns``,
        ``wakeups``, ``wakeup_p50_ns``/``p99``/``max``, ``jobs``,
        ``jobs_finished``, ``response_p50_ns``/``p99``/``max``,
        ``deadline_misses``, ``max_gap_ns``, ``context_switches``,
        ``migrations``, ``calls_made``, ``calls_ok``, ``call_errors``,
        ``arrival_ns``, ``exit_ns``."""
        return self._table("threads")

    @cached_property
    def schedulers(self) -> pd.DataFrame:
        """One row per scheduler instance: ``name``, ``policy``, ``alive``,
        ``received_ns``, ``share``, ``guarantee``, ``guaranteed_share``,
        ``guaranteed_from_ns``."""
        return self._table("schedulers")

    @cached_property
    def jobs(self) -> pd.DataFrame:
        """One row per job held: ``thread``, ``thread_name``, ``job``,
        ``release_ns``, ``start_ns``, ``finish_ns``, ``deadline_ns``,
        ``response_ns``, ``lateness_ns`` (missing while unfinished),
        ``missed``, ``admitted`` (missing for a job that asked nothing)."""
        return self._table("jobs")

    @cached_property
    def segments(self) -> pd.DataFrame:
        """The timeline: what each CPU did, ``cpu``, ``start_ns``,
        ``end_ns``, ``duration_ns``, ``kind`` (idle, switch, run,
        interrupt), ``thread``, ``thread_name``. Needs ``trace=True`` (the
        default); raises ValueError when the run kept no timeline."""
        return self._table("segments")

    @cached_property
    def marks(self) -> pd.DataFrame:
        """The timeline's point events: ``at_ns``, ``kind`` (wakeup,
        release, deadline_miss, eject), ``thread``, ``thread_name``, ``job``,
        ``scheduler``."""
        return self._table("marks")

    @cached_property
    def cpus(self) -> pd.DataFrame:
        """One row per CPU: ``busy_ns``, ``overhead_ns``, ``interrupt_ns``,
        ``idle_ns``, ``interrupts``."""
        return self._table("cpus")

    @cached_property
    def log(self) -> pd.DataFrame:
        """What happened beside the schedule (ejections, refusals, script
        steps, replies): ``at_ns``, ``kind``, ``text``."""
        return self._table("log")

    @property
    def horizon(self) -> pd.Timedelta:
        return pd.Timedelta(self._inner.horizon_ns, unit="ns")

    @property
    def horizon_ns(self) -> int:
        return self._inner.horizon_ns

    @property
    def seed(self) -> int:
        return self._inner.seed

    @property
    def events(self) -> int:
        return self._inner.events

    @property
    def decisions(self) -> int:
        return self._inner.decisions

    @property
    def wall_ns(self) -> int:
        """Wall-clock time the simulation took (not deterministic)."""
        return self._inner.wall_ns

    @property
    def limits(self) -> List[str]:
        """The bounds on what the run holds in memory that it reached."""
        return self._inner.limits

    @property
    def has_timeline(self) -> bool:
        return self._inner.has_timeline

    def to_json(self) -> str:
        """The metrics as JSON, exactly as ``hsched sim FILE --json -``
        prints them but for the last of its two final newlines (the text
        ends in one). ``global.wall_ns`` and ``events_per_wall_second`` are
        wall-clock times, different in every run."""
        return self._inner.to_json()

    def metrics(self) -> Dict[str, Any]:
        """The metrics of :meth:`to_json` as a dict."""
        return json.loads(self.to_json())

    def summary(self) -> str:
        """What ``hsched sim FILE`` prints."""
        return self._inner.summary()

    def write_trace(self, path: PathLike) -> None:
        """Writes the timeline as Chrome/Perfetto trace JSON, the file
        ``--trace PATH`` writes."""
        self._inner.write_trace(os.fspath(path))

    def report_html(self) -> str:
        """The single-file HTML report of ``--report``."""
        return self._inner.report_html()

    def write_report(self, path: PathLike) -> None:
        """Writes the HTML report, the file ``--report PATH`` writes."""
        page = self.report_html()
        with open(path, "wb") as out:
            out.write(page.encode("utf-8"))

    def write_jobs_csv(self, path: PathLike) -> None:
        """Writes one CSV row per job, the file ``--jobs-csv PATH`` writes."""
        self._inner.write_jobs_csv(os.fspath(path))

    def _repr_html_(self) -> str:
        m = self.metrics()["global"]
        head = (
            f"<b>{html.escape(m['scenario'])}</b>: {m['platform']}, {m['cpus']} CPU(s), "
            f"horizon {self.horizon}, seed {m['seed']}; {m['decisions']} decisions, "
            f"{m['events']} events; idle {m['idle_fraction'] or 0:.1%}; "
            f"deadline misses {m['deadline_misses']}/{m['jobs']}"
        )
        threads = self.threads[
            ["name", "scheduler", "cpu_time", "share", "guarantee", "guaranteed_share", "wakeup_p99", "deadline_misses", "jobs"]
        ]
        schedulers = self.schedulers[["name", "policy", "received", "share", "guarantee", "guaranteed_share", "alive"]]
        log = ""
        if len(self.log):
            log = f"<p>log: {len(self.log)} entr{'y' if len(self.log) == 1 else 'ies'} (<code>Run.log</code>)</p>"
        return (
            f"<div><p>{head}</p><p>threads</p>{threads.to_html(index=False, float_format='%.4f')}"
            f"<p>schedulers</p>{schedulers.to_html(index=False, float_format='%.4f')}{log}</div>"
        )

    def __repr__(self) -> str:
        return f"<hsched.Run of {self.scenario.name!r}: horizon {self.horizon}, seed {self.seed}, {self.events} events>"


def simulate(
    scenario: ScenarioSource,
    *,
    horizon: Optional[DurationLike] = None,
    seed: Optional[int] = None,
    check: bool = False,
    allow_uncomposed: bool = False,
    trace: bool = True,
    keep_jobs: int = 1_000_000,
    trace_limit: int = 2_000_000,
    max_events: int = 100_000_000,
) -> Run:
    """Simulates a scenario as ``hsched sim`` does.

    ``scenario`` is anything :func:`load` takes. ``horizon`` and ``seed``
    override the scenario's (a horizon is nanoseconds, ``"10s"`` or a
    timedelta); ``check`` checks every policy's invariants after every
    callback; a hierarchy that does not compose raises
    :class:`AnalysisError` unless ``allow_uncomposed`` (then a
    :class:`UncomposedWarning`). ``trace`` records the timeline
    (``Run.segments``, ``write_trace``, ``write_report``); ``keep_jobs``,
    ``trace_limit`` and ``max_events`` are the command line's bounds. A run
    that reaches ``max_events`` raises :class:`RunLimitError` with what it
    covered as ``.run``.

    The simulation runs without the GIL. Returns the :class:`Run`.
    """
    import warnings

    scn = load(scenario)
    inner, messages = _hsched.simulate(
        scn._inner,
        horizon_ns=_nanoseconds(horizon, "horizon"),
        seed=seed,
        check=check,
        allow_uncomposed=allow_uncomposed,
        trace=trace,
        keep_jobs=keep_jobs,
        trace_limit=trace_limit,
        max_events=max_events,
    )
    for message in messages:
        warnings.warn(message, UncomposedWarning, stacklevel=2)
    run = Run(inner, scn)
    if inner.cut is not None:
        raise RunLimitError(inner.cut, run)
    return run


def policies() -> pd.DataFrame:
    """One row per policy a scenario may name, as ``hsched policies`` lists
    them: ``name``, ``summary``, ``origin`` (built-in, python, literature),
    ``runs`` (False for the schedulers from the literature, which are
    analysed only), ``hls_rule`` (its row of HLS Table 1), ``params`` and
    ``child_params`` (lists of dicts: name, kind, default, required, doc),
    ``max_parents``, ``max_children`` (missing: any number), ``doc``."""
    frame = pd.DataFrame(_hsched.policy_rows())
    frame["max_children"] = frame["max_children"].astype("Int64")
    return frame


def repro(name: Optional[str] = None, *, timing: bool = False) -> pd.DataFrame:
    """Runs the paper reproduction ``name`` (``hsched repro NAME``) and
    returns its checks, one row each: ``quantity``, ``paper``,
    ``measured``, ``tolerance``, ``bound`` (within, at_most, at_least),
    ``verdict`` (pass, fail, differs, stale), ``passed``, ``why``,
    ``differs``. ``frame.attrs`` holds the entry (``name``, ``source``,
    ``claim``, ``scenarios``) and ``passed``: whether every verdict passes.

    Without a name, returns the entries (``hsched repro --list``): ``name``,
    ``source``, ``claim``, ``scenarios``. ``timing`` picks the timing
    entries (``--timing``; build with the release profile). Raises KeyError
    for an unknown name."""
    if name is None:
        return pd.DataFrame(_hsched.repro_entries(timing), columns=["name", "source", "claim", "scenarios"])
    entry, checks = _hsched.repro_run(name, timing)
    columns = ["quantity", "paper", "measured", "tolerance", "bound", "verdict", "passed", "why", "differs"]
    frame = pd.DataFrame(checks, columns=columns)
    frame.attrs.update(entry)
    frame.attrs["passed"] = bool(frame["passed"].all())
    return frame
