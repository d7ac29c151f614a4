"""A round robin written in Python that several test files run: its
quantum is enforced by a timer per VP (not by a horizon), so that timers,
vp_state and reschedule are exercised. Each file subclasses it under its
own name."""

import collections

from hsched import Dispatch, Param, Policy


class RoundRobin(Policy):
    """Round robin with a quantum enforced by a timer per VP (not by a
    horizon), so that timers, vp_state and reschedule are exercised."""

    name = "py-rr"
    params = [Param.duration("quantum", default="5ms", min=1, doc="time slice")]

    def __init__(self, params):
        self.quantum = params["quantum"]
        self.queue = collections.deque()
        self.on_vp = {}

    def register_vp(self, cx, child, params):
        pass

    def unregister_vp(self, cx, child):
        self.vp_release(cx, child)

    def vp_request(self, cx, child):
        self.queue.append(child)
        cx.want_cpus(len(self.queue) + len(self.on_vp))

    def vp_release(self, cx, child):
        if child in self.queue:
            self.queue.remove(child)
        self.on_vp = {vp: c for vp, c in self.on_vp.items() if c != child}
        cx.want_cpus(len(self.queue) + len(self.on_vp))

    def vp_grant(self, cx, vp, cpu):
        ran = self.on_vp.pop(vp, None)
        if ran is not None:
            self.queue.append(ran)
        if not self.queue:
            cx.cancel_timer(vp)
            return Dispatch.release()
        self.on_vp[vp] = self.queue.popleft()
        cx.set_timer(vp, cx.now + self.quantum)
        return Dispatch.run(self.on_vp[vp])

    def vp_revoke(self, cx, vp, cpu):
        ran = self.on_vp.pop(vp, None)
        if ran is not None:
            self.queue.appendleft(ran)
        cx.cancel_timer(vp)

    def timer(self, cx, key):
        if cx.vp_state(key).held:
            cx.reschedule(key)

    def check_invariants(self):
        running = list(self.on_vp.values())
        if len(set(running)) != len(running):
            return f"a child runs on two VPs: {self.on_vp}"
        if set(running) & set(self.queue) or len(set(self.queue)) != len(self.queue):
            return f"queue {list(self.queue)} vs running {self.on_vp}"
        return None
