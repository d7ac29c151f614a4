//! The messages a `bvt` node answers: `warp`, `set` (a child's
//! parameters) and `info`.

use super::{child_params, Bvt, State};
use hsched_core::{ChildId, Cx, Msg, Params, Sender, Value};

impl Bvt {
    /// The child a message is about: the sender, or the one it names.
    pub(super) fn target(&self, from: Sender, msg: &Msg) -> Result<ChildId, String> {
        let child = match (from.child, msg.args.get("child")) {
            (Some(c), _) => c,
            (None, Some(Value::Int(i))) => ChildId(u32::try_from(*i).map_err(|_| "bad `child`")?),
            (None, _) => return Err(format!("`{}` needs `child`", msg.name)),
        };
        match self.children.contains(child) {
            true => Ok(child),
            false => Err(format!("{child} is not a child of this scheduler")),
        }
    }

    pub(super) fn msg_warp(
        &mut self,
        cx: &mut Cx,
        from: Sender,
        msg: &Msg,
    ) -> Result<Params, String> {
        let Some(child) = from.child else {
            return Err("`warp` comes from a thread of this scheduler or a child scheduler".into());
        };
        let on = match msg.args.get("on") {
            Some(Value::Bool(b)) => *b,
            _ => return Err("`warp` needs `on` (a bool)".into()),
        };
        let mut direct = Params::new();
        for (k, v) in msg.args.iter() {
            match k {
                "on" => {}
                "warp" => direct.set("warp", v.clone()),
                "limit" => direct.set("warp_limit", v.clone()),
                _ => return Err(format!("`warp` takes `on`, `warp`, `limit`, not `{k}`")),
            }
        }
        if !direct.is_empty() && from.thread.is_some() {
            return Err("a thread cannot choose its warp value (`set` changes it)".into());
        }
        let now = cx.now();
        if !on {
            self.children[child].want = false;
            self.cancel_rewarp(cx, child);
            let old = self.unwarp(cx, child, now, false);
            self.evt_changed(cx, child, old, now);
            self.children[child].direct = None;
        } else {
            let c = &mut self.children[child];
            c.want = true;
            if !direct.is_empty() {
                if direct.get("warp").is_none() {
                    direct.set("warp", Value::Int(c.warp));
                }
                if direct.get("warp_limit").is_none() {
                    direct.set("warp_limit", Value::Duration(c.limit));
                }
                let d = direct.resolve(&child_params())?;
                let d = Some((d.int("warp"), d.duration("warp_limit")));
                if c.direct != d && c.warped {
                    // Another thread's warp: a fresh episode budget.
                    let old = c.evt();
                    c.direct = d;
                    c.warp_left = Some(c.limit_value()).filter(|l| !l.is_zero());
                    let running = matches!(c.state, State::Running(_));
                    self.set_limit_timer(cx, child, now, running);
                    self.evt_changed(cx, child, old, now);
                }
                self.children[child].direct = d;
            }
            self.try_warp(cx, child, now);
        }
        Ok(Params::new().with("warped", Value::Bool(self.children[child].warped)))
    }

    pub(super) fn msg_set(
        &mut self,
        cx: &mut Cx,
        from: Sender,
        msg: &Msg,
    ) -> Result<Params, String> {
        let child = self.target(from, msg)?;
        let mut given = msg.args.clone();
        given.0.retain(|(k, _)| k != "child");
        let p = given.resolve(&child_params())?;
        let now = cx.now();
        let c = &mut self.children[child];
        let old = c.evt();
        for (k, _) in given.iter() {
            match k {
                "advance" => c.advance = p.int(k) as u64,
                "warp" => c.warp = p.int(k),
                "warp_limit" => {
                    c.limit = p.duration(k);
                    if c.warped && c.direct.is_none() {
                        let left = c.warp_left.map_or(c.limit, |l| l.min(c.limit));
                        c.warp_left = Some(left).filter(|_| !c.limit.is_zero());
                    }
                }
                "unwarp" => c.unwarp = p.duration(k),
                _ => c.want = p.bool(k),
            }
        }
        if let State::Running(vp) = c.state {
            cx.reschedule(vp); // re-makes its countdown and limit timer
        }
        if !c.want {
            self.unwarp(cx, child, now, false);
        }
        self.cancel_rewarp(cx, child);
        if self.children[child].runnable() {
            self.begin_warp(cx, child, now);
        }
        let running = matches!(self.children[child].state, State::Running(_));
        self.set_limit_timer(cx, child, now, running); // its budget may have changed
        self.evt_changed(cx, child, old, now);
        Ok(Params::new())
    }

    pub(super) fn msg_info(&self, from: Sender, msg: &Msg) -> Result<Params, String> {
        let big = |v: i128| Value::Int(v.clamp(i64::MIN.into(), i64::MAX.into()) as i64);
        let mut p = Params::new().with("svt", big(self.svt));
        if from.child.is_some() || msg.args.get("child").is_some() {
            let c = &self.children[self.target(from, msg)?];
            p.set("avt", big(c.avt));
            p.set("evt", big(c.evt()));
            p.set("warped", Value::Bool(c.warped));
            p.set("want", Value::Bool(c.want));
        }
        Ok(p)
    }
}
