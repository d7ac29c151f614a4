//! Policy plugins, as the command line and the Python package load them: `--plugin PATH` (on `sim`, `live`, `check`
//! and `policies`) and a scenario's top-level `plugins = [...]` key, whose
//! paths are relative to the scenario file. Their policies join the
//! built-in ones by name for the parser and the simulator
//! (`docs/plugins.md`).
//!
//! Every failure is bad input (exit code 2) and names the library: no such
//! file, not a library, not an hsched plugin, built for another plugin ABI
//! (both versions), or a policy name that is built in or given twice.

use crate::PipelineError;
use hsched_core::PolicyInfo;
use hsched_plugin_host::Plugin;
use std::path::{Path, PathBuf};

/// The plugins of one command. Dropping it lets each library close once
/// no instance made from it is left.
#[derive(Debug, Default)]
pub struct Plugins {
    loaded: Vec<Plugin>,
}

impl Plugins {
    /// Loads each library in order; `origin` prefixes errors (e.g. the
    /// scenario key that named it).
    pub fn add(&mut self, path: &Path, origin: &str) -> Result<(), PipelineError> {
        // Opening a named pipe or a device as a library would block for
        // ever or read without end: only a regular file is loaded.
        if let Ok(meta) = std::fs::metadata(path) {
            if !meta.is_file() {
                return Err(PipelineError::Input(format!(
                    "{origin}plugin {}: not a regular file (a plugin is a shared library file)",
                    path.display()
                )));
            }
        }
        let plugin =
            Plugin::load(path).map_err(|e| PipelineError::Input(format!("{origin}{e}")))?;
        for p in plugin.policies() {
            let name = p.info.name;
            if hsched_policies::find(name).is_some() {
                return Err(PipelineError::Input(format!(
                    "{origin}plugin `{}`: policy `{name}` is built in; a plugin cannot \
                     replace it (rename the plugin's policy)",
                    plugin.label()
                )));
            }
            let clash = self.policies().find(|(_, q)| q.name == name);
            if let Some((other, q)) = clash {
                if !std::ptr::eq(q, p.info) {
                    return Err(PipelineError::Input(format!(
                        "{origin}plugin `{}`: policy `{name}` is also in plugin `{other}`",
                        plugin.label()
                    )));
                }
            }
        }
        self.loaded.push(plugin);
        Ok(())
    }

    /// Every plugin policy once, with the label of its library.
    pub fn policies(&self) -> impl Iterator<Item = (&str, &'static PolicyInfo)> {
        let mut seen: Vec<*const PolicyInfo> = Vec::new();
        self.loaded
            .iter()
            .flat_map(|pl| pl.policies().iter().map(move |p| (pl, p)))
            .filter_map(move |(pl, p)| {
                let ptr = p.info as *const PolicyInfo;
                if seen.contains(&ptr) {
                    return None;
                }
                seen.push(ptr);
                Some((pl.label(), p.info))
            })
    }

    /// The HLS Table 1 rule a plugin declares for `policy`, if any.
    pub fn hls_rule(&self, policy: &str) -> Option<&str> {
        self.loaded
            .iter()
            .flat_map(|pl| pl.policies())
            .find(|p| p.info.name == policy)
            .and_then(|p| p.hls_rule.as_deref())
    }

    /// The standard guarantee rules plus each plugin policy's declared row
    /// of HLS Table 1 (a plugin policy without one gets NULL guarantees for
    /// its children, with a warning).
    pub fn rule_book(&self) -> Result<hsched_analysis::rules::RuleBook, PipelineError> {
        let mut book = crate::guard::rule_book();
        let mut added: Vec<*const PolicyInfo> = Vec::new();
        for pl in &self.loaded {
            for p in pl.policies() {
                let Some(rule) = &p.hls_rule else { continue };
                if added.contains(&(p.info as *const PolicyInfo)) {
                    continue; // the same policy through another handle
                }
                added.push(p.info);
                book.add_row(p.info.name, rule).map_err(|e| {
                    PipelineError::Input(format!(
                        "plugin `{}`: its HLS rule for `{}`: {e}",
                        pl.label(),
                        p.info.name
                    ))
                })?;
            }
        }
        Ok(book)
    }

    /// The plugin policies, for `hsched_sim::run_with_policies`.
    pub fn infos(&self) -> Vec<&'static PolicyInfo> {
        self.policies().map(|(_, i)| i).collect()
    }

    /// The built-in registry followed by the plugin policies, for the parser.
    pub fn registry(&self) -> Vec<PolicyInfo> {
        hsched_policies::registry()
            .iter()
            .copied()
            .chain(self.policies().map(|(_, i)| *i))
            .collect()
    }
}

/// Loads the libraries given with `--plugin`.
pub fn load(paths: &[PathBuf]) -> Result<Plugins, PipelineError> {
    let mut plugins = Plugins::default();
    for p in paths {
        plugins.add(p, "")?;
    }
    Ok(plugins)
}

/// A scenario error as the command line shows it: the line, the spot
/// marked, the hint.
pub fn render(e: hsched_scenario::ScenarioError) -> String {
    format!("{:?}", miette::Report::new(e))
}
