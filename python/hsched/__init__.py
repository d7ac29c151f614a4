"""hsched from Python: hierarchical, loadable CPU scheduling.

Load a scenario, simulate it and get the run as pandas DataFrames; label a
hierarchy with its guarantees; write a policy in Python and run it in the
simulator beside the built-in ones, or on this machine's CPUs with
:func:`live`; run a sweep on any ``concurrent.futures`` executor, Dask or
Ray. See docs/python.md.
"""

from . import _live, _policy, _run, _sweep
from ._hsched import __version__
from ._live import *  # noqa: F401,F403
from ._policy import *  # noqa: F401,F403
from ._run import *  # noqa: F401,F403
from ._sweep import *  # noqa: F401,F403

__all__ = ["__version__", *_run.__all__, *_live.__all__, *_policy.__all__, *_sweep.__all__]
