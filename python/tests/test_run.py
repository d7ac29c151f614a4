"""The run API against the command line: every example scenario's metrics,
trace, report, summary and analysis equal what `hsched` writes for it; the
DataFrames agree with those metrics; bad scenarios raise ScenarioError with
where and what; the simulation releases the GIL."""

import json
import pathlib
import re
import subprocess
import threading
import time

import pandas as pd
import pytest

import hsched

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "scenarios" / "examples").glob("*.toml"))
FIG3 = REPO / "scenarios" / "papers" / "hls-fig3.toml"

RES_UNDER_RR = """
horizon = "1s"
[[scheduler]]
name = "ts"
policy = "rr"

[[scheduler]]
name = "res"
policy = "res"
parent = "ts"

[[thread]]
name = "video"
parent = "res"
at = { amount = "5ms", period = "33ms" }
program = [ { periodic = { period = "33ms", run = "5ms" } } ]
"""


def cli(hsched_cli, *args, check=True):
    out = subprocess.run([hsched_cli, *map(str, args)], capture_output=True, text=True, cwd=REPO)
    if check:
        assert out.returncode == 0, out.stderr
    return out


def without_wall_clock(text):
    """The metrics JSON with its two wall-clock numbers (different in every
    run) blanked; everything else is compared byte for byte."""
    text = re.sub(r'"wall_ns": \d+', '"wall_ns": 0', text)
    return re.sub(r'"events_per_wall_second": [^,\n]+', '"events_per_wall_second": null', text)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_s_json_equals_the_cli_s(path, hsched_cli):
    expected = cli(hsched_cli, "sim", path, "--json", "-").stdout
    run = hsched.simulate(path)
    # The CLI prints the JSON (which ends in a newline) and one more newline.
    assert expected.endswith("}\n\n") and run.to_json().endswith("}\n")
    assert without_wall_clock(run.to_json() + "\n") == without_wall_clock(expected)


@pytest.mark.parametrize("path", EXAMPLES[:3], ids=[p.stem for p in EXAMPLES[:3]])
def test_horizon_and_seed_overrides_match_the_cli_s(path, hsched_cli):
    expected = cli(hsched_cli, "sim", path, "--json", "-", "--horizon", "700ms", "--seed", "7", "--check").stdout
    run = hsched.simulate(str(path), horizon="700ms", seed=7, check=True)
    assert without_wall_clock(run.to_json() + "\n") == without_wall_clock(expected)
    assert run.horizon_ns == 700_000_000 and run.seed == 7
    assert hsched.simulate(path, horizon=pd.Timedelta("700ms"), seed=7).to_json().count("700000000") >= 1


def test_text_and_dict_sources_run_as_the_file_does():
    path = REPO / "scenarios" / "examples" / "desktop.toml"
    from_file = hsched.simulate(path)
    text = path.read_text()
    from_text = hsched.simulate(hsched.load(text, name=str(path)))
    assert without_wall_clock(from_text.to_json()) == without_wall_clock(from_file.to_json())
    # A dict goes through TOML: the same scenario, the same run.
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later

    from_dict = hsched.simulate(tomllib.loads(text))
    assert without_wall_clock(from_dict.to_json()) == without_wall_clock(from_file.to_json())


