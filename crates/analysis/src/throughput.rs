//! FRC's throughput guarantee as pure arithmetic: Yau & Lam, "Decoupled
//! delay and rate guarantees...", §3, Theorem 1 (bound (3)) and
//! Corollary 1.1 (bound (4)).
//!
//! A thread `i` continuously runnable over an interval of length `len`
//! gets at least
//! - (3): `[(len − Σ_{j≠i} q_j) r_i − q_i Σ_{j≠i} r_j] / Σ_j r_j`,
//! - (4), when the admitted rates sum to at most 1:
//!   `(len − Σ_{j≠i} q_j) r_i − q_i`,
//!
//! with `Δ` the threads ever runnable in the interval (any superset of `Δ`
//! only lowers both bounds) and `q_j = w_j + tick`. Rates are integers in
//! parts per million (the policy's own exact unit), times in nanoseconds.
//! Both bounds are returned multiplied through by their denominator
//! (`Σ r` for (3), 10^6 for (4)), so comparisons stay exact: the callers
//! (the property test in `crates/sim/tests/frc.rs` and `hsched repro
//! yau-th1`) compare `received × denominator` with the numerator.

/// One million: rates are in ppm.
pub const PPM: i128 = 1_000_000;

/// The threads runnable in an interval, as the bounds need them: the sum
/// of their rates (ppm) and of their quanta `q_j` (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Competition {
    /// `Σ_{j∈Δ} r_j`, ppm, `i` included.
    pub rates: i128,
    /// `Σ_{j∈Δ} q_j`, ns, `i` included.
    pub quanta: i128,
}

/// A scaled bound: the thread's received time `x` meets it iff
/// `x × denominator ≥ numerator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scaled {
    pub numerator: i128,
    pub denominator: i128,
}

impl Scaled {
    /// `received − bound` in ns, rounded down (negative: violated).
    pub fn slack(&self, received: i128) -> i128 {
        (received * self.denominator - self.numerator).div_euclid(self.denominator)
    }

    pub fn met_by(&self, received: i128) -> bool {
        received * self.denominator >= self.numerator
    }
}

/// Bound (3) of Theorem 1 for a thread of rate `rate` (ppm) and quantum
/// `quantum` (ns) over an interval of `len` ns against `delta` (which
/// includes the thread).
pub fn theorem_1(len: i128, rate: i128, quantum: i128, delta: Competition) -> Scaled {
    let others_quanta = delta.quanta - quantum;
    Scaled {
        numerator: (len - others_quanta) * rate - quantum * (delta.rates - rate),
        denominator: delta.rates.max(1),
    }
}

/// Bound (4) of Corollary 1.1 (valid only when the admitted rates sum to
/// at most [`PPM`]); same arguments as [`theorem_1`].
pub fn corollary_1_1(len: i128, rate: i128, quantum: i128, delta: Competition) -> Scaled {
    let others_quanta = delta.quanta - quantum;
    Scaled {
        numerator: (len - others_quanta) * rate - quantum * PPM,
        denominator: PPM,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i128 = 1_000_000;

    #[test]
    fn two_equal_threads_bound_3_is_half_less_the_quanta() {
        // r = 0.5 each, q = 1ms: (3) = [(10 - 1) 0.5 - 1 x 0.5] / 1 = 4ms.
        let d = Competition {
            rates: PPM,
            quanta: 2 * MS,
        };
        let b = theorem_1(10 * MS, PPM / 2, MS, d);
        assert!(b.met_by(4 * MS));
        assert!(!b.met_by(4 * MS - 1));
        assert_eq!(b.slack(5 * MS), MS);
        // (4) = (10 - 1) 0.5 - 1 = 3.5ms: weaker than (3) at Σr = 1.
        let c = corollary_1_1(10 * MS, PPM / 2, MS, d);
        assert!(c.met_by(7 * MS / 2) && !c.met_by(7 * MS / 2 - 1));
    }

    #[test]
    fn bound_3_scales_up_when_the_cpu_is_underbooked() {
        // Alone at r = 0.1, q = 1ms: (3) = 10ms x 0.1 / 0.1 = the whole interval.
        let d = Competition {
            rates: PPM / 10,
            quanta: MS,
        };
        assert_eq!(theorem_1(10 * MS, PPM / 10, MS, d).slack(10 * MS), 0);
        // (4) only promises 0.1 x 10ms - 1ms = 0.
        assert_eq!(corollary_1_1(10 * MS, PPM / 10, MS, d).slack(0), 0);
    }
}
