//! Criterion benchmarks of the simulator: a fixed number of quantum
//! expiries for flat and deep hierarchies. `hsched bench` reports the same
//! quantities as ratios; these are for tracking changes over time.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use hsched_core::{Duration, Instant};
use hsched_sim::{workloads, SimOptions, Simulation};

const QUANTA: u64 = 20_000;

fn decisions(c: &mut Criterion) {
    let mut group = c.benchmark_group("decisions");
    group.throughput(Throughput::Elements(QUANTA));
    for (threads, levels) in [(100, 1), (100, 4), (10_000, 1)] {
        let scn = workloads::cpu_bound(
            threads,
            levels,
            1,
            Duration::from_millis(1),
            Duration::from_millis(2 * QUANTA + 10),
        );
        group.bench_with_input(
            BenchmarkId::new(format!("{levels}-levels"), threads),
            &scn,
            |b, scn| {
                b.iter_batched(
                    || {
                        let mut sim = Simulation::new(scn, &SimOptions::default(), &[]).unwrap();
                        sim.run_until(Instant::ZERO + Duration::from_millis(QUANTA / 2));
                        sim
                    },
                    |mut sim| {
                        sim.run_until(Instant::ZERO + Duration::from_millis(QUANTA / 2 + QUANTA))
                    },
                    criterion::BatchSize::LargeInput,
                )
            },
        );
    }
    group.finish();
}

criterion_group!(benches, decisions);
criterion_main!(benches);
