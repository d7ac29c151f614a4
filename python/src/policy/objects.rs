//! What a Python policy's callbacks receive and return: the `Cx` it acts
//! through, the `Dispatch` a grant answers, the state of a VP, the sender
//! and text of a message, and parameter values as Python objects.
//!
//! Values cross as plain Python objects: `bool`, `int` (durations as
//! integer nanoseconds, the simulator's own unit) and `str`. Ids (children,
//! VPs, CPUs, threads) and timer keys are `int`s.

use hsched_core::{
    ChildId, Cx, Dispatch as CoreDispatch, Duration, Effect, Instant, Msg, Params, ParentVp,
    SyncEvent, Value, VpState,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};

pyo3::create_exception!(
    hsched,
    Reject,
    pyo3::exceptions::PyException,
    "Raised by `register_vp` to refuse a child (or by `msg` to refuse a message), with the reason."
);

/// A parameter value as Python sees it.
pub fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Duration(d) => d.as_nanos().into_pyobject(py)?.into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
    })
}

/// Parameters as a `dict` (in their declared order).
pub fn params_to_py<'py>(py: Python<'py>, params: &Params) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in params.iter() {
        d.set_item(k, value_to_py(py, v)?)?;
    }
    Ok(d)
}

/// A Python value as a parameter value: `bool`, `int` or `str`. `what`
/// names it in the error.
pub fn value_from_py(v: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    if v.is_instance_of::<PyBool>() {
        Ok(Value::Bool(v.extract()?))
    } else if v.is_instance_of::<PyInt>() {
        let i: i64 = v.extract().map_err(|_| {
            PyTypeError::new_err(format!("{what}: {v} does not fit a 64-bit integer"))
        })?;
        Ok(Value::Int(i))
    } else if v.is_instance_of::<PyString>() {
        Ok(Value::Str(v.extract()?))
    } else {
        Err(PyTypeError::new_err(format!(
            "{what}: expected a bool, an int or a str, got {} ({})",
            v.repr()?,
            v.get_type().name()?
        )))
    }
}

/// A `dict` of `str` keys as parameters (`None`: none).
pub fn params_from_py(d: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Params> {
    let mut out = Params::new();
    let Some(d) = d.filter(|d| !d.is_none()) else {
        return Ok(out);
    };
    let d = d
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err(format!("{what}: expected a dict of values")))?;
    for (k, v) in d.iter() {
        let key: String = k
            .extract()
            .map_err(|_| PyTypeError::new_err(format!("{what}: keys must be str, got {k}")))?;
        let v = value_from_py(&v, &format!("{what}[{key:?}]"))?;
        out.set(&key, v);
    }
    Ok(out)
}

/// The answer to a grant: what the CPU does next. Make one with
/// `Dispatch.run(child, until=None)`, `Dispatch.idle(until)`,
/// `Dispatch.spin(until)` or `Dispatch.release()`; times are integer
/// nanoseconds.
#[pyclass(frozen, module = "hsched", name = "Dispatch", eq)]
#[derive(Clone, PartialEq)]
pub struct Dispatch {
    pub inner: CoreDispatch,
}

#[pymethods]
impl Dispatch {
    /// Run `child` on the CPU, until `until` (ns; `None`: no horizon).
    #[staticmethod]
    #[pyo3(signature = (child, until=None))]
    fn run(child: u32, until: Option<u64>) -> Self {
        Dispatch {
            inner: CoreDispatch::Run {
                child: ChildId(child),
                until: until.map_or(Instant::NEVER, Instant),
            },
        }
    }

    /// Keep the CPU, idle, until `until` (ns).
    #[staticmethod]
    fn idle(until: u64) -> Self {
        Dispatch {
            inner: CoreDispatch::Idle {
                until: Instant(until),
            },
        }
    }

    /// Keep the CPU, busy-waiting until exactly `until` (ns).
    #[staticmethod]
    fn spin(until: u64) -> Self {
        Dispatch {
            inner: CoreDispatch::Spin {
                until: Instant(until),
            },
        }
    }

    /// Decline the CPU: the parent decides (Vassal's delegation).
    #[staticmethod]
    fn release() -> Self {
        Dispatch {
            inner: CoreDispatch::Release,
        }
    }

    fn __repr__(&self) -> String {
        let until = |t: Instant| {
            if t == Instant::NEVER {
                "None".to_string()
            } else {
                t.as_nanos().to_string()
            }
        };
        match self.inner {
            CoreDispatch::Run { child, until: u } => {
                format!("Dispatch.run({}, until={})", child.0, until(u))
            }
            CoreDispatch::Idle { until: u } => format!("Dispatch.idle({})", u.as_nanos()),
            CoreDispatch::Spin { until: u } => format!("Dispatch.spin({})", u.as_nanos()),
            CoreDispatch::Release => "Dispatch.release()".into(),
        }
    }
}

/// The state of one of the policy's own VPs: `idle`, `requesting` or
/// `held` (then `cpu` is the CPU it holds).
#[pyclass(frozen, module = "hsched", name = "VpState", eq)]
#[derive(Clone, PartialEq)]
pub struct PyVpState {
    inner: VpState,
}

