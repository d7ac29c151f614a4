//! The values that cross the plugin boundary, as bytes: the postcard
//! encoding (a stable, documented, compact binary format) of these types.
//!
//! They mirror the `hsched-core` types a callback takes and returns, but are
//! frozen for [`ABI_VERSION`](crate::abi::ABI_VERSION): a change in core does
//! not silently change the wire, and any change here bumps the version.
//! Integers are the core types' own (nanoseconds, ids); enums encode their
//! variant index, so variant order matters.

use hsched_core::{
    ChildId, CpuId, Cx, Dispatch, Duration, Effect, Instant, Msg, ParamKind, ParamSpec, Params,
    ParentVp, Reply, Sender, ShareRange, ThreadId, Value, VpState,
};
use serde::{Deserialize, Serialize};

/// [`Value`], tagged (core's own serde form is untagged, which cannot tell
/// an integer from a duration once encoded).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WValue {
    Bool(bool),
    Int(i64),
    Duration(u64),
    Str(String),
}

impl From<&Value> for WValue {
    fn from(v: &Value) -> Self {
        match v {
            Value::Bool(b) => WValue::Bool(*b),
            Value::Int(i) => WValue::Int(*i),
            Value::Duration(d) => WValue::Duration(d.as_nanos()),
            Value::Str(s) => WValue::Str(s.clone()),
        }
    }
}

impl From<WValue> for Value {
    fn from(v: WValue) -> Self {
        match v {
            WValue::Bool(b) => Value::Bool(b),
            WValue::Int(i) => Value::Int(i),
            WValue::Duration(d) => Value::Duration(Duration(d)),
            WValue::Str(s) => Value::Str(s),
        }
    }
}

/// [`Params`]: named values in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WParams(pub Vec<(String, WValue)>);

impl From<&Params> for WParams {
    fn from(p: &Params) -> Self {
        WParams(p.iter().map(|(k, v)| (k.to_string(), v.into())).collect())
    }
}

impl From<WParams> for Params {
    fn from(p: WParams) -> Self {
        Params(p.0.into_iter().map(|(k, v)| (k, v.into())).collect())
    }
}

/// [`Msg`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WMsg {
    pub name: String,
    pub args: WParams,
}

impl From<&Msg> for WMsg {
    fn from(m: &Msg) -> Self {
        WMsg {
            name: m.name.clone(),
            args: (&m.args).into(),
        }
    }
}

impl From<WMsg> for Msg {
    fn from(m: WMsg) -> Self {
        Msg {
            name: m.name,
            args: m.args.into(),
        }
    }
}

/// [`Reply`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WReply {
    Ok(WParams),
    Err(String),
}

impl From<&Reply> for WReply {
    fn from(r: &Reply) -> Self {
        match r {
            Reply::Ok(p) => WReply::Ok(p.into()),
            Reply::Err(e) => WReply::Err(e.clone()),
        }
    }
}

impl From<WReply> for Reply {
    fn from(r: WReply) -> Self {
        match r {
            WReply::Ok(p) => Reply::Ok(p.into()),
            WReply::Err(e) => Reply::Err(e),
        }
    }
}

/// [`ParamKind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WParamKind {
    Bool,
    Int { min: i64, max: i64 },
    Duration { min: u64 },
    Str,
    Rate { range: ShareRange, ppm: bool },
}

impl From<ParamKind> for WParamKind {
    fn from(k: ParamKind) -> Self {
        match k {
            ParamKind::Bool => WParamKind::Bool,
            ParamKind::Int { min, max } => WParamKind::Int { min, max },
            ParamKind::Duration { min } => WParamKind::Duration {
                min: min.as_nanos(),
            },
            ParamKind::Str => WParamKind::Str,
            ParamKind::Rate { range, ppm } => WParamKind::Rate { range, ppm },
        }
    }
}

impl From<WParamKind> for ParamKind {
    fn from(k: WParamKind) -> Self {
        match k {
            WParamKind::Bool => ParamKind::Bool,
            WParamKind::Int { min, max } => ParamKind::Int { min, max },
            WParamKind::Duration { min } => ParamKind::Duration { min: Duration(min) },
            WParamKind::Str => ParamKind::Str,
            WParamKind::Rate { range, ppm } => ParamKind::Rate { range, ppm },
        }
    }
}

