"""Sweeps on any executor: the points of a sweep spec (docs/sweep.md) run
as tasks of a ``concurrent.futures`` executor, a Dask ``distributed.Client``
or Ray, and come back as the rows ``hsched sweep`` writes.

The client parses the spec once (the Rust sweep crate, so its errors are
the command line's) and submits batches of point indexes to
:func:`run_sweep_points`, a module-level function that gets the spec's text
and the text of the base scenarios it names: a worker needs nothing but
``import hsched``, no shared file system. Each point's row depends on the
spec and its index alone, so the rows are the same however they are
batched, on whatever workers, in whatever order they finish; the client
puts them in index order and writes them through the command line's own
CSV writer.
"""

from __future__ import annotations

import concurrent.futures
import functools
import io
import os
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

import pandas as pd

from ._hsched import SweepPointError, SweepSpec, SweepSpecError, sweep_encode

__all__ = [
    "sweep",
    "sweep_csv",
    "sweep_spec",
    "run_sweep_points",
    "RayExecutor",
    "SweepSpec",
    "SweepSpecError",
    "SweepPointError",
]

SpecLike = Union[str, "os.PathLike[str]", SweepSpec]
ShardLike = Union[str, Tuple[int, int], None]

# With no executor, points run on this process's threads in chunks of this
# many (each chunk's rows reach the file before the next starts, and Ctrl-C
# is seen between chunks).
_IN_PROCESS_CHUNK = 1024
# With an executor and no `batch`, at most about this many tasks are made
# (a task per point for small sweeps, batches of points for large ones).
_MAX_TASKS = 1000


def sweep_spec(spec: SpecLike, *, base_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
               file: str = "<sweep spec>") -> SweepSpec:
    """Reads a sweep spec; returns it as a :class:`SweepSpec` (``count()``,
    ``header()``, ``describe(i)``, ``scenario(i)``: point ``i``'s scenario
    as ``hsched sweep --scenario i`` prints it).

    ``spec`` is a path (``str`` or ``os.PathLike``) to a spec file, or the
    spec's TOML text (a ``str`` with a newline or an ``=`` in it). A base
    scenario path in a file is relative to the file; in text, to
    ``base_dir`` (default: the current directory). ``file`` names text in
    messages, and its stem names generated scenarios, as a file's name
    does. Raises :class:`SweepSpecError` (``file``, ``line``, ``column``,
    ``key``, ``message``) for a spec the command line would refuse.
    """
    if isinstance(spec, SweepSpec):
        return spec
    if isinstance(spec, os.PathLike):
        return SweepSpec.load(os.fspath(spec))
    if not isinstance(spec, str):
        raise TypeError(f"spec: expected a path, spec text or SweepSpec, got {type(spec).__name__}")
    if "\n" in spec or "=" in spec:
        return SweepSpec.parse(spec, file, os.fspath(base_dir) if base_dir is not None else ".")
    return SweepSpec.load(spec)


def run_sweep_points(spec_text: str, spec_file: str,
                     scenarios: Sequence[Tuple[str, str, str]],
                     indexes: Sequence[int],
                     policies: Sequence[type] = ()) -> List[List[str]]:
    """The task an executor runs: points ``indexes`` of the spec given by
    its text, its file name (for messages) and its base scenarios
    (``SweepSpec.parts()``). Registers ``policies`` in this process first
    (once each). Returns each point's CSV cells, in the order of
    ``indexes``; raises :class:`SweepPointError` naming the first point
    that fails."""
    _register_policies(policies)
    spec = _spec_from_parts(spec_text, spec_file, tuple(tuple(s) for s in scenarios))
    # One thread: the executor's workers are the parallelism.
    return spec.run_points(list(indexes), 1)


@functools.lru_cache(maxsize=4)
def _spec_from_parts(text: str, file: str, scenarios: Tuple[Tuple[str, str, str], ...]) -> SweepSpec:
    # A worker gets many batches of one spec: parse it once.
    return SweepSpec.from_parts(text, file, list(scenarios))


# The policy classes registered by `policies=` in this process (a forked
# worker inherits it along with the registrations).
_registered_here: set = set()


def _register_policies(policies: Iterable[type]) -> None:
    policies = list(policies)
    if not policies:
        return
    import hsched

    register = getattr(hsched, "register", None)
    if register is None:
        raise RuntimeError("policies=: this build of hsched has no hsched.register (Python policies)")
    for cls in policies:
        key = (cls.__module__, cls.__qualname__)
        if key not in _registered_here:
            register(cls)
            _registered_here.add(key)


def _shard_text(shard: ShardLike) -> str:
    if shard is None:
        return "1/1"
    if isinstance(shard, str):
        return shard
    if isinstance(shard, tuple) and len(shard) == 2:
        k, n = shard
        return f"{k}/{n}"
    raise TypeError(f"shard: expected 'k/N' or (k, N), got {shard!r}")