def test_trace_report_and_summary_equal_the_cli_s(hsched_cli, tmp_path):
    path = REPO / "scenarios" / "examples" / "desktop.toml"
    cli_trace, cli_report = tmp_path / "cli.json", tmp_path / "cli.html"
    summary = cli(hsched_cli, "sim", path, "--trace", cli_trace, "--report", cli_report).stdout
    run = hsched.simulate(path)
    run.write_trace(tmp_path / "py.json")
    run.write_report(tmp_path / "py.html")
    assert (tmp_path / "py.json").read_bytes() == cli_trace.read_bytes()
    assert (tmp_path / "py.html").read_bytes() == cli_report.read_bytes()
    wall = re.compile(r"events (\d+) \([^)]*/s wall\)")
    assert wall.sub("", run.summary()) == wall.sub("", summary)
    assert "video" in run._repr_html_() and "<table" in run._repr_html_()
    run.write_jobs_csv(tmp_path / "py.csv")
    cli(hsched_cli, "sim", path, "--jobs-csv", tmp_path / "cli.csv")
    assert (tmp_path / "py.csv").read_bytes() == (tmp_path / "cli.csv").read_bytes()


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_the_tables_agree_with_the_metrics(path):
    run = hsched.simulate(path)
    metrics = run.metrics()
    threads = run.threads.set_index("name")
    for t in metrics["threads"]:
        row = threads.loc[t["name"]]
        assert row["cpu_time_ns"] == t["cpu_time_ns"]
        assert row["cpu_time"] == pd.Timedelta(t["cpu_time_ns"], unit="ns")
        assert row["deadline_misses"] == t["deadline_misses"]
        assert row["jobs"] == t["jobs"]
        assert row["context_switches"] == t["context_switches"]
    # The timeline's run segments add up to each thread's CPU time, and
    # every CPU's segments cover the horizon exactly.
    segments = run.segments
    ran = segments[segments["kind"] == "run"].groupby("thread_name", observed=True)["duration_ns"].sum()
    for t in metrics["threads"]:
        assert ran.get(t["name"], 0) == t["cpu_time_ns"], t["name"]
    for _, per_cpu in segments.groupby("cpu"):
        assert per_cpu["duration_ns"].sum() == metrics["global"]["horizon_ns"]
        assert (per_cpu["start_ns"].iloc[1:].to_numpy() == per_cpu["end_ns"].iloc[:-1].to_numpy()).all()
    assert run.cpus["busy_ns"].sum() == metrics["global"]["busy_ns"]
    assert run.cpus["idle_ns"].sum() == metrics["global"]["idle_ns"]
    # Jobs: the count and the misses per thread are the metrics'.
    jobs = run.jobs
    assert len(jobs) == metrics["global"]["jobs"]
    assert int(jobs["missed"].sum()) == metrics["global"]["deadline_misses"]
    per_thread = jobs.groupby("thread_name", observed=True).size()
    for t in metrics["threads"]:
        assert per_thread.get(t["name"], 0) == t["jobs"]
    finished = jobs.dropna(subset=["finish_ns"])
    assert (finished["response_ns"] == finished["finish_ns"] - finished["release_ns"]).all()
    schedulers = run.schedulers
    assert list(schedulers["name"]) == [s["name"] for s in metrics["schedulers"]]
    assert list(schedulers["received_ns"]) == [s["received_ns"] for s in metrics["schedulers"]]
    assert [e["text"] for e in metrics["log"]] == list(run.log["text"])


def test_a_run_is_the_same_every_time():
    a, b = hsched.simulate(EXAMPLES[0]), hsched.simulate(EXAMPLES[0])
    assert without_wall_clock(a.to_json()) == without_wall_clock(b.to_json())
    pd.testing.assert_frame_equal(a.segments, b.segments)


def test_without_a_timeline_the_segments_say_why():
    run = hsched.simulate(EXAMPLES[0], trace=False)
    with pytest.raises(ValueError, match="trace=True"):
        run.segments
    lost = hsched.simulate(EXAMPLES[0], trace_limit=10)
    assert lost.limits and not lost.has_timeline
    with pytest.raises(ValueError, match="trace-limit"):
        lost.write_trace("never-written.json")


def test_a_run_past_max_events_raises_with_what_it_covered():
    with pytest.raises(hsched.RunLimitError, match="max-events") as caught:
        hsched.simulate(EXAMPLES[0], max_events=50)
    assert caught.value.run.events == 50


# --- bad scenarios -------------------------------------------------------


TAIL = """
[[scheduler]]
name = "ts"
policy = "rr"

[[thread]]
name = "t"
program = [ { run = "1ms" } ]
"""