/// [`ParamSpec`] with owned text (the host keeps its own copy).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WParamSpec {
    pub name: String,
    pub kind: WParamKind,
    pub default: Option<WValue>,
    pub doc: String,
}

impl From<&ParamSpec> for WParamSpec {
    fn from(s: &ParamSpec) -> Self {
        WParamSpec {
            name: s.name.to_string(),
            kind: s.kind.into(),
            default: s.default.as_ref().map(Into::into),
            doc: s.doc.to_string(),
        }
    }
}

/// What a plugin says about one of its policies: everything in
/// `hsched_core::PolicyInfo` except the functions, plus its HLS conversion
/// rule if it declares one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyDesc {
    pub name: String,
    pub summary: String,
    pub doc: String,
    pub params: Vec<WParamSpec>,
    pub child_params: Vec<WParamSpec>,
    pub max_parents: u32,
    pub max_children: u32,
    /// The policy's row of HLS Table 1, e.g. `"ALL -> NULL+"`.
    pub hls_rule: Option<String>,
}

/// [`VpState`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WVp {
    Idle,
    Requesting,
    Held(u32),
}

impl From<VpState> for WVp {
    fn from(v: VpState) -> Self {
        match v {
            VpState::Idle => WVp::Idle,
            VpState::Requesting => WVp::Requesting,
            VpState::Held(c) => WVp::Held(c.0),
        }
    }
}

impl From<WVp> for VpState {
    fn from(v: WVp) -> Self {
        match v {
            WVp::Idle => VpState::Idle,
            WVp::Requesting => VpState::Requesting,
            WVp::Held(c) => VpState::Held(CpuId(c)),
        }
    }
}

/// What a [`Cx`] lets a policy read, as of the start of the callback.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CxState {
    pub now: u64,
    pub cpus: u32,
    pub tick: Option<u64>,
    pub vps: Vec<WVp>,
    pub involuntary: bool,
}

impl CxState {
    /// The host's side: what `cx` shows the policy.
    pub fn of(cx: &Cx) -> Self {
        CxState {
            now: cx.now().as_nanos(),
            cpus: cx.cpus(),
            tick: cx.tick().map(Duration::as_nanos),
            vps: (0..cx.vp_count())
                .map(|i| cx.vp_state(ParentVp(i)).into())
                .collect(),
            involuntary: cx.involuntary(),
        }
    }
}

/// One callback of the [`hsched_core::Scheduler`] trait (all but
/// `check_invariants`, which has its own entry).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Call {
    Init,
    Deinit,
    RegisterVp {
        child: u32,
        params: WParams,
    },
    UnregisterVp {
        child: u32,
    },
    VpRequest {
        child: u32,
    },
    VpRelease {
        child: u32,
    },
    VpGrant {
        vp: u32,
        cpu: u32,
    },
    VpRevoke {
        vp: u32,
        cpu: u32,
    },
    Charge {
        child: u32,
        ran: u64,
    },
    Timer {
        key: u64,
    },
    Msg {
        thread: Option<u32>,
        child: Option<u32>,
        msg: WMsg,
    },
}

/// A callback and the context it runs in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub cx: CxState,
    pub call: Call,
}

/// [`Dispatch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WDispatch {
    Run { child: u32, until: u64 },
    Idle { until: u64 },
    Release,
    Spin { until: u64 },
}

impl From<Dispatch> for WDispatch {
    fn from(d: Dispatch) -> Self {
        match d {
            Dispatch::Run { child, until } => WDispatch::Run {
                child: child.0,
                until: until.as_nanos(),
            },
            Dispatch::Idle { until } => WDispatch::Idle {
                until: until.as_nanos(),
            },
            Dispatch::Release => WDispatch::Release,
            Dispatch::Spin { until } => WDispatch::Spin {
                until: until.as_nanos(),
            },
        }
    }
}

