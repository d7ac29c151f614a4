//! The points of a sweep: each computed from the spec and its index alone
//! (its seed, its parameter values, its scenario), so that points can run
//! in any order, on any thread, in any shard, and come out the same.
//!
//! **Seeds.** Random streams are ChaCha8, keyed by a 64-bit seed and a
//! purpose, on stream `index`. Point `i`'s seed is the first output of the
//! stream (base seed, purpose 1, `i`): it seeds the simulation (as
//! `hsched sim --seed`) and the task-set generator (key: the point seed,
//! purpose 3). A random design draws sample `s`'s parameter values from
//! (base seed, purpose 2, `s`), so that the replicates of a sample share
//! them.
//!
//! **Order.** Point `i` is replicate `i % replicates` of combination (grid)
//! or sample (random) `i / replicates`. Grid combinations count in
//! row-major order: the first parameter varies slowest.

use crate::spec::{Design, Domain, Spec};
use crate::value::{Decimal, Value};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt;

const POINT_SEED: u64 = 1;
const SAMPLE: u64 = 2;
const GENERATOR: u64 = 3;

/// A random stream for `purpose` under `seed`, number `stream`.
pub fn stream(seed: u64, purpose: u64, stream: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&purpose.to_le_bytes());
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream(stream);
    rng
}

/// The seed of point `index` under base seed `seed`.
pub fn point_seed(seed: u64, index: u64) -> u64 {
    stream(seed, POINT_SEED, index).next_u64()
}

/// One point of a sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    pub index: u64,
    pub seed: u64,
    pub replicate: u64,
    /// One per spec parameter, in spec order.
    pub values: Vec<Value>,
}

/// How many points the spec has.
pub fn count(spec: &Spec) -> u64 {
    let groups = match spec.design {
        Design::Grid => spec.params.iter().map(|p| p.domain.grid_len()).product(),
        Design::Random { samples } => samples,
    };
    groups * spec.replicates
}

/// Point `index` (< [`count`]).
pub fn point(spec: &Spec, index: u64) -> Point {
    Point {
        index,
        seed: point_seed(spec.seed, index),
        replicate: index % spec.replicates,
        values: values_of(spec, index),
    }
}

/// The parameter values of point `index`.
pub fn values_of(spec: &Spec, index: u64) -> Vec<Value> {
    let group = index / spec.replicates;
    match spec.design {
        Design::Grid => {
            let mut rest = group;
            let mut out = vec![Value::Int(0); spec.params.len()];
            for (i, p) in spec.params.iter().enumerate().rev() {
                let len = p.domain.grid_len();
                out[i] = grid_value(&p.domain, rest % len);
                rest /= len;
            }
            out
        }
        Design::Random { .. } => {
            let mut rng = stream(spec.seed, SAMPLE, group);
            spec.params
                .iter()
                .map(|p| random_value(&p.domain, &mut rng))
                .collect()
        }
    }
}

fn grid_value(domain: &Domain, k: u64) -> Value {
    match domain {
        Domain::List(values) => values[k as usize].clone(),
        Domain::Durations(ns) => Value::Int(ns[k as usize] as i64),
        Domain::Range { from, step, .. } => {
            let d = from
                .add_times(*step, k)
                .expect("the range was counted without overflow");
            // Integers only when every value is one: a parameter keeps one
            // type, so `set` writes the same TOML type at every point.
            match (from.as_integer(), step.as_integer(), d.as_integer()) {
                (Some(_), Some(_), Some(i)) => Value::Int(i),
                _ => Value::Decimal(d),
            }
        }
        Domain::DurationRange { from, step, .. } => Value::Int((from + step * k) as i64),
        _ => unreachable!("a grid parameter is a list or a range (checked by the spec reader)"),
    }
}

