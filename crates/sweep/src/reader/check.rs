//! The checks across a whole spec: every `${name}` and key path against the
//! base scenario and the parameters.

use super::Reader;
use crate::edit::{self};
use crate::error::{Source, SpecError};
use crate::spec::{Param, Spec};
use hsched_scenario::tree::Node;

impl Reader<'_> {
    /// Every parameter is used (set by key path, named in the base
    /// scenario, or referenced by the generator) and every name used is a
    /// parameter; every key path exists in the base scenario.
    pub(super) fn check_uses(
        &self,
        spec: &Spec,
        root: &Node,
        section: &str,
    ) -> Result<(), SpecError> {
        let param_node = |name: &str| root.get(section).and_then(|t| t.get(name)).unwrap_or(root);
        let mut used: Vec<String> = Vec::new();
        if let Some(base) = &spec.base {
            for (at, name) in edit::placeholders(&base.text) {
                if spec.params.iter().all(|p| p.name != name) {
                    let src = Source {
                        file: &base.file,
                        text: &base.text,
                    };
                    return Err(src.error(
                        &(at..at),
                        "",
                        format!(
                            "`${{{name}}}` names no parameter of the sweep{}",
                            known(&spec.params)
                        ),
                    ));
                }
                used.push(name);
            }
        }
        if let Some(ts) = &spec.taskset {
            for (key, name) in ts.references() {
                if spec.params.iter().all(|p| p.name != name) {
                    // Point at the key itself (`attach.prio`), else the table.
                    let node = key
                        .split('.')
                        .try_fold(root.get("taskset").unwrap_or(root), |n, k| n.get(k))
                        .or(root.get("taskset"))
                        .unwrap_or(root);
                    return Err(self.err(
                        node,
                        &format!("taskset.{key}"),
                        format!(
                            "`${{{name}}}` names no parameter of the sweep{}",
                            known(&spec.params)
                        ),
                    ));
                }
                used.push(name);
            }
        }
        for p in &spec.params {
            if !p.set.is_empty() {
                if spec.base.is_none() {
                    return Err(self.err(
                        param_node(&p.name),
                        &format!("{section}.{}.set", p.name),
                        "`set` writes into the base scenario, and there is none (`scenario = ...`)",
                    ));
                }
                continue;
            }
            if !used.contains(&p.name) {
                return Err(self.err(
                    param_node(&p.name),
                    &format!("{section}.{}", p.name),
                    format!(
                        "parameter `{0}` changes nothing: give it `set = \"key.path\"`, write `${{{0}}}` in the base scenario, or use it in [taskset]",
                        p.name
                    ),
                ));
            }
        }
        // Key paths are checked on the base scenario with the first point's
        // values; a path that exists there exists at every point unless a
        // placeholder changes the document's shape.
        if let Some(base) = &spec.base {
            if spec.params.iter().any(|p| !p.set.is_empty()) {
                let first = crate::points::values_of(spec, 0);
                let text =
                    edit::substitute(&base.text, &spec.param_names(), &first).map_err(|e| {
                        SpecError {
                            file: base.file.clone(),
                            at: None,
                            key: String::new(),
                            message: e,
                        }
                    })?;
                let mut doc: toml_edit::DocumentMut =
                    text.parse().map_err(|e: toml_edit::TomlError| SpecError {
                        file: base.file.clone(),
                        at: None,
                        key: String::new(),
                        message: format!(
                            "invalid TOML (with the first point's values): {}",
                            e.message().trim()
                        ),
                    })?;
                for (p, v) in spec.params.iter().zip(&first) {
                    for (i, path) in p.set.iter().enumerate() {
                        edit::set(&mut doc, path, v).map_err(|e| {
                            let node = param_node(&p.name).get("set").unwrap_or(root);
                            let key = if p.set.len() == 1 {
                                format!("{section}.{}.set", p.name)
                            } else {
                                format!("{section}.{}.set[{i}]", p.name)
                            };
                            self.err(node, &key, format!("{e} in {}", base.file))
                        })?;
                    }
                }
            }
        }
        Ok(())
    }
}

pub(super) fn known(params: &[Param]) -> String {
    if params.is_empty() {
        " (it has none)".into()
    } else {
        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        format!(" (parameters: {})", names.join(", "))
    }
}