#[pymethods]
impl PyVpState {
    /// `"idle"`, `"requesting"` or `"held"`.
    #[getter]
    fn kind(&self) -> &'static str {
        match self.inner {
            VpState::Idle => "idle",
            VpState::Requesting => "requesting",
            VpState::Held(_) => "held",
        }
    }
    #[getter]
    fn idle(&self) -> bool {
        self.inner == VpState::Idle
    }
    #[getter]
    fn requesting(&self) -> bool {
        self.inner == VpState::Requesting
    }
    #[getter]
    fn held(&self) -> bool {
        matches!(self.inner, VpState::Held(_))
    }
    /// The CPU a held VP holds; `None` otherwise.
    #[getter]
    fn cpu(&self) -> Option<u32> {
        match self.inner {
            VpState::Held(c) => Some(c.0),
            _ => None,
        }
    }
    fn __repr__(&self) -> String {
        match self.inner {
            VpState::Held(c) => format!("VpState(held, cpu={})", c.0),
            _ => format!("VpState({})", self.kind()),
        }
    }
}

/// Who sent a message: a thread (`thread`, and `child` if it is this
/// policy's child), a child scheduler (`child` only) or the operator
/// (neither).
#[pyclass(frozen, module = "hsched", name = "Sender")]
pub struct PySender {
    #[pyo3(get)]
    thread: Option<u32>,
    #[pyo3(get)]
    child: Option<u32>,
}

impl PySender {
    pub fn of(s: hsched_core::Sender) -> Self {
        PySender {
            thread: s.thread.map(|t| t.0),
            child: s.child.map(|c| c.0),
        }
    }
}

#[pymethods]
impl PySender {
    fn __repr__(&self) -> String {
        let opt = |v: Option<u32>| v.map_or("None".into(), |v| v.to_string());
        format!(
            "Sender(thread={}, child={})",
            opt(self.thread),
            opt(self.child)
        )
    }
}

/// A message: its `name` and its `args` (a dict).
#[pyclass(frozen, module = "hsched", name = "Msg")]
pub struct PyMsg {
    #[pyo3(get)]
    name: String,
    #[pyo3(get)]
    args: Py<PyDict>,
}

impl PyMsg {
    pub fn of(py: Python<'_>, m: &Msg) -> PyResult<Self> {
        Ok(PyMsg {
            name: m.name.clone(),
            args: params_to_py(py, &m.args)?.unbind(),
        })
    }
}

#[pymethods]
impl PyMsg {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Msg({:?}, {})",
            self.name,
            self.args.bind(py).repr()?
        ))
    }
}

/// A synchronisation event (`sync`) as a dict: `kind` ("acquired",
/// "blocked", "released", "call_served", "call_ended") and its fields,
/// children as ints, `protocol` as its name.
pub fn sync_to_py<'py>(py: Python<'py>, e: &SyncEvent<ChildId>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match *e {
        SyncEvent::Acquired {
            thread,
            mutex,
            protocol,
        }
        | SyncEvent::Blocked {
            thread,
            mutex,
            protocol,
        } => {
            let kind = if matches!(e, SyncEvent::Acquired { .. }) {
                "acquired"
            } else {
                "blocked"
            };
            d.set_item("kind", kind)?;
            d.set_item("thread", thread.0)?;
            d.set_item("mutex", mutex.0)?;
            d.set_item("protocol", protocol.to_string())?;
        }
        SyncEvent::Released {
            thread,
            mutex,
            to,
            protocol,
        } => {
            d.set_item("kind", "released")?;
            d.set_item("thread", thread.0)?;
            d.set_item("mutex", mutex.0)?;
            d.set_item("to", to.map(|c| c.0))?;
            d.set_item("protocol", protocol.to_string())?;
        }
        SyncEvent::CallServed { client, server } | SyncEvent::CallEnded { client, server } => {
            let kind = if matches!(e, SyncEvent::CallServed { .. }) {
                "call_served"
            } else {
                "call_ended"
            };
            d.set_item("kind", kind)?;
            d.set_item("client", client.0)?;
            d.set_item("server", server.0)?;
        }
    }
    Ok(d)
}

/// What one callback may read and ask for, as the Rust `Cx`: a snapshot
/// of the time, the machine and the policy's VPs, and the effects asked
/// for, which are applied through the dispatcher's own `Cx`, in order,
/// after the callback returns. It is valid during its callback only: used
/// later it raises `RuntimeError`.
#[pyclass(module = "hsched", name = "Cx")]
pub struct PyCx {
    now: u64,
    cpus: u32,
    tick: Option<u64>,
    vps: Vec<VpState>,
    involuntary: bool,
    callback: &'static str,
    open: bool,
    effects: Vec<Effect>,
}

