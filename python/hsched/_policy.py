"""Policies written in Python.

Subclass :class:`Policy`, implement the scheduler protocol's callbacks
(the names of the Rust trait ``hsched_core::Scheduler``), declare the
policy's name and parameters, and register it::

    @hsched.register
    class MyPolicy(hsched.Policy):
        name = "my-policy"
        ...

It then runs in the simulator through the same dispatcher as the built-in
policies: a scenario names it like any other policy. See
docs/writing-a-policy.md, "Writing a policy in Python".

Conventions: times and durations are integer nanoseconds; children, VPs,
CPUs, threads and timer keys are ints; parameter values are ``bool``,
``int`` (durations in ns) or ``str``.
"""

from __future__ import annotations

import builtins
import dataclasses
from typing import Any, ClassVar, Dict, Optional, Sequence, Type, TypeVar

from . import _hsched
from ._hsched import Cx, Dispatch, Msg, Reject, Sender, VpState

__all__ = [
    "Policy",
    "Param",
    "Dispatch",
    "Reply",
    "Reject",
    "Cx",
    "VpState",
    "Sender",
    "Msg",
    "register",
    "conformance",
    "registered_policies",
]

#: The largest ``max_children`` (no limit).
UNLIMITED = 2**32 - 1

_KINDS = ("bool", "int", "duration", "str")


@dataclasses.dataclass(frozen=True)
class Param:
    """The declaration of one parameter (Rust's ``ParamSpec``).

    ``kind`` is ``"bool"``, ``"int"`` (in ``min..=max``), ``"duration"``
    (at least ``min``; values are integer nanoseconds, a default may also
    be written as text such as ``"10ms"``) or ``"str"``. ``default=None``
    makes the parameter required. Build them with :meth:`Param.duration`,
    :meth:`Param.integer`, :meth:`Param.boolean` or :meth:`Param.text`.
    """

    name: builtins.str
    kind: builtins.str
    default: Any = None
    doc: builtins.str = ""
    min: Any = None
    max: Any = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"Param {self.name!r}: kind must be one of {', '.join(_KINDS)}, not {self.kind!r}")

    @classmethod
    def duration(cls, name: builtins.str, *, default: Any = None, min: Any = 0, doc: builtins.str = "") -> "Param":
        """A duration (ns, or text such as ``"5ms"`` for the default), at least ``min``."""
        return cls(name, "duration", default, doc, min, None)

    @classmethod
    def integer(
        cls,
        name: builtins.str,
        *,
        default: Optional[int] = None,
        min: Optional[int] = None,
        max: Optional[int] = None,
        doc: builtins.str = "",
    ) -> "Param":
        """An integer in ``min..=max`` (either bound may be left open)."""
        return cls(name, "int", default, doc, min, max)

    @classmethod
    def boolean(cls, name: builtins.str, *, default: Optional[bool] = None, doc: builtins.str = "") -> "Param":
        """A bool."""
        return cls(name, "bool", default, doc)

    @classmethod
    def text(cls, name: builtins.str, *, default: Optional[builtins.str] = None, doc: builtins.str = "") -> "Param":
        """A string."""
        return cls(name, "str", default, doc)


@dataclasses.dataclass(frozen=True)
class Reply:
    """The answer to a message: ``Reply.accept(**values)`` or ``Reply.refuse(reason)``.

    ``msg`` may also return ``None`` or a dict (accepted, with those
    values), or raise :class:`Reject` (refused).
    """

    ok: bool
    values: Dict[str, Any] = dataclasses.field(default_factory=dict)
    reason: str = ""

    @classmethod
    def accept(cls, **values: Any) -> "Reply":
        """Accepted, with ``values`` (bool, int or str each)."""
        return cls(True, dict(values))

    @classmethod
    def refuse(cls, reason: str) -> "Reply":
        """Refused, with the reason."""
        return cls(False, {}, reason)