impl From<WDispatch> for Dispatch {
    fn from(d: WDispatch) -> Self {
        match d {
            WDispatch::Run { child, until } => Dispatch::Run {
                child: ChildId(child),
                until: Instant(until),
            },
            WDispatch::Idle { until } => Dispatch::Idle {
                until: Instant(until),
            },
            WDispatch::Release => Dispatch::Release,
            WDispatch::Spin { until } => Dispatch::Spin {
                until: Instant(until),
            },
        }
    }
}

/// [`Effect`]: what the policy asked for through its `Cx`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WEffect {
    SetTimer { key: u64, at: u64 },
    CancelTimer { key: u64 },
    Request(u32),
    Release(u32),
    WantCpus(u32),
    Reschedule(u32),
    Revoke(u32),
    MsgParent { vp: u32, msg: WMsg },
}

impl From<&Effect> for WEffect {
    fn from(e: &Effect) -> Self {
        match e {
            Effect::SetTimer { key, at } => WEffect::SetTimer {
                key: *key,
                at: at.as_nanos(),
            },
            Effect::CancelTimer { key } => WEffect::CancelTimer { key: *key },
            Effect::Request(vp) => WEffect::Request(vp.0),
            Effect::Release(vp) => WEffect::Release(vp.0),
            Effect::WantCpus(n) => WEffect::WantCpus(*n),
            Effect::Reschedule(vp) => WEffect::Reschedule(vp.0),
            Effect::Revoke(c) => WEffect::Revoke(c.0),
            Effect::MsgParent { vp, msg } => WEffect::MsgParent {
                vp: vp.0,
                msg: msg.into(),
            },
        }
    }
}

impl WEffect {
    /// The host's side: asks for the same effect through the host's `cx`.
    pub fn apply(self, cx: &mut Cx) {
        match self {
            WEffect::SetTimer { key, at } => cx.set_timer(key, Instant(at)),
            WEffect::CancelTimer { key } => cx.cancel_timer(key),
            WEffect::Request(vp) => cx.request(ParentVp(vp)),
            WEffect::Release(vp) => cx.release(ParentVp(vp)),
            WEffect::WantCpus(n) => cx.want_cpus(n),
            WEffect::Reschedule(vp) => cx.reschedule(ParentVp(vp)),
            WEffect::Revoke(c) => cx.revoke(ChildId(c)),
            WEffect::MsgParent { vp, msg } => cx.msg_parent(ParentVp(vp), msg.into()),
        }
    }
}

/// What a callback returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// A callback that returns nothing.
    Done,
    /// `register_vp`: admitted, or refused with the reason.
    Registered(Result<(), String>),
    /// `vp_grant`.
    Dispatch(WDispatch),
    /// `msg`.
    Reply(WReply),
}

/// A callback's result and the effects it asked for, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    pub effects: Vec<WEffect>,
    pub outcome: Outcome,
}

impl Call {
    /// The host's side: the `msg` callback's sender and message.
    pub fn msg(from: Sender, msg: &Msg) -> Call {
        Call::Msg {
            thread: from.thread.map(|t| t.0),
            child: from.child.map(|c| c.0),
            msg: msg.into(),
        }
    }

