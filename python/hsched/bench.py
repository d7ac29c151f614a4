"""``python -m hsched.bench``: what a policy written in Python costs.

Runs the same seeded periodic task sets (those of ``hsched bench
--simso``: 8 tasks, 5-50ms periods, 90% and 110% utilisation, one CPU)
under the built-in ``edf`` and under the Python EDF of
``hsched.examples.edf``, side by side in one run, each set once per round
and the best of the rounds kept; then SimSo's ``EDF_mono`` on the same
sets when SimSo is installed (``pip install --target target/simso-py
simso==0.8.5``, as the repository's CI does). Prints jobs per wall-second,
callbacks per wall-second and wall nanoseconds per callback for each, the
ratios, and whether the job outcomes (each job's release and completion)
agree.

Only an optimised build of the extension gives meaningful numbers
(``MATURIN_PEP517_ARGS="--profile release" pip install ./python``).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
from typing import List, Optional, Sequence

from . import _hsched


def _agreement(a: Sequence, b: Sequence) -> str:
    """``same`` when both runs have the same job outcomes, else how many differ."""
    if list(a) == list(b):
        return "same"
    differ = sum(1 for x, y in zip(a, b) if x != y) + abs(len(a) - len(b))
    return f"{differ} differ"


def main(argv: Optional[List[str]] = None) -> int:
    """Measures and prints the comparison; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m hsched.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2s task sets and 3 rounds (default: 10s, 5 rounds)")
    parser.add_argument("--rounds", type=int, help="rounds to keep the best of")
    parser.add_argument(
        "--simso-site",
        default=os.environ.get("HSCHED_SIMSO_SITE", "target/simso-py"),
        help="where SimSo was installed with pip --target (default: target/simso-py)",
    )
    parser.add_argument("--no-simso", action="store_true", help="leave SimSo out")
    args = parser.parse_args(argv)

    import hsched.examples.edf  # noqa: F401  (registers py-edf)

    horizon_ms = 2_000 if args.quick else 10_000
    rounds = args.rounds or (3 if args.quick else 5)
    names = _hsched._bench_task_sets(horizon_ms)
    print(
        f"hsched.bench: built-in edf against the Python EDF (hsched.examples.edf) on {len(names)} task sets "
        f"(8 periodic tasks, 5-50ms periods, {horizon_ms // 1000}s each, one CPU); best of {rounds} rounds"
    )
    best = {}
    for _ in range(rounds):
        for i in range(len(names)):
            for policy in ("edf", "py-edf"):
                jobs, misses, wall, callbacks, outcomes = _hsched._bench_run(i, horizon_ms, policy)
                old = best.get((i, policy))
                if old is None or wall < old[2]:
                    best[(i, policy)] = (jobs, misses, wall, callbacks, outcomes)

    simso = None
    if not args.no_simso:
        with tempfile.TemporaryDirectory(prefix="hsched-bench-") as tmp:
            try:
                simso = _hsched._bench_simso(str(pathlib.Path(args.simso_site).resolve()), tmp, horizon_ms)
            except RuntimeError as err:
                print(f"SimSo left out: {err}")

    print()
    print("  wall time: parse + simulate (hsched), load + simulate (SimSo)")
    header = (
        f"  {'set':<12} {'jobs':>6} {'misses':>7}  {'edf jobs/s':>11} {'callbacks/s':>12} {'ns/cb':>6}"
        f"  {'py-edf jobs/s':>13} {'callbacks/s':>12} {'ns/cb':>6}  {'edf/py':>7}  {'outcomes':>9}"
    )
    if simso:
        header += f"  {'SimSo jobs/s':>12} {'py/SimSo':>8}  {'vs SimSo':>9}"
    print(header)
    totals = {"edf": [0, 0.0, 0], "py-edf": [0, 0.0, 0], "simso": [0, 0.0]}
    for i, name in enumerate(names):
        e_jobs, e_miss, e_wall, e_cb, e_out = best[(i, "edf")]
        p_jobs, p_miss, p_wall, p_cb, p_out = best[(i, "py-edf")]
        for key, (jobs, wall, cb) in (("edf", (e_jobs, e_wall, e_cb)), ("py-edf", (p_jobs, p_wall, p_cb))):
            totals[key][0] += jobs
            totals[key][1] += wall
            totals[key][2] += cb
        line = (
            f"  {name:<12} {e_jobs:>6} {e_miss:>3}/{p_miss:<3}  {e_jobs / e_wall:>11.0f} {e_cb / e_wall:>12.0f}"
            f" {e_wall * 1e9 / e_cb:>6.0f}  {p_jobs / p_wall:>13.0f} {p_cb / p_wall:>12.0f} {p_wall * 1e9 / p_cb:>6.0f}"
            f"  {p_wall / e_wall:>6.1f}x  {_agreement(e_out, p_out):>9}"
        )
        if simso:
            s_jobs, s_wall, s_out = simso[i]
            totals["simso"][0] += s_jobs
            totals["simso"][1] += s_wall
            line += f"  {s_jobs / s_wall:>12.0f} {s_wall / p_wall:>7.1f}x  {_agreement(s_out, p_out):>9}"
        print(line)
    e_jobs, e_wall, e_cb = totals["edf"]
    p_jobs, p_wall, p_cb = totals["py-edf"]
    line = (
        f"  {'all':<12} {e_jobs:>6} {'':>7}  {e_jobs / e_wall:>11.0f} {e_cb / e_wall:>12.0f}"
        f" {e_wall * 1e9 / e_cb:>6.0f}  {p_jobs / p_wall:>13.0f} {p_cb / p_wall:>12.0f} {p_wall * 1e9 / p_cb:>6.0f}"
        f"  {p_wall / e_wall:>6.1f}x"
    )
    if simso:
        s_jobs, s_wall = totals["simso"]
        line += f"  {'':>9}  {s_jobs / s_wall:>12.0f} {s_wall / p_wall:>7.1f}x"
    print(line)
    print()
    print(
        "  ns/cb: wall nanoseconds per callback into the policy (simulator included); edf/py: how many times\n"
        "  longer the Python EDF's run took; outcomes: each job's release and completion against the built-in\n"
        "  edf's (and, under 'vs SimSo', the Python EDF's against SimSo's). At 110% utilisation the policies\n"
        "  differ by design: the built-in edf moves an overrunning job on by its wcet, the Python EDF postpones\n"
        "  its deadline."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
