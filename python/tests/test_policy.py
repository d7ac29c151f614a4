"""Policies written in Python: registration, the Cx and its effects, the
conformance suite over Python policies, ejection of a broken one, the
example EDF against the built-in `edf` (and SimSo when installed), and
the GIL when runs are driven from several threads."""

import inspect
import json
import threading

import pytest

from conftest import require
from round_robin import RoundRobin
import hsched
from hsched import Dispatch, Param, Policy, Reject, Reply, _hsched
from hsched.examples.edf import Edf


def simulate(toml, **kw):
    """The metrics JSON of a run, as a dict (the private helper until
    hsched.simulate lands)."""
    return json.loads(_hsched._simulate_json(toml, **kw))


def test_the_example_edf_conforms():
    hsched.conformance(Edf)


def test_a_timer_driven_round_robin_conforms():
    hsched.conformance(RoundRobin)
    assert hsched.registered_policies()["py-rr"] is RoundRobin


def test_a_policy_that_raises_fails_conformance_as_an_ejection():
    class Raises(Edf):
        name = "py-raises"

        def vp_grant(self, cx, vp, cpu):
            if cx.now > 50_000_000:
                raise ValueError("boom")
            return super().vp_grant(cx, vp, cpu)

    with pytest.raises(AssertionError) as err:
        hsched.conformance(Raises)
    text = str(err.value)
    assert text.startswith("[C4/C5] py-raises as root on 1 CPU(s)"), text
    assert "raised in vp_grant" in text and "ValueError: boom" in text


def test_a_nondeterministic_policy_fails_conformance_on_determinism():
    # A counter shared by all instances, across runs: the second run of the
    # same scenario and seed picks other children, so the timeline differs.
    class Drifting(RoundRobin):
        name = "py-drifting"
        picks = 0

        def vp_grant(self, cx, vp, cpu):
            ran = self.on_vp.pop(vp, None)
            if ran is not None:
                self.queue.append(ran)
            if not self.queue:
                return Dispatch.release()
            Drifting.picks += 1
            self.queue.rotate(-(Drifting.picks % len(self.queue)))
            self.on_vp[vp] = self.queue.popleft()
            cx.set_timer(vp, cx.now + self.quantum)
            return Dispatch.run(self.on_vp[vp])

    with pytest.raises(AssertionError) as err:
        hsched.conformance(Drifting)
    assert str(err.value).startswith("[C6] py-drifting as root on 1 CPU(s)"), str(err.value)


@pytest.mark.parametrize(
    "how, expected",
    [
        ("return", "broke its invariants: the queue is too long"),
        # The log entry is quoted in Rust's debug form, its newlines escaped.
        ("raise", "broke its invariants: Python policy `py-inconsistent` raised in check_invariants:\\nTraceback"),
    ],
)
def test_a_broken_invariant_fails_conformance(how, expected):
    class Inconsistent(RoundRobin):
        name = "py-inconsistent"

        def check_invariants(self):
            if len(self.queue) > 2:
                if how == "raise":
                    raise AssertionError("the queue is too long")
                return "the queue is too long"
            return None

    with pytest.raises(AssertionError) as err:
        hsched.conformance(Inconsistent)
    assert str(err.value).startswith("[C4/C5]")
    assert expected in str(err.value)


def test_a_constructor_that_refuses_or_raises_is_a_scenario_error():
    class Refuses(Edf):
        name = "py-refuses"

        def __init__(self, params):
            raise Reject("this machine is too small for me")

    class Crashes(Edf):
        name = "py-crashes"

        def __init__(self, params):
            raise KeyError("missing")

    hsched.register(Refuses)
    hsched.register(Crashes)
    with pytest.raises(ValueError, match="policy `py-refuses` refuses these parameters: this machine is too small for me"):
        simulate(HIERARCHY.format(policy="py-refuses"))
    with pytest.raises(ValueError, match="(?s)building an instance raised:\nTraceback.*line [0-9]+, in __init__.*KeyError: 'missing'"):
        simulate(HIERARCHY.format(policy="py-crashes"))


# A hierarchy with the Python policy `p` under an fp root, above the
# default round robin `bg`: three threads under `p`, each with 30ms of
# work, then exit.
HIERARCHY = """
name = "python-policy"
horizon = "200ms"
seed = 3
default = "bg"

[machine]
cpus = 1

[[scheduler]]
name = "root"
policy = "fp"

[[scheduler]]
name = "bg"
policy = "rr"
parent = "root"
at = {{ prio = 1 }}

[[scheduler]]
name = "p"
policy = "{policy}"
parent = "root"
at = {{ prio = 10 }}

[[thread]]
name = "w"
count = 3
parent = "p"
program = [ {{ run = "10ms" }}, {{ sleep = "2ms" }}, {{ run = "20ms" }} ]
"""


