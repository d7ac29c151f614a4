"""examples/notebooks/tour.ipynb runs from top to bottom in a fresh kernel
(nbclient), and what it shows holds: the checks appended below run in the
same kernel after the notebook's own cells."""

import nbformat
import pytest

from conftest import require

CHECKS = '''
# The desktop run: every thread is there and the CPU's time adds up.
assert sorted(run.threads["name"]) == ["audio", "compile.0", "compile.1", "compile.2", "editor", "video"]
assert run.threads["share"].sum() <= 1.0 + 1e-9
# The accumulated CPU time the plot ends at is what each thread received.
assert (ran.groupby("thread_name", observed=True)["duration_ns"].sum()
        == run.threads.set_index("name")["cpu_time_ns"]).all()
# HLS Fig. 3 composes and every edge is labelled.
assert fig3.composes and fig3.edges["guarantee"].notna().all()
assert "<svg" in fig3._repr_svg_()
# The Python round robin gives what the built-in one gives: a third each.
for policy in ["rr", "tour-rr"]:
    shares = compare[(policy, "share")]
    assert ((shares - 1 / 3).abs() < 0.02).all(), (policy, shares)
# Liu & Layland: every set at U <= 0.724 is schedulable under RM.
assert len(sets) == 11 * 10
assert acceptance[acceptance.index <= 0.7].eq(1.0).all(), acceptance
assert acceptance.iloc[-1] < 1.0, acceptance
'''


def test_the_tour_runs_and_shows_what_it_says(repo):
    try:
        import nbclient
        import matplotlib  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as missing:
        require("nbclient, matplotlib and dask.distributed (cargo xtask python-env installs them)", str(missing))
    path = repo / "examples" / "notebooks" / "tour.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(CHECKS))
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as failed:
        pytest.fail(f"the tour failed in a cell:\n{failed}")
    shown = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in shown), "the tour drew no figure"
    assert any("image/svg+xml" in o.get("data", {}) for o in shown), "the hierarchy was not drawn"
