//! The arguments of `dbs`'s messages `reserve` and `cancel`, and the
//! absolute window a `reserve` asks for (the module documentation of `dbs`
//! says what they mean).

use hsched_core::{Duration, Instant, ParamKind, ParamSpec, Params, Value};

/// `cancel`'s `id` when none is given: every reservation of the sender.
pub const ALL_RESERVATIONS: i64 = -1;

fn reserve_params() -> Vec<ParamSpec> {
    let any = ParamKind::Duration {
        min: Duration::ZERO,
    };
    vec![
        ParamSpec::new("start", any, "window start s, as time since 0")
            .with_default(Value::Duration(Duration::ZERO)),
        ParamSpec::new("amount", any, "CPU time t wanted in the window"),
        ParamSpec::new("deadline", any, "window end d, as time since 0"),
        ParamSpec::new(
            "relative",
            ParamKind::Bool,
            "start and deadline count from now",
        )
        .with_default(Value::Bool(false)),
    ]
}

pub fn cancel_params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "id",
        ParamKind::Int {
            min: 0,
            max: i64::MAX,
        },
        "the reservation to drop (default: all of the sender's)",
    )
    .with_default(Value::Int(ALL_RESERVATIONS))]
}

/// The absolute window and amount `reserve`'s arguments ask for at `now`:
/// (start, deadline, amount), or why they cannot be.
pub fn window(now: Instant, args: &Params) -> Result<(Instant, Instant, Duration), String> {
    let args = args.resolve(&reserve_params())?;
    let amount = args.duration("amount");
    let (start, deadline) = (args.duration("start"), args.duration("deadline"));
    let (start, deadline) = if args.bool("relative") {
        (now.saturating_add(start), now.saturating_add(deadline))
    } else {
        (Instant(start.as_nanos()), Instant(deadline.as_nanos()))
    };
    if deadline <= start {
        return Err(format!(
            "the deadline ({deadline}) is not after the start ({start})"
        ));
    }
    if deadline <= now {
        return Err(format!("the deadline ({deadline}) has passed (now {now})"));
    }
    Ok((start, deadline, amount))
}