def test_an_ejected_policy_leaves_its_traceback_in_the_log_and_its_threads_finish_under_the_default():
    class FailsLater(Edf):
        name = "py-fails-later"

        def vp_grant(self, cx, vp, cpu):
            if cx.now >= 25_000_000:
                raise RuntimeError("out of ideas")  # the line the log must name
            return super().vp_grant(cx, vp, cpu)

    hsched.register(FailsLater)
    raise_line = next(
        i
        for i, line in enumerate(inspect.getsource(FailsLater).splitlines())
        if "out of ideas" in line
    ) + inspect.getsourcelines(FailsLater)[1]
    m = simulate(HIERARCHY.format(policy="py-fails-later"))
    ejections = [e for e in m["log"] if e["kind"] == "eject"]
    assert len(ejections) == 1, m["log"]
    text = ejections[0]["text"]
    assert text.startswith("ejected `p` (py-fails-later): panicked: Python policy `py-fails-later` raised in vp_grant")
    assert "Traceback (most recent call last)" in text
    assert f'line {raise_line}, in vp_grant' in text
    assert text.rstrip().endswith("RuntimeError: out of ideas")
    assert ejections[0]["at_ns"] >= 25_000_000
    for t in m["threads"]:
        assert t["scheduler"] == "bg", t
        assert t["cpu_time_ns"] == 30_000_000, t  # all its work, none lost or counted twice
    assert [s["alive"] for s in m["schedulers"] if s["name"] == "p"] == [False]


def test_the_same_run_without_the_failure_keeps_its_threads_under_the_policy():
    m = simulate(HIERARCHY.format(policy="py-edf"), check_invariants=True)
    assert not [e for e in m["log"] if e["kind"] == "eject"], m["log"]
    assert {t["scheduler"] for t in m["threads"]} == {"p"}
    assert all(t["cpu_time_ns"] == 30_000_000 for t in m["threads"])


@pytest.mark.parametrize(
    "answer, expected",
    [
        ("None", "answered vp_grant wrongly: returned None (NoneType), expected an hsched.Dispatch"),
        ("'run 0'", "answered vp_grant wrongly: returned 'run 0' (str)"),
        ("Dispatch.run(-1)", "raised in vp_grant"),
        ("Dispatch.run(99)", "ejected `p`"),
    ],
)
def test_a_bad_answer_ejects_the_policy(answer, expected):
    class BadAnswer(Edf):
        name = "py-bad-answer"

        def vp_grant(self, cx, vp, cpu):
            decided = super().vp_grant(cx, vp, cpu)
            # Once every thread has joined (an ejection at 0 would leave
            # later arrivals nowhere to go).
            return decided if cx.now < 5_000_000 else eval(answer)

    hsched.register(BadAnswer)
    m = simulate(HIERARCHY.format(policy="py-bad-answer"))
    ejections = [e["text"] for e in m["log"] if e["kind"] == "eject"]
    assert len(ejections) == 1 and expected in ejections[0], ejections
    assert all(t["scheduler"] == "bg" and t["cpu_time_ns"] == 30_000_000 for t in m["threads"])


def test_a_cx_used_after_its_callback_raises():
    kept = []

    class KeepsCx(Edf):
        name = "py-keeps-cx"

        def vp_request(self, cx, child):
            kept.append(cx)
            super().vp_request(cx, child)

        def vp_grant(self, cx, vp, cpu):
            if len(kept) > 3:
                kept[0].want_cpus(3)  # a Cx of an earlier callback
            return super().vp_grant(cx, vp, cpu)

    hsched.register(KeepsCx)
    m = simulate(HIERARCHY.format(policy="py-keeps-cx"))
    ejections = [e["text"] for e in m["log"] if e["kind"] == "eject"]
    assert len(ejections) == 1, m["log"]
    assert "RuntimeError: this Cx belonged to a `vp_request` call at 0ns that has returned" in ejections[0]
    # Outside any run too: every query and effect refuses.
    stale = kept[0]
    for use in (lambda: stale.now, lambda: stale.vp_state(0), lambda: stale.set_timer(1, 2), lambda: stale.reschedule(0)):
        with pytest.raises(RuntimeError, match="has returned"):
            use()


