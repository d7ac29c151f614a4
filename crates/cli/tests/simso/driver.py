"""SimSo driver for hsched's cross-check and speed comparison.

Usage: python3 driver.py OUT.json CONFIG.xml...

Runs SimSo on each configuration (the XML files hsched wrote, read by
SimSo's own parser) and writes, per configuration, every job of every task
(release, absolute deadline and completion in nanoseconds, SimSo's own
deadline-miss verdict) and the wall time SimSo took to load and simulate
it. Times are converted from SimSo's cycles with the configuration's
cycles_per_ms; the cross-check uses 1,000,000 cycles per ms, so one cycle
is one nanosecond and nothing is rounded.
"""

import json
import sys
import time

from simso.configuration import Configuration
from simso.core import Model


def cycles_to_ns(cycles, cycles_per_ms):
    return (cycles * 1_000_000) // cycles_per_ms


def ms_to_ns(ms, cycles_per_ms):
    # SimSo keeps activation dates and deadlines in float milliseconds
    # (cycles / cycles_per_ms): round back to the whole cycle they came from.
    return cycles_to_ns(round(ms * cycles_per_ms), cycles_per_ms)


def run(path):
    started = time.perf_counter()
    configuration = Configuration(path)
    model = Model(configuration)
    model.run_model()
    wall = time.perf_counter() - started
    cpm = configuration.cycles_per_ms
    tasks = []
    for task in model.task_list:
        jobs = []
        for job in task.jobs:
            end = job.end_date
            jobs.append(
                {
                    "release_ns": ms_to_ns(job.activation_date, cpm),
                    "deadline_ns": ms_to_ns(job.absolute_deadline, cpm),
                    "finish_ns": None if end is None else cycles_to_ns(end, cpm),
                    "aborted": job.aborted,
                    "missed": None if end is None else bool(job.exceeded_deadline),
                }
            )
        tasks.append({"name": task.name, "jobs": jobs})
    return {"file": path, "wall_s": wall, "tasks": tasks}


def main():
    out, paths = sys.argv[1], sys.argv[2:]
    results = [run(p) for p in paths]
    with open(out, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