impl PyCx {
    /// A snapshot of `cx` for the callback `callback`.
    pub fn of(cx: &Cx, callback: &'static str) -> Self {
        PyCx {
            now: cx.now().as_nanos(),
            cpus: cx.cpus(),
            tick: cx.tick().map(|t| t.as_nanos()),
            vps: (0..cx.vp_count())
                .map(|v| cx.vp_state(ParentVp(v)))
                .collect(),
            involuntary: cx.involuntary(),
            callback,
            open: true,
            effects: Vec::new(),
        }
    }

    /// Ends the callback: the effects asked for, in order; the object
    /// refuses any further use.
    pub fn close(&mut self) -> Vec<Effect> {
        self.open = false;
        std::mem::take(&mut self.effects)
    }

    fn push(&mut self, e: Effect) -> PyResult<()> {
        self.check()?;
        self.effects.push(e);
        Ok(())
    }

    fn check(&self) -> PyResult<()> {
        if self.open {
            Ok(())
        } else {
            Err(PyRuntimeError::new_err(format!(
                "this Cx belonged to a `{}` call at {}ns that has returned; use the cx \
                 passed to the callback that is running",
                self.callback, self.now
            )))
        }
    }
}

#[pymethods]
impl PyCx {
    /// The current time, ns.
    #[getter]
    fn now(&self) -> PyResult<u64> {
        self.check()?;
        Ok(self.now)
    }
    /// Physical CPUs in the machine.
    #[getter]
    fn cpus(&self) -> PyResult<u32> {
        self.check()?;
        Ok(self.cpus)
    }
    /// The platform's clock tick in ns, or `None`.
    #[getter]
    fn tick(&self) -> PyResult<Option<u64>> {
        self.check()?;
        Ok(self.tick)
    }
    /// How many VPs this policy holds from its parents.
    #[getter]
    fn vp_count(&self) -> PyResult<u32> {
        self.check()?;
        Ok(self.vps.len() as u32)
    }
    /// In `vp_release`: whether the child blocked involuntarily.
    #[getter]
    fn involuntary(&self) -> PyResult<bool> {
        self.check()?;
        Ok(self.involuntary)
    }
    /// The state of `vp` as of the start of this callback.
    fn vp_state(&self, vp: u32) -> PyResult<PyVpState> {
        self.check()?;
        Ok(PyVpState {
            inner: self.vps.get(vp as usize).copied().unwrap_or(VpState::Idle),
        })
    }
    /// Arm (or move) the one-shot timer `key` to fire at `at` (ns).
    fn set_timer(&mut self, key: u64, at: u64) -> PyResult<()> {
        self.push(Effect::SetTimer {
            key,
            at: Instant(at),
        })
    }
    /// Disarm timer `key`.
    fn cancel_timer(&mut self, key: u64) -> PyResult<()> {
        self.push(Effect::CancelTimer { key })
    }
    /// Ask the parent for a CPU on `vp`.
    fn request(&mut self, vp: u32) -> PyResult<()> {
        self.push(Effect::Request(ParentVp(vp)))
    }
    /// Stop asking for a CPU on `vp` (or give back the one held).
    fn release(&mut self, vp: u32) -> PyResult<()> {
        self.push(Effect::Release(ParentVp(vp)))
    }
    /// Want `n` CPUs from the parents.
    fn want_cpus(&mut self, n: u32) -> PyResult<()> {
        self.push(Effect::WantCpus(n))
    }
    /// Re-decide the CPU held on `vp` (a `vp_grant` follows).
    fn reschedule(&mut self, vp: u32) -> PyResult<()> {
        self.push(Effect::Reschedule(ParentVp(vp)))
    }
    /// Preempt `child`: re-decide the CPU it runs on.
    fn revoke(&mut self, child: u32) -> PyResult<()> {
        self.push(Effect::Revoke(ChildId(child)))
    }
    /// Send the message `name` with `args` (a dict of bool, int or str) to
    /// the parent this policy holds `vp` from.
    #[pyo3(signature = (vp, name, args=None))]
    fn msg_parent(
        &mut self,
        vp: u32,
        name: String,
        args: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.check()?;
        let args = params_from_py(args, "msg_parent args")?;
        self.push(Effect::MsgParent {
            vp: ParentVp(vp),
            msg: Msg { name, args },
        })
    }
    fn __repr__(&self) -> String {
        format!(
            "Cx({} at {}ns{})",
            self.callback,
            self.now,
            if self.open { "" } else { ", returned" }
        )
    }
}

/// A duration given in Python: integer nanoseconds or text (`"10ms"`).
pub fn duration_from_py(v: &Bound<'_, PyAny>, what: &str) -> PyResult<Duration> {
    if let Ok(ns) = v.extract::<u64>() {
        if !v.is_instance_of::<PyBool>() {
            return Ok(Duration(ns));
        }
    }
    if let Ok(s) = v.extract::<String>() {
        return Duration::parse(&s).map_err(|e| PyTypeError::new_err(format!("{what}: {e}")));
    }
    Err(PyTypeError::new_err(format!(
        "{what}: expected a duration, integer nanoseconds (>= 0) or text such as \"10ms\", got {}",
        v.repr()?
    )))
}