def _rows(spec: SpecLike, executor: Optional[Any], shard: ShardLike,
          out: Optional[Union[str, "os.PathLike[str]"]], limit: Optional[int],
          batch: Optional[int], policies: Sequence[type],
          base_dir: Optional[Union[str, "os.PathLike[str]"]]) -> Tuple[List[str], List[List[str]]]:
    """The header and the rows (cells, in index order) of the sweep; with
    ``out``, continued from and written to that file."""
    parsed = sweep_spec(spec, base_dir=base_dir)
    shard_text = _shard_text(shard)
    indexes = parsed.shard_indexes(shard_text)
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit: expected an integer >= 0, got {limit!r}")
    if batch is not None and (not isinstance(batch, int) or batch < 1):
        raise ValueError(f"batch: expected an integer >= 1, got {batch!r}")
    out_path = os.fspath(out) if out is not None else None
    done_rows = parsed.open_output(out_path, shard_text) if out_path is not None else []
    done = {int(row[0]) for row in done_rows}
    todo = [i for i in indexes if i not in done]
    if limit is not None:
        todo = todo[:limit]

    new_rows: List[List[str]] = []

    def keep(rows: List[List[str]]) -> None:
        if out_path is not None:
            parsed.append_rows(out_path, rows)
        new_rows.extend(rows)

    policies = tuple(policies)
    # Here too: in-process runs and thread pools use this process's registry.
    _register_policies(policies)
    if executor is None:
        size = batch or _IN_PROCESS_CHUNK
        for start in range(0, len(todo), size):
            try:
                keep(parsed.run_points(todo[start:start + size]))
            except SweepPointError as failed:
                # The rows before the failing point stay in the file, as
                # the command line leaves them.
                keep(failed.rows)
                raise
    else:
        size = batch or max(1, -(-len(todo) // _MAX_TASKS))
        text, file, scenarios = parsed.parts()
        scenarios = tuple(tuple(s) for s in scenarios)
        futures = [
            executor.submit(run_sweep_points, text, file, scenarios, todo[start:start + size], policies)
            for start in range(0, len(todo), size)
        ]
        try:
            # In submission order: rows reach the file in index order, and
            # of several failing points the first is raised, as the command
            # line reports it.
            for future in futures:
                try:
                    rows = future.result()
                except SweepPointError as failed:
                    keep(failed.rows)
                    raise
                keep(rows)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    rows = done_rows + new_rows
    keys = [int(row[0]) for row in rows]
    if any(a > b for a, b in zip(keys, keys[1:])):
        # The file had a gap that this run filled.
        rows.sort(key=lambda row: int(row[0]))
        if out_path is not None:
            parsed.sort_output(out_path)
    return parsed.header(), rows


def sweep_csv(spec: SpecLike, executor: Optional[Any] = None, *, shard: ShardLike = None,
              out: Optional[Union[str, "os.PathLike[str]"]] = None, limit: Optional[int] = None,
              batch: Optional[int] = None, policies: Sequence[type] = (),
              base_dir: Optional[Union[str, "os.PathLike[str]"]] = None) -> str:
    """Runs a sweep as :func:`sweep` does; returns the CSV text that
    ``hsched sweep`` writes for it (header and rows, byte for byte the
    command line's file)."""
    header, rows = _rows(spec, executor, shard, out, limit, batch, policies, base_dir)
    return sweep_encode([header, *rows])


def sweep(spec: SpecLike, executor: Optional[Any] = None, *, shard: ShardLike = None,
          out: Optional[Union[str, "os.PathLike[str]"]] = None, limit: Optional[int] = None,
          batch: Optional[int] = None, policies: Sequence[type] = (),
          base_dir: Optional[Union[str, "os.PathLike[str]"]] = None) -> pd.DataFrame:
    """Runs the points of a sweep spec, as ``hsched sweep`` does; returns
    them as a DataFrame: the CSV's columns in its order, one row per point
    in index order, typed as ``pandas.read_csv`` reads the command line's
    file.

    - ``spec``: a spec file's path, spec text, or a :class:`SweepSpec`
      (see :func:`sweep_spec`; ``base_dir`` is for text).
    - ``executor``: ``None`` runs the points in this process, one thread
      per CPU. Otherwise anything with ``submit(fn, *args)`` returning a
      future with ``result()`` and ``cancel()``: a
      ``concurrent.futures.ThreadPoolExecutor`` or ``ProcessPoolExecutor``,
      a Dask ``distributed.Client``, a :class:`RayExecutor`.
    - ``shard``: ``"k/N"`` or ``(k, N)``: only the points whose index is
      ``k - 1`` modulo ``N``, as ``hsched sweep --shard k/N``.
    - ``out``: the CSV file, written through the command line's writer and
      equal to its file byte for byte; like the command line, an existing
      file of this spec and shard is checked and continued (its points are
      not run again; the DataFrame holds them too).
    - ``limit``: run at most this many points now (as ``--limit``).
    - ``batch``: points per task (default: one task per point, up to about
      1000 tasks); it changes nothing in the result.
    - ``policies``: Python policy classes to register (``hsched.register``)
      in each worker before its points run; classes registered in this
      process are used by in-process runs anyway.

    Raises :class:`SweepSpecError` for a bad spec (file, line, key), and
    :class:`SweepPointError` for a point that fails (the first in index
    order; ``index``, ``point``, ``message``).
    """
    text = sweep_csv(spec, executor, shard=shard, out=out, limit=limit, batch=batch,
                     policies=policies, base_dir=base_dir)
    return pd.read_csv(io.StringIO(text))


class RayExecutor(concurrent.futures.Executor):
    """A ``concurrent.futures.Executor`` over Ray tasks (Ray has no
    executor of its own): ``submit(fn, *args)`` runs ``ray.remote(fn)``
    with ``options`` (e.g. ``num_cpus=1``) and returns the task's
    ``ObjectRef.future()``. Call ``ray.init(...)`` first to choose the
    cluster, or Ray starts a local one.
    """

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._remotes: dict = {}

    def submit(self, fn, /, *args, **kwargs) -> concurrent.futures.Future:  # type: ignore[override]
        """Runs ``fn(*args, **kwargs)`` as a Ray task; returns its future."""
        import ray

        remote = self._remotes.get(fn)
        if remote is None:
            remote = ray.remote(fn)
            if self._options:
                remote = remote.options(**self._options)
            self._remotes[fn] = remote
        return remote.remote(*args, **kwargs).future()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to release: the Ray cluster outlives the executor
        (``ray.shutdown()`` stops a local one)."""