def write(tmp_path, text, name="bad.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_an_unknown_key_names_file_line_key_and_hint(tmp_path, hsched_cli):
    path = write(tmp_path, 'name = "x"\nhorizn = "1s"\n' + TAIL)
    with pytest.raises(hsched.ScenarioError) as caught:
        hsched.load(path)
    e = caught.value
    assert (e.file, e.line, e.column, e.key) == (str(path), 2, 1, "horizn")
    assert "horizon" in e.hint
    assert str(e) == f"{path}:2:1: horizn: {e.message}"
    assert isinstance(e, ValueError)
    # The command line says the same, as a diagnostic (wrapped, in a box).
    out = cli(hsched_cli, "sim", path, check=False)
    said = " ".join(out.stderr.replace("│", " ").split())
    assert out.returncode == 2 and f"{path}:2:1" in said
    assert " ".join(e.message.split()) in said and " ".join(e.hint.split()) in said


def test_a_value_of_the_wrong_type_names_its_key(tmp_path):
    path = write(tmp_path, 'horizon = "1s"\nseed = "forty"\n' + TAIL)
    with pytest.raises(hsched.ScenarioError) as caught:
        hsched.load(str(path))
    assert (caught.value.line, caught.value.key) == (2, "seed")
    assert "integer" in caught.value.message


def test_a_toml_syntax_error_names_its_line():
    with pytest.raises(hsched.ScenarioError) as caught:
        hsched.load('name = "x"\n[[thread]\nname = "t"\n', name="typo.toml")
    e = caught.value
    assert (e.file, e.line, e.key) == ("typo.toml", 2, "")


def test_a_missing_file_is_a_scenario_error(tmp_path):
    for missing in (tmp_path / "nope.toml", str(tmp_path / "nope.toml")):
        with pytest.raises(hsched.ScenarioError, match="cannot read the scenario") as caught:
            hsched.load(missing)
        assert caught.value.file == str(tmp_path / "nope.toml") and caught.value.line == 0


def test_a_dict_is_checked_like_a_file():
    ts = [{"name": "ts", "policy": "rr"}]
    scenario = {"horizon": "1s", "scheduler": ts, "thread": [{"name": "t", "program": [{"run": "1ms"}], "prio": 3}]}
    with pytest.raises(hsched.ScenarioError) as caught:
        hsched.load(scenario)
    e = caught.value
    assert e.file == "<dict>" and e.line > 0 and e.key == "thread[0].prio"
    assert hsched.load(scenario | {"thread": [{"name": "t", "program": [{"run": "1ms"}]}]}).threads == ["t"]
    with pytest.raises(hsched.ScenarioError) as caught:
        hsched.load({"horizon": None})
    assert caught.value.key == "horizon" and "None" in caught.value.message
    # A timedelta is a duration.
    loaded = hsched.load({"horizon": pd.Timedelta("250ms"), "scheduler": ts, "thread": [{"name": "t", "program": [{"run": "1ms"}]}]})
    assert loaded.horizon_ns == 250_000_000


def test_an_uncomposed_hierarchy_is_refused_as_the_cli_refuses_it(tmp_path, hsched_cli):
    path = write(tmp_path, RES_UNDER_RR, "res-under-rr.toml")
    out = cli(hsched_cli, "sim", path, check=False)
    assert out.returncode == 2
    with pytest.raises(hsched.AnalysisError) as caught:
        hsched.simulate(path)
    e = caught.value
    want = "`res` under `ts`: res needs ALL or RESU, but `ts` (rr) gives it NULL"
    assert any(want in error for error in e.errors) and want in out.stderr
    assert e.errors == hsched.check(path).errors and not e.analysis.composes
    with pytest.warns(hsched.UncomposedWarning, match="does not compose"):
        run = hsched.simulate(path, allow_uncomposed=True)
    expected = cli(hsched_cli, "sim", path, "--allow-uncomposed", "--json", "-").stdout
    assert without_wall_clock(run.to_json() + "\n") == without_wall_clock(expected)


# --- check, policies, repro ----------------------------------------------


def test_check_labels_figure_3_as_the_cli_does(hsched_cli):
    analysis = hsched.check(FIG3)
    text = cli(hsched_cli, "check", FIG3).stdout
    assert analysis.text == text
    assert analysis.svg() == cli(hsched_cli, "check", FIG3, "--svg").stdout
    assert analysis.to_json() + "\n" == cli(hsched_cli, "check", FIG3, "--json").stdout
    assert analysis.composes and analysis.errors == []
    edges = analysis.edges
    # Each edge's label is the one `check` prints on its child's line.
    for edge in edges.itertuples():
        lines = [ln for ln in text.splitlines() if re.match(rf"\s*(thread )?{re.escape(edge.child)}[: ]", ln)]
        assert any(f"⇐ {edge.label}" in ln for ln in lines), (edge.child, edge.label, lines)
    by_child = edges.set_index("child")
    assert by_child.loc["video", "label"] == "RESBH 5, 33"
    assert by_child.loc["word", "label"] == "PSBE 0.1, 22"
    assert by_child.loc["video", "share"] == "5/33"
    assert analysis._repr_svg_().startswith("<svg") or "<svg" in analysis._repr_svg_()


def test_policies_lists_the_cli_s(hsched_cli):
    frame = hsched.policies()
    listed = re.findall(r"^(\S+) — ", cli(hsched_cli, "policies").stdout, flags=re.M)
    # Policies registered from Python (by other tests) come last, as "python".
    python = frame["origin"] == "python"
    assert list(frame.loc[~python, "name"]) == listed
    assert sorted(frame.loc[python, "name"]) == sorted(hsched.registered_policies())
    rr = frame.set_index("name").loc["rr"]
    assert rr["origin"] == "built-in" and rr["runs"]
    assert "quantum" in [p["name"] for p in rr["params"]]


def test_repro_of_figure_3_passes_as_the_cli_s(hsched_cli):
    checks = hsched.repro("hls-fig3")
    assert checks.attrs["passed"] and checks.attrs["name"] == "hls-fig3"
    assert (checks["verdict"].isin(["pass", "differs"])).all() and len(checks) > 0
    printed = cli(hsched_cli, "repro", "hls-fig3").stdout
    for quantity in checks["quantity"]:
        assert quantity in printed
    assert "hls-fig3" in list(hsched.repro()["name"])
    with pytest.raises(KeyError, match="no reproduction named"):
        hsched.repro("no-such-entry")


# --- the GIL ----------------------------------------------------------------

BUSY = """
name = "busy"
horizon = "1s"
[machine]
cpus = 2
context_switch = "1us"
[[scheduler]]
name = "ts"
policy = "rr"
quantum = "20us"
[[thread]]
name = "spin"
count = 40
program = [ { loop = { body = [ { run = "30us" }, { sleep = "5us" } ] } } ]
"""


def test_simulate_releases_the_gil():
    scenario = hsched.load(BUSY)
    done = {}

    def work():
        run = hsched.simulate(scenario, trace=False)
        done["end"], done["run"] = time.perf_counter(), run

    ticks = []
    worker = threading.Thread(target=work)
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    run = done["run"]
    assert run.horizon_ns == 1_000_000_000 and run.events > 100_000
    # The simulation ran within its wall time before the worker's end. Had
    # it held the GIL, this thread could not have ticked in the middle of
    # that span at all.
    span = run.wall_ns / 1e9
    start, end = done["end"] - span, done["end"]
    inside = [t for t in ticks if start + 0.1 * span < t < end - 0.1 * span]
    assert span > 0.01 and len(inside) > 0


def test_simulate_is_reentrant_from_threads():
    scenario = hsched.load(BUSY)
    alone = hsched.simulate(scenario, trace=False)
    results = {}

    def work(k):
        results[k] = hsched.simulate(scenario, trace=False)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for k in range(3):
        assert without_wall_clock(results[k].to_json()) == without_wall_clock(alone.to_json())
