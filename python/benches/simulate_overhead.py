"""What `hsched.simulate` costs against the command line on one scenario,
side by side: the best of N rounds of load + simulate + to_json in this
process, against the wall time of a `hsched sim FILE --json -` process.

    python python/benches/simulate_overhead.py [--cli target/release/hsched] [--rounds 30] [SCENARIO]

Build both with the release profile for numbers worth reporting:
`cargo build --release -p hsched` and `pip install ./python` (maturin
builds release by default).
"""

import argparse
import pathlib
import subprocess
import time

import hsched

REPO = pathlib.Path(__file__).resolve().parents[2]


def best(rounds, work):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default=str(REPO / "scenarios" / "examples" / "desktop.toml"))
    parser.add_argument("--cli", default=str(REPO / "target" / "release" / "hsched"))
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()

    def cli():
        subprocess.run([args.cli, "sim", args.scenario, "--json", "-"], check=True, stdout=subprocess.DEVNULL)

    def python(trace):
        return lambda: hsched.simulate(hsched.load(args.scenario), trace=trace).to_json()

    # Warm both (page cache, the extension's first import) before timing.
    cli()
    python(False)()
    rows = [
        ("hsched sim --json (a process)", best(args.rounds, cli)),
        ("load+simulate+to_json, trace=False", best(args.rounds, python(False))),
        ("load+simulate+to_json, trace=True (default)", best(args.rounds, python(True))),
        ("hsched sim --json (again)", best(args.rounds, cli)),
    ]
    cli_best = min(rows[0][1], rows[3][1])
    print(f"{args.scenario}: best of {args.rounds} rounds each")
    for name, seconds in rows:
        print(f"  {name:<46} {seconds * 1e3:8.3f} ms   {seconds / cli_best:5.2f}x the CLI")


if __name__ == "__main__":
    main()