    /// The plugin's side: runs this callback on `sched`.
    pub fn run(self, sched: &mut dyn hsched_core::Scheduler, cx: &mut Cx) -> Outcome {
        match self {
            Call::Init => {
                sched.init(cx);
                Outcome::Done
            }
            Call::Deinit => {
                sched.deinit(cx);
                Outcome::Done
            }
            Call::RegisterVp { child, params } => Outcome::Registered(
                sched
                    .register_vp(cx, ChildId(child), &params.into())
                    .map_err(|r| r.0),
            ),
            Call::UnregisterVp { child } => {
                sched.unregister_vp(cx, ChildId(child));
                Outcome::Done
            }
            Call::VpRequest { child } => {
                sched.vp_request(cx, ChildId(child));
                Outcome::Done
            }
            Call::VpRelease { child } => {
                sched.vp_release(cx, ChildId(child));
                Outcome::Done
            }
            Call::VpGrant { vp, cpu } => {
                Outcome::Dispatch(sched.vp_grant(cx, ParentVp(vp), CpuId(cpu)).into())
            }
            Call::VpRevoke { vp, cpu } => {
                sched.vp_revoke(cx, ParentVp(vp), CpuId(cpu));
                Outcome::Done
            }
            Call::Charge { child, ran } => {
                sched.charge(cx, ChildId(child), Duration(ran));
                Outcome::Done
            }
            Call::Timer { key } => {
                sched.timer(cx, key);
                Outcome::Done
            }
            Call::Msg { thread, child, msg } => {
                let from = Sender {
                    thread: thread.map(ThreadId),
                    child: child.map(ChildId),
                };
                Outcome::Reply((&sched.msg(cx, from, &msg.into())).into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever bytes one side receives, decoding gives a value or an
        /// error, never a panic (the host ejects an instance whose answer
        /// does not decode; the library reports a request it cannot decode).
        #[test]
        fn decoding_any_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = postcard::from_bytes::<Request>(&bytes);
            let _ = postcard::from_bytes::<Response>(&bytes);
            let _ = postcard::from_bytes::<PolicyDesc>(&bytes);
            let _ = postcard::from_bytes::<WParams>(&bytes);
        }

        /// A valid response with its bytes damaged still decodes or fails cleanly.
        #[test]
        fn damaged_responses_never_panic(at in 0usize..64, byte in any::<u8>()) {
            let r = Response {
                effects: vec![WEffect::SetTimer { key: 3, at: 1_000_000 }, WEffect::WantCpus(2)],
                outcome: Outcome::Reply(WReply::Ok(WParams(vec![("x".into(), WValue::Duration(5))]))),
            };
            let mut bytes = postcard::to_allocvec(&r).unwrap();
            let i = at % bytes.len();
            bytes[i] = byte;
            let _ = postcard::from_bytes::<Response>(&bytes);
        }
    }

    fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(v: T) {
        let bytes = postcard::to_allocvec(&v).unwrap();
        let back: T = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn values_keep_their_type_across_the_wire() {
        let p = Params::new()
            .with("budget", Value::Duration(Duration::from_millis(3)))
            .with("weight", Value::Int(3_000_000))
            .with("name", Value::Str("x".into()))
            .with("on", Value::Bool(true));
        let wire = WParams::from(&p);
        let bytes = postcard::to_allocvec(&wire).unwrap();
        let back: Params = postcard::from_bytes::<WParams>(&bytes).unwrap().into();
        assert_eq!(back, p, "a duration stays a duration, an int an int");
    }

    #[test]
    fn requests_and_responses_round_trip() {
        round_trip(Request {
            cx: CxState {
                now: 12,
                cpus: 2,
                tick: Some(1_000_000),
                vps: vec![WVp::Held(1), WVp::Requesting, WVp::Idle],
                involuntary: true,
            },
            call: Call::Msg {
                thread: Some(3),
                child: None,
                msg: (&Msg::new("deadline").arg("relative", Value::Duration(Duration(5)))).into(),
            },
        });
        round_trip(Response {
            effects: vec![
                WEffect::SetTimer { key: 7, at: 99 },
                WEffect::WantCpus(2),
                WEffect::MsgParent {
                    vp: 0,
                    msg: (&Msg::new("warp")).into(),
                },
            ],
            outcome: Outcome::Dispatch(WDispatch::Run {
                child: 4,
                until: u64::MAX,
            }),
        });
        round_trip(Outcome::Registered(Err("full".into())));
    }

    #[test]
    fn effects_reach_the_host_cx_unchanged() {
        let effects = vec![
            Effect::SetTimer {
                key: 1,
                at: Instant(5),
            },
            Effect::CancelTimer { key: 2 },
            Effect::Request(ParentVp(1)),
            Effect::Release(ParentVp(0)),
            Effect::WantCpus(3),
            Effect::Reschedule(ParentVp(2)),
            Effect::Revoke(ChildId(9)),
            Effect::MsgParent {
                vp: ParentVp(0),
                msg: Msg::new("hello").arg("x", Value::Int(1)),
            },
        ];
        let mut got = Vec::new();
        let vps = [VpState::Idle];
        let mut cx = Cx::new(Instant(0), 1, None, &vps, &mut got);
        for e in &effects {
            WEffect::from(e).apply(&mut cx);
        }
        assert_eq!(got, effects);
    }
}