def test_register_vp_refuses_with_reject_and_msg_replies():
    class Picky(Edf):
        name = "py-picky"

        def register_vp(self, cx, child, params):
            if params["deadline"] < 2_000_000:
                raise Reject(f"a deadline of {params['deadline']}ns is too short")
            super().register_vp(cx, child, params)

        def msg(self, cx, sender, msg):
            if msg.name == "ping":
                return Reply.accept(child=sender.child, echo=msg.args["n"] + 1)
            if msg.name == "dict":
                return {"yes": True}
            raise Reject(f"no `{msg.name}` here")

    hsched.register(Picky)
    toml = HIERARCHY.format(policy="py-picky").replace(
        'program = [ { run = "10ms" }',
        'program = [ { msg = { to = "p", name = "ping", args = { n = 41 } } }, '
        '{ msg = { to = "p", name = "dict" } }, { msg = { to = "p", name = "other" } }, { run = "10ms" }',
    ) + """
[[script]]
at = "5ms"
move = { thread = "w.0", to = "bg" }

[[script]]
at = "6ms"
move = { thread = "w.0", to = "p", at = { deadline = "1ms" } }
"""
    m = simulate(toml)
    log = [(e["kind"], e["text"]) for e in m["log"]]
    assert not [t for k, t in log if k == "eject"], log
    replies = [t for k, t in log if k in ("reply", "refused")]
    assert any("ok: child=0, echo=42" in t for t in replies), replies
    assert any("ok: yes=true" in t for t in replies), replies
    assert any("refused: no `other` here" in t for t in replies), replies
    assert any("a deadline of 1000000ns is too short" in t for k, t in log if k == "refused"), log


def test_parameters_arrive_typed():
    built, joined = [], []

    class Typed(Edf):
        name = "py-typed"
        params = [
            Param.duration("slice", default="3ms"),
            Param.integer("weight", default=2, min=1, max=9),
            Param.boolean("strict", default=False),
            Param.text("label", default="x"),
        ]

        def __init__(self, params):
            built.append(dict(params))
            super().__init__(params)

        def register_vp(self, cx, child, params):
            joined.append(dict(params))
            super().register_vp(cx, child, params)

    hsched.register(Typed)
    toml = HIERARCHY.format(policy="py-typed").replace(
        'policy = "py-typed"', 'policy = "py-typed"\nweight = 7\nstrict = true\nlabel = "video"'
    ).replace('parent = "p"', 'parent = "p"\nat = { deadline = "4ms" }')
    simulate(toml)
    # Built twice: the parser builds one instance to check the parameters.
    assert built == [{"slice": 3_000_000, "weight": 7, "strict": True, "label": "video"}] * 2
    assert type(built[0]["strict"]) is bool and type(built[0]["slice"]) is int
    assert joined == [{"deadline": 4_000_000}] * 3
    with pytest.raises(ValueError, match=r"weight.*out of range"):
        simulate(toml.replace("weight = 7", "weight = 70"))


def test_registration_checks_the_declaration():
    class Builtin(Edf):
        name = "edf"

    with pytest.raises(ValueError, match="built in"):
        hsched.register(Builtin)

    class Incomplete(Policy):
        name = "py-incomplete"

        def register_vp(self, cx, child, params):
            pass

    with pytest.raises(TypeError, match="unregister_vp, vp_request, vp_release, vp_grant"):
        hsched.register(Incomplete)
    with pytest.raises(TypeError, match="subclass of hsched.Policy"):
        hsched.register(dict)

    def variant(**attrs):
        return type("Variant", (Edf,), {"name": "py-variant", **attrs})

    with pytest.raises(ValueError, match="hls_rule"):
        hsched.register(variant(hls_rule="ALL RESBH"))
    with pytest.raises(ValueError, match="declared twice"):
        hsched.register(variant(params=[Param.boolean("a", default=True), Param.boolean("a", default=True)]))
    with pytest.raises(ValueError, match="out of range"):
        hsched.register(variant(params=[Param.integer("n", default=0, min=1)]))
    with pytest.raises(TypeError, match="expected a duration"):
        hsched.register(variant(params=[Param.duration("d", default=1.5)]))
    with pytest.raises(ValueError, match="kind must be one of"):
        Param("x", "float")
    with pytest.raises(ValueError, match="without spaces"):
        hsched.register(type("Spaced", (Edf,), {"name": "my policy"}))
    assert "py-variant" not in hsched.registered_policies()