fn random_value(domain: &Domain, rng: &mut ChaCha8Rng) -> Value {
    let decimal = |x: f64, digits: u32| {
        Decimal::from_f64_rounded(x, digits).map_or(Value::Text(format!("{x}")), Value::Decimal)
    };
    match domain {
        Domain::List(values) => values[rng.gen_range(0..values.len())].clone(),
        Domain::Durations(ns) => Value::Int(ns[rng.gen_range(0..ns.len())] as i64),
        Domain::Uniform { lo, hi, digits } => decimal(lo + (hi - lo) * rng.gen::<f64>(), *digits),
        Domain::LogUniform { lo, hi, digits } => {
            let (a, b) = (libm::log(*lo), libm::log(*hi));
            decimal(
                libm::exp(a + (b - a) * rng.gen::<f64>()).clamp(*lo, *hi),
                *digits,
            )
        }
        Domain::IntUniform { lo, hi } => Value::Int(rng.gen_range(*lo..=*hi)),
        Domain::DurationUniform { lo, hi } => Value::Int(rng.gen_range(*lo..=*hi) as i64),
        Domain::DurationLogUniform { lo, hi } => {
            let (a, b) = (libm::log(*lo as f64), libm::log(*hi as f64));
            let x = libm::exp(a + (b - a) * rng.gen::<f64>()) as u64;
            Value::Int(x.clamp(*lo, *hi) as i64)
        }
        Domain::Range { .. } | Domain::DurationRange { .. } => {
            unreachable!("a range is a grid parameter (checked by the spec reader)")
        }
    }
}

/// The generator's random stream for a point.
pub fn generator_rng(point: &Point) -> ChaCha8Rng {
    stream(point.seed, GENERATOR, 0)
}

/// Which points a process runs: `--shard k/N` runs the points whose index
/// is `k - 1` modulo `N` (interleaved, so every shard gets a like share of
/// cheap and costly points).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// 1-based.
    pub k: u64,
    pub n: u64,
}

impl Shard {
    pub const ALL: Shard = Shard { k: 1, n: 1 };

    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("`{text}`: expected k/N with 1 <= k <= N, e.g. 3/8");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let k: u64 = k.trim().parse().map_err(|_| bad())?;
        let n: u64 = n.trim().parse().map_err(|_| bad())?;
        if k == 0 || n == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }

    pub fn contains(self, index: u64) -> bool {
        index % self.n == self.k - 1
    }

    /// The indexes of this shard below `count`, in order.
    pub fn indexes(self, count: u64) -> impl Iterator<Item = u64> {
        (self.k - 1..count).step_by(self.n as usize)
    }

    /// How many of `count` points are in this shard.
    pub fn len(self, count: u64) -> u64 {
        if count < self.k {
            0
        } else {
            (count - self.k) / self.n + 1
        }
    }

    pub fn is_all(self) -> bool {
        self.n == 1
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// `point 7 (u=0.55, replicate 3, seed 1234)`: how messages name a point.
pub fn describe(spec: &Spec, p: &Point) -> String {
    let mut parts: Vec<String> = spec
        .params
        .iter()
        .zip(&p.values)
        .map(|(param, v)| format!("{}={v}", param.name))
        .collect();
    if spec.replicates > 1 {
        parts.push(format!("replicate {}", p.replicate));
    }
    parts.push(format!("seed {}", p.seed));
    format!("point {} ({})", p.index, parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_indexes() {
        for count in [0u64, 1, 7, 20] {
            for n in 1..5 {
                let mut seen = vec![0; count as usize];
                for k in 1..=n {
                    let s = Shard { k, n };
                    let idx: Vec<u64> = s.indexes(count).collect();
                    assert_eq!(idx.len() as u64, s.len(count));
                    for i in idx {
                        assert!(s.contains(i));
                        seen[i as usize] += 1;
                    }
                }
                assert!(seen.iter().all(|&c| c == 1), "{count} {n}: {seen:?}");
            }
        }
        assert!(Shard::parse("0/3").is_err());
        assert!(Shard::parse("4/3").is_err());
        assert_eq!(Shard::parse(" 2/3").unwrap(), Shard { k: 2, n: 3 });
    }

    #[test]
    fn point_seeds_differ_and_repeat() {
        let a: Vec<u64> = (0..100).map(|i| point_seed(1, i)).collect();
        let b: Vec<u64> = (0..100).map(|i| point_seed(1, i)).collect();
        assert_eq!(a, b);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 100);
        assert_ne!(point_seed(1, 0), point_seed(2, 0));
    }
}