class Policy:
    """Base class of a policy written in Python.

    Declare, as class attributes:

    - ``name``: the registered name scenarios use (not a built-in one);
    - ``summary`` (one line) and ``doc`` (defaults to the class docstring);
    - ``params`` and ``child_params``: lists of :class:`Param`, what an
      instance is built from and what each child attaches with;
    - ``max_parents`` (1) and ``max_children`` (no limit);
    - ``hls_rule``: optionally, the policy's row of HLS Table 1 for
      ``hsched check`` (``"ALL -> NULL+"``, as plugins declare it).

    An instance is made per scheduler in the hierarchy, as
    ``cls(params)`` with the resolved parameters (a dict: declared
    defaults filled in, durations in ns).

    Callbacks (each receives a :class:`Cx`, valid during that call only):
    ``register_vp``, ``unregister_vp``, ``vp_request``, ``vp_release`` and
    ``vp_grant`` are required; ``init``, ``deinit``, ``vp_revoke``,
    ``charge``, ``timer``, ``msg``, ``sync`` and ``check_invariants`` are
    optional, and one a class does not define is never called (it costs
    nothing). An exception in a callback, or an answer of the wrong type,
    ejects the instance: its threads go back to the default scheduler and
    the run log holds the traceback.
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    doc: ClassVar[str] = ""
    params: ClassVar[Sequence[Param]] = ()
    child_params: ClassVar[Sequence[Param]] = ()
    max_parents: ClassVar[int] = 1
    max_children: ClassVar[int] = UNLIMITED
    hls_rule: ClassVar[Optional[str]] = None

    def __init__(self, params: Dict[str, Any]) -> None:
        """Builds an instance from its resolved parameters."""

    # ----- required ------------------------------------------------------

    def register_vp(self, cx: Cx, child: int, params: Dict[str, Any]) -> None:
        """A child joins with ``params`` (already checked against
        ``child_params``); raise :class:`Reject` to refuse it. It starts idle."""
        raise NotImplementedError

    def unregister_vp(self, cx: Cx, child: int) -> None:
        """A child leaves; if it was running, its CPU is re-decided by a ``vp_grant``."""
        raise NotImplementedError

    def vp_request(self, cx: Cx, child: int) -> None:
        """A child wants a CPU: ask for CPUs (``cx.want_cpus``) or preempt (``cx.reschedule``)."""
        raise NotImplementedError

    def vp_release(self, cx: Cx, child: int) -> None:
        """A child no longer wants a CPU; if it was running, a ``vp_grant`` follows."""
        raise NotImplementedError

    def vp_grant(self, cx: Cx, vp: int, cpu: int) -> Dispatch:
        """The CPU ``cpu`` held on ``vp`` needs a decision: return a :class:`Dispatch`."""
        raise NotImplementedError

    # ----- optional ------------------------------------------------------

    def init(self, cx: Cx) -> None:
        """Called once, before anything else (may set timers)."""

    def deinit(self, cx: Cx) -> None:
        """Called once when the instance is destroyed in an orderly way."""

    def vp_revoke(self, cx: Cx, vp: int, cpu: int) -> None:
        """The parent took back the CPU held on ``vp``."""

    def charge(self, cx: Cx, child: int, ran: int) -> None:
        """``child`` ran for ``ran`` ns, ending now."""

    def timer(self, cx: Cx, key: int) -> None:
        """The one-shot timer ``key`` fired."""

    def msg(self, cx: Cx, sender: Sender, msg: Msg) -> Any:
        """A message; return ``None``, a dict or a :class:`Reply`, or raise :class:`Reject`."""
        raise Reject(f"{self.name} does not understand message `{msg.name}`")

    def sync(self, cx: Cx, event: Dict[str, Any]) -> None:
        """A child took, waits for or gave up a mutex, or an RPC began or ended."""

    def check_invariants(self) -> Optional[str]:
        """The policy's own checks, after every callback in checking runs:
        ``None`` if they hold, else what is broken (or raise)."""
        return None


_REQUIRED = ("register_vp", "unregister_vp", "vp_request", "vp_release", "vp_grant")
_OPTIONAL = ("init", "deinit", "vp_revoke", "charge", "timer", "msg", "sync", "check_invariants")

P = TypeVar("P", bound=Type[Policy])


def register(cls: P) -> P:
    """Registers the policy class ``cls`` under ``cls.name`` so that
    scenarios can name it; usable as a class decorator. Registering a name
    again replaces the class for instances built from then on. Returns
    ``cls``.

    Raises ``TypeError`` for a class that is not a :class:`Policy` or
    lacks a required callback, ``ValueError`` for a bad declaration (a
    built-in name, a malformed parameter or HLS rule).
    """
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise TypeError(f"hsched.register takes a subclass of hsched.Policy, not {cls!r}")
    name = cls.name
    if not isinstance(name, str) or not name:
        raise ValueError(f"{cls.__qualname__}: set the class attribute `name` to the policy's registered name")
    missing = [n for n in _REQUIRED if getattr(cls, n) is getattr(Policy, n)]
    if missing:
        raise TypeError(f"{cls.__qualname__} does not implement {', '.join(missing)}")
    overridden = [n for n in _OPTIONAL if getattr(cls, n) is not getattr(Policy, n)]
    doc = cls.doc or (cls.__doc__ or "").strip()
    summary = cls.summary or (doc.splitlines()[0] if doc else name)
    _hsched._register_policy(
        cls,
        name,
        summary,
        doc,
        list(cls.params),
        list(cls.child_params),
        int(cls.max_parents),
        int(cls.max_children),
        cls.hls_rule,
        overridden,
    )
    return cls


def registered_policies() -> Dict[str, Type[Policy]]:
    """The Python policies registered in this process: name -> class."""
    return {n: _hsched._registered_class(n) for n in _hsched._registered_names()}


def conformance(cls: Type[Policy]) -> None:
    """Runs hsched's conformance suite against the policy class ``cls``
    (registering it under its name first): as the root on 1 and 3 CPUs,
    in the middle of a hierarchy that changes while threads run, and with
    a 1ms tick, with its ``check_invariants`` after every callback.
    Returns ``None`` when it passes; raises ``AssertionError`` whose
    message starts with the failed check's tag (``[C1]`` .. ``[C7]``).
    """
    register(cls)
    _hsched._conformance(cls.name)