def test_registering_a_name_again_replaces_the_class_for_new_instances():
    class First(Edf):
        name = "py-replaced"

    class Second(Edf):
        name = "py-replaced"

        def register_vp(self, cx, child, params):
            raise Reject("the second class refuses everyone")

    hsched.register(First)
    assert not [e for e in simulate(HIERARCHY.format(policy="py-replaced"))["log"] if e["kind"] == "refused"]
    hsched.register(Second)
    assert hsched.registered_policies()["py-replaced"] is Second
    m = simulate(HIERARCHY.format(policy="py-replaced"))
    refusals = [e["text"] for e in m["log"] if e["kind"] == "refused"]
    assert len(refusals) == 3 and all("the second class refuses everyone" in r for r in refusals)
    assert {t["scheduler"] for t in m["threads"]} == {"bg"}


def test_the_declared_hls_rule_is_published():
    rules = dict(_hsched._hls_rules())
    assert rules["py-edf"] == "ALL -> NULL+"
    assert "py-rr" not in rules


def test_runs_are_deterministic_and_free_of_deadlock_from_several_threads():
    toml = HIERARCHY.format(policy="py-rr").replace("count = 3", "count = 5")
    serial = _hsched._simulate_json(toml)
    results = {}

    def run(key, detach):
        results[key] = _hsched._simulate_json(toml, detach=detach)

    threads = [threading.Thread(target=run, args=(i, i % 2 == 0)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a run driven from a thread did not finish"

    def strip(text):
        m = json.loads(text)
        m["global"].pop("wall_ns")
        m["global"].pop("events_per_wall_second")
        return m

    assert len(results) == 6
    assert all(strip(r) == strip(serial) for r in results.values())


def test_the_example_edf_schedules_the_simso_task_set_job_for_job_as_the_builtin_edf():
    # The 90% set of `hsched bench --simso` (8 tasks, no deadline ties):
    # every job's release and completion agree.
    sets = _hsched._bench_task_sets(2_000)
    assert sets[0] == "edf-u900-s1"
    jobs, misses, _, _, builtin = _hsched._bench_run(0, 2_000, "edf")
    py_jobs, py_misses, _, callbacks, python = _hsched._bench_run(0, 2_000, "py-edf")
    assert jobs > 500 and misses == 0
    assert (py_jobs, py_misses) == (jobs, misses)
    assert python == builtin
    assert callbacks > 2 * jobs  # a request, a grant and a release per job at least


def test_the_example_edf_agrees_with_simso_on_the_same_task_set(repo, tmp_path):
    # SimSo 0.8.5 as the repository's CI installs it (.ci/run).
    site = repo / "target" / "simso-py"
    if not (site / "simso").is_dir():
        require("SimSo 0.8.5 in target/simso-py (.ci/run installs it)", "not installed")
    simso = _hsched._bench_simso(str(site), str(tmp_path), 2_000)
    jobs, _, _, _, python = _hsched._bench_run(0, 2_000, "py-edf")
    assert simso[0][0] >= jobs > 500
    assert simso[0][2] == python


def test_the_bench_prints_both_policies_side_by_side(capsys):
    from hsched import bench

    assert bench.main(["--quick", "--rounds", "1", "--no-simso"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.strip().startswith("edf-u900-s1"))
    assert row.split()[-1] == "same"  # the 90% set: the same outcomes under both
    assert "py-edf jobs/s" in out and "edf/py" in out


def test_msg_parent_reaches_the_parent_and_sync_events_arrive():
    heard, events = [], []

    class Parent(Edf):
        name = "py-parent"

        def msg(self, cx, sender, msg):
            heard.append((sender.thread, sender.child, msg.name, dict(msg.args)))
            return None

    class Child(RoundRobin):
        name = "py-child"

        def vp_request(self, cx, child):
            super().vp_request(cx, child)
            cx.msg_parent(0, "hello", {"n": 3, "flag": True, "who": "child"})

        def sync(self, cx, event):
            events.append(dict(event))

    hsched.register(Parent)
    hsched.register(Child)
    toml = HIERARCHY.format(policy="py-parent") + """
[[scheduler]]
name = "c"
policy = "py-child"
parent = "p"

[[thread]]
name = "locker"
count = 2
parent = "c"
program = [ { lock = "m" }, { run = "3ms" }, { unlock = "m" } ]
"""
    m = simulate(toml, check_invariants=True)
    assert not [e for e in m["log"] if e["kind"] == "eject"], m["log"]
    assert heard and all(h == (None, 0, "hello", {"n": 3, "flag": True, "who": "child"}) for h in heard), heard
    kinds = [(e["kind"], e["thread"]) for e in events]
    assert kinds[:3] == [("acquired", 0), ("blocked", 1), ("released", 0)], events
    assert events[2]["to"] == 1 and events[2]["protocol"] == "none"
