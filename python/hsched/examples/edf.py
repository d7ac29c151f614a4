"""Earliest deadline first, written in Python (the guide's example).

Each child attaches with a relative ``deadline``; every time it asks for a
CPU it starts a job due ``deadline`` later. Each decision runs the waiting
job due first (ties: the one that asked first) until its deadline; a job
still running then takes its next deadline (``deadline`` later) and
competes again. A job that arrives due before the latest running one
preempts it once every CPU is busy.
Importing this module registers the policy as ``py-edf``.
"""

from hsched import Dispatch, Param, Policy, register


@register
class Edf(Policy):
    name = "py-edf"
    summary = "preemptive earliest deadline first, written in Python"
    child_params = [
        Param.duration("deadline", default="10ms", min=1, doc="relative deadline of each job")
    ]
    hls_rule = "ALL -> NULL+"  # no admission control: it promises nothing

    def __init__(self, params):
        self.relative = {}  # child -> its relative deadline (ns)
        self.due = {}  # runnable child -> (absolute deadline, arrival number)
        self.on_vp = {}  # vp -> the child running there
        self.arrivals = 0

    def register_vp(self, cx, child, params):
        self.relative[child] = params["deadline"]

    def unregister_vp(self, cx, child):
        self.vp_release(cx, child)
        del self.relative[child]

    def vp_request(self, cx, child):
        self.arrivals += 1
        self.due[child] = (cx.now + self.relative[child], self.arrivals)
        cx.want_cpus(len(self.due))
        if self.on_vp and len(self.on_vp) == cx.vp_count:
            latest = max(self.on_vp, key=lambda vp: self.due[self.on_vp[vp]])
            if self.due[child] < self.due[self.on_vp[latest]]:
                cx.reschedule(latest)

    def vp_release(self, cx, child):
        self.due.pop(child, None)
        self.on_vp = {vp: c for vp, c in self.on_vp.items() if c != child}
        cx.want_cpus(len(self.due))

    def vp_grant(self, cx, vp, cpu):
        ran = self.on_vp.pop(vp, None)  # whoever ran here waits again,
        if ran in self.due:
            self.postpone(cx, ran)  # with its next deadline if it ran past this one
        running = set(self.on_vp.values())
        waiting = [c for c in self.due if c not in running]
        if not waiting:
            return Dispatch.release()
        child = min(waiting, key=self.due.get)
        self.postpone(cx, child)
        self.on_vp[vp] = child
        return Dispatch.run(child, until=self.due[child][0])

    def vp_revoke(self, cx, vp, cpu):
        self.on_vp.pop(vp, None)

    def postpone(self, cx, child):
        """A job past its deadline takes the next one, so no job keeps the CPU for ever."""
        deadline, arrival = self.due[child]
        if deadline <= cx.now:
            step = self.relative[child]
            self.due[child] = (deadline + ((cx.now - deadline) // step + 1) * step, arrival)
