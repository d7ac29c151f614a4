"""hsched.sweep against `hsched sweep`: the same rows, byte for byte, in this
process, on thread and process pools, on a Dask LocalCluster and on Ray;
shards as --shard; restart, limits and errors as the command line's."""

import concurrent.futures
import multiprocessing
import pathlib
import pickle
import shutil
import subprocess

import pandas as pd
import pytest

import hsched
from conftest import require

SPECS = ["acceptance-fp", "desktop-media"]


def spec_path(repo, name):
    return repo / "scenarios" / "sweeps" / f"{name}.toml"


def run_cli(hsched_cli, spec, out, *args):
    """Runs `hsched sweep SPEC -o OUT ARGS -q`; returns (exit code, stderr)."""
    done = subprocess.run([hsched_cli, "sweep", str(spec), "-o", str(out), "-q", *args],
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stderr


@pytest.fixture(scope="module")
def cli_files(hsched_cli, repo, tmp_path_factory):
    """The command line's file for each shipped spec, whole and in shards
    1/3..3/3: {(name, shard): path}."""
    where = tmp_path_factory.mktemp("cli")
    files = {}
    for name in SPECS:
        for shard in (None, "1/3", "2/3", "3/3"):
            out = where / f"{name}-{(shard or 'all').replace('/', 'of')}.csv"
            rc, err = run_cli(hsched_cli, spec_path(repo, name), out, *(["--shard", shard] if shard else []))
            assert rc == 0, err
            files[(name, shard)] = out
    return files


def assert_same_as_cli(df, written, cli_file):
    """The file `out=` wrote is the command line's, byte for byte, and the
    DataFrame is what pandas reads from the command line's file."""
    assert written.read_bytes() == cli_file.read_bytes()
    pd.testing.assert_frame_equal(df, pd.read_csv(cli_file))


@pytest.mark.parametrize("name", SPECS)
def test_in_process_equals_cli(repo, cli_files, tmp_path, name):
    out = tmp_path / "sweep.csv"
    df = hsched.sweep(spec_path(repo, name), out=out)
    assert_same_as_cli(df, out, cli_files[(name, None)])
    assert list(df.columns) == hsched.sweep_spec(spec_path(repo, name)).header()
    assert df["index"].tolist() == list(range(len(df)))
    assert hsched.sweep_csv(str(spec_path(repo, name))) == cli_files[(name, None)].read_text()


@pytest.mark.parametrize("name", SPECS)
def test_thread_pool_equals_cli(repo, cli_files, tmp_path, name):
    out = tmp_path / "sweep.csv"
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        df = hsched.sweep(spec_path(repo, name), pool, out=out, batch=7)
    assert_same_as_cli(df, out, cli_files[(name, None)])


def test_process_pool_equals_cli(repo, cli_files, tmp_path):
    # spawn: the workers start from nothing but `import hsched` (no state
    # inherited from this process), as on another machine.
    out = tmp_path / "sweep.csv"
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        df = hsched.sweep(spec_path(repo, "desktop-media"), pool, out=out)
    assert_same_as_cli(df, out, cli_files[("desktop-media", None)])


@pytest.mark.parametrize("batch", [1, 4, 13, 1000])
def test_batch_size_changes_nothing(repo, cli_files, batch):
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        text = hsched.sweep_csv(spec_path(repo, "acceptance-fp"), pool, batch=batch)
    assert text == cli_files[("acceptance-fp", None)].read_text()
    text = hsched.sweep_csv(spec_path(repo, "acceptance-fp"), batch=batch)
    assert text == cli_files[("acceptance-fp", None)].read_text()


def test_spec_text_equals_spec_file(repo, cli_files):
    # The base scenario path in text is relative to base_dir.
    path = spec_path(repo, "desktop-media")
    text = hsched.sweep_csv(path.read_text(), base_dir=path.parent)
    assert text == cli_files[("desktop-media", None)].read_text()


@pytest.fixture(scope="module")
def dask_client():
    try:
        import distributed
    except ImportError as missing:
        require("dask.distributed (cargo xtask python-env installs it)", str(missing))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client


@pytest.mark.parametrize("name", SPECS)
def test_dask_local_cluster_equals_cli(repo, cli_files, dask_client, tmp_path, name):
    out = tmp_path / "sweep.csv"
    df = hsched.sweep(spec_path(repo, name), dask_client, out=out)
    assert_same_as_cli(df, out, cli_files[(name, None)])


@pytest.mark.parametrize("name", SPECS)
def test_dask_shards_equal_cli_shards_and_make_the_whole(repo, hsched_cli, cli_files, dask_client,
                                                         tmp_path, name):
    parts = []
    for k in (1, 2, 3):
        out = tmp_path / f"shard-{k}.csv"
        # "k/N" and (k, N) are the same shard.
        df = hsched.sweep(spec_path(repo, name), dask_client, shard=(k, 3) if k == 2 else f"{k}/3", out=out)
        assert_same_as_cli(df, out, cli_files[(name, f"{k}/3")])
        assert (df["index"] % 3 == k - 1).all()
        parts.append(df)
    union = pd.concat(parts).sort_values("index").reset_index(drop=True)
    pd.testing.assert_frame_equal(union, hsched.sweep(spec_path(repo, name)))
    # And the command line merges the shard files Python wrote into its own
    # whole file.
    merged = tmp_path / "merged.csv"
    rc, err = run_cli(hsched_cli, spec_path(repo, name), merged, "--merge",
                      *(str(tmp_path / f"shard-{k}.csv") for k in (1, 2, 3)))
    assert rc == 0, err
    assert merged.read_bytes() == cli_files[(name, None)].read_bytes()


def test_ray_equals_cli(repo, cli_files, tmp_path):
    try:
        import ray
    except ImportError as missing:
        require("ray (cargo xtask python-env installs it)", str(missing))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = tmp_path / "sweep.csv"
        df = hsched.sweep(spec_path(repo, "desktop-media"), hsched.RayExecutor(), out=out)
        assert_same_as_cli(df, out, cli_files[("desktop-media", None)])
        text = hsched.sweep_csv(spec_path(repo, "acceptance-fp"), hsched.RayExecutor(num_cpus=1),
                                shard="2/3")
        assert text == cli_files[("acceptance-fp", "2/3")].read_text()
    finally:
        ray.shutdown()


@pytest.mark.parametrize("shard", [None, "2/3"])
def test_limit_then_continue_equals_one_run(repo, hsched_cli, cli_files, tmp_path, shard):
    spec = spec_path(repo, "acceptance-fp")
    out = tmp_path / "sweep.csv"
    first = hsched.sweep(spec, shard=shard, out=out, limit=25)
    assert len(first) == 25
    # The command line continues the file Python started, and Python one
    # the command line started: both end as the one-go file.
    rc, err = run_cli(hsched_cli, spec, out, "--limit", "10", *(["--shard", shard] if shard else []))
    assert rc == 0, err
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        df = hsched.sweep(spec, pool, shard=shard, out=out)
    assert_same_as_cli(df, out, cli_files[("acceptance-fp", shard)])


def test_output_of_another_spec_is_refused(repo, cli_files, tmp_path):
    out = tmp_path / "sweep.csv"
    shutil.copy(cli_files[("acceptance-fp", None)], out)
    with pytest.raises(ValueError, match="written for another spec"):
        hsched.sweep(spec_path(repo, "desktop-media"), out=out)
    # A file of the whole sweep is not shard 2/3's.
    with pytest.raises(ValueError, match="not in shard 2/3"):
        hsched.sweep(spec_path(repo, "acceptance-fp"), shard="2/3", out=out)


BAD_SPEC = """\
seed = 1
metrics = ["schedulable"]

[grid]
u = { from = 0.5, to = 1.0, step = -0.05 }

[taskset]
tasks = 4
utilisation = "${u}"
period = { log_uniform = ["10ms", "100ms"] }
policy = "fp"
attach = { prio = "${task.rm}" }
"""


def test_bad_spec_raises_naming_file_line_and_key(hsched_cli, tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text(BAD_SPEC)
    rc, err = run_cli(hsched_cli, spec, tmp_path / "bad.csv")
    assert rc == 2
    with pytest.raises(hsched.SweepSpecError) as raised:
        hsched.sweep(spec)
    e = raised.value
    assert (e.file, e.line, e.column, e.key) == (str(spec), 5, 36, "grid.u.step")
    assert e.message == "expected a step > 0"
    assert str(e) in err
    assert isinstance(e, ValueError)
    # Text is named as `file=` says.
    with pytest.raises(hsched.SweepSpecError, match=r"^<sweep spec>:5:36: grid.u.step: "):
        hsched.sweep(BAD_SPEC)
    with pytest.raises(hsched.SweepSpecError, match="cannot read|No such file|not found"):
        hsched.sweep(tmp_path / "missing.toml")


FAILING_SPEC = """\
seed = 5
scenario = "desktop.toml"
metrics = ["global.jobs", "threads[video].deadline_misses"]

[grid]
prio = { values = [30, 40, 2000000, 50], set = "scheduler[1].at.prio" }
"""


@pytest.mark.parametrize("executor", ["none", "threads-batch-3", "spawned-processes"])
def test_failing_point_raises_naming_it_and_keeps_the_rows_before(repo, hsched_cli, tmp_path, executor):
    shutil.copy(repo / "scenarios" / "examples" / "desktop.toml", tmp_path / "desktop.toml")
    spec = tmp_path / "failing.toml"
    spec.write_text(FAILING_SPEC)
    cli_out = tmp_path / "cli.csv"
    rc, err = run_cli(hsched_cli, spec, cli_out)
    assert rc == 2
    out = tmp_path / "python.csv"
    if executor == "none":
        pool, batch = None, None
    elif executor == "threads-batch-3":
        pool, batch = concurrent.futures.ThreadPoolExecutor(max_workers=2), 3
    else:
        pool, batch = concurrent.futures.ProcessPoolExecutor(
            max_workers=2, mp_context=multiprocessing.get_context("spawn")), 1
    try:
        with pytest.raises(hsched.SweepPointError) as raised:
            hsched.sweep(spec, pool, out=out, batch=batch)
    finally:
        if pool is not None:
            pool.shutdown()
    e = raised.value
    assert e.index == 2
    assert e.point.startswith("point 2 (prio=2000000, seed ")
    assert "`prio` = 2000000 is out of range" in e.message
    assert str(e) in err
    # The rows before the failing point are in the file, as the command
    # line leaves them.
    assert out.read_bytes() == cli_out.read_bytes()


def test_point_errors_survive_pickling():
    # Workers in other processes send the error back pickled.
    spec = hsched.sweep_spec(BAD_SPEC.replace("-0.05", "0.25").replace('"fp"', '"no-such-policy"'))
    with pytest.raises(hsched.SweepPointError) as raised:
        spec.run_points([1, 0])
    e = pickle.loads(pickle.dumps(raised.value))
    assert type(e) is hsched.SweepPointError
    assert (e.index, e.rows) == (1, [])
    assert e.point == spec.describe(1)
    assert "no-such-policy" in e.message and str(e) == e.message


def test_bad_shard_and_arguments(repo):
    spec = spec_path(repo, "acceptance-fp")
    for bad in ("0/3", "4/3", "x"):
        with pytest.raises(ValueError, match="expected k/N with 1 <= k <= N"):
            hsched.sweep(spec, shard=bad)
    with pytest.raises(TypeError):
        hsched.sweep(spec, shard=[1, 3])
    with pytest.raises(ValueError, match="limit"):
        hsched.sweep(spec, limit=-1)
    with pytest.raises(ValueError, match="batch"):
        hsched.sweep(spec, batch=0)


def test_spec_object_matches_cli_scenario(repo, hsched_cli):
    spec = hsched.sweep_spec(spec_path(repo, "desktop-media"))
    assert spec.count() == 54 and spec.name == "desktop-media"
    shown = subprocess.run([hsched_cli, "sweep", str(spec_path(repo, "desktop-media")), "--scenario", "17"],
                           capture_output=True, text=True, check=True).stdout
    assert shown.endswith(spec.scenario(17))
    assert f"# {spec.describe(17)}\n" in shown
    with pytest.raises(IndexError):
        spec.describe(54)


def edf_acceptance(repo, policy, attach):
    """acceptance-fp's task sets at U = 0.6..0.95 under an EDF policy."""
    text = spec_path(repo, "acceptance-fp").read_text()
    text = text.replace("replicates = 20", "replicates = 4")
    text = text.replace("u = { from = 0.5, to = 1.0, step = 0.05 }", "u = { from = 0.6, to = 0.95, step = 0.05 }")
    text = text.replace('policy = "fp"', f'policy = "{policy}"')
    text = text.replace('attach = { prio = "${task.rm}" }', f"attach = {attach}")
    assert policy in text and "0.95" in text
    return text


def test_a_python_policy_sweeps_in_process_and_on_spawned_workers(repo):
    from hsched.examples.edf import Edf

    text = edf_acceptance(repo, "py-edf", '{ deadline = "${task.deadline}" }')
    here = hsched.sweep_csv(text)
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as pool:
        there = hsched.sweep_csv(text, executor=pool, policies=[Edf])
    assert here == there
    rows = hsched.sweep(text)
    # Liu & Layland: on one CPU, EDF meets every deadline at U <= 1.
    assert len(rows) == 8 * 4 and rows["schedulable"].all()
    builtin = hsched.sweep(edf_acceptance(repo, "edf", '{ period = "${task.period}" }'))
    assert (builtin["global.jobs"] == rows["global.jobs"]).all()
