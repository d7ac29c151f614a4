//! Loading: a scenario read from a file (an rt-app `.json` imported on
//! reading) or from text, parsed against the built-in policies, the
//! plugins the caller and the scenario name, and the caller's policies;
//! then analysed, and refused unless it composes.

use crate::guard::{prepare, RunGuard};
use crate::plugins::{self, Plugins};
use crate::PipelineError;
use hsched_analysis::compose::Analysis;
use hsched_analysis::rules::RuleBook;
use hsched_core::PolicyInfo;
use hsched_model::Scenario;
use std::path::{Path, PathBuf};

/// Where a scenario came from, for its errors and the report's copy of it.
#[derive(Clone, Debug)]
pub enum Origin {
    /// A file (TOML, or an rt-app `.json` imported on reading); the report
    /// shows the file as it is when the report is written.
    File(PathBuf),
    /// Text handed over with the name its messages give it.
    Text { name: String, text: String },
}

impl Origin {
    /// The name messages give the scenario: the path as given, or the
    /// text's name.
    pub fn name(&self) -> String {
        match self {
            Origin::File(path) => path.display().to_string(),
            Origin::Text { name, .. } => name.clone(),
        }
    }
}

/// What a caller adds to the built-in policies.
#[derive(Clone, Default)]
pub struct Extras {
    /// Plugin libraries (`--plugin`), loaded before those the scenario's
    /// `plugins` key names.
    pub plugin_paths: Vec<PathBuf>,
    /// Policies beyond the built-in ones and the plugins' (the Python
    /// package's), by name for the parser and the simulator.
    pub policies: Vec<&'static PolicyInfo>,
    /// Their rows of HLS Table 1, for the analysis: (policy, row).
    pub hls_rules: Vec<(&'static str, String)>,
}

/// A scenario read and parsed, with the plugins it and the caller named
/// (open while this lives) and the caller's policies.
pub struct Loaded {
    pub scenario: Scenario,
    /// The TOML parsed (an rt-app file's import).
    pub text: String,
    pub plugins: Plugins,
    pub origin: Origin,
    extras: Extras,
}

impl Loaded {
    /// Reads and parses the scenario file `path` (an rt-app `.json` is
    /// imported, its warnings on stderr), as `hsched sim FILE` does.
    pub fn from_path(path: &Path, extras: Extras) -> Result<Self, PipelineError> {
        let (text, file) = crate::source::scenario_text(path)?;
        let base = path.parent().unwrap_or(Path::new(""));
        Self::parse(&text, &file, base, Origin::File(path.to_path_buf()), extras)
    }

    /// Parses scenario text; `name` is the file name its errors give (and
    /// its default scenario name, the name's stem). The plugin paths its
    /// `plugins` key names are relative to the current directory.
    pub fn from_text(text: String, name: &str, extras: Extras) -> Result<Self, PipelineError> {
        let origin = Origin::Text {
            name: name.to_string(),
            text: text.clone(),
        };
        Self::parse(&text, name, Path::new(""), origin, extras)
    }

    fn parse(
        text: &str,
        file: &str,
        base: &Path,
        origin: Origin,
        extras: Extras,
    ) -> Result<Self, PipelineError> {
        let declared = hsched_scenario::plugins(text, file).map_err(PipelineError::Scenario)?;
        let mut plugins = plugins::load(&extras.plugin_paths)?;
        for (i, p) in declared.iter().enumerate() {
            plugins.add(&base.join(p), &format!("{file}: plugins[{i}]: "))?;
        }
        let registry: Vec<PolicyInfo> = plugins
            .registry()
            .into_iter()
            .chain(extras.policies.iter().map(|i| **i))
            .collect();
        let scenario = hsched_scenario::parse_with_registry(text, file, &registry)
            .map_err(PipelineError::Scenario)?;
        Ok(Loaded {
            scenario,
            text: text.to_string(),
            plugins,
            origin,
            extras,
        })
    }

    /// The name messages give the scenario.
    pub fn file(&self) -> String {
        self.origin.name()
    }

    /// The policies beyond the built-in ones, for the simulator: the
    /// plugins', then the caller's.
    pub fn infos(&self) -> Vec<&'static PolicyInfo> {
        let mut infos = self.plugins.infos();
        infos.extend(self.extras.policies.iter().copied());
        infos
    }

    /// The standard guarantee rules, each plugin policy's declared row of
    /// HLS Table 1 and the caller's rows.
    pub fn rule_book(&self) -> Result<RuleBook, PipelineError> {
        let mut book = self.plugins.rule_book()?;
        crate::guard::add_rules(&mut book, &self.extras.hls_rules)?;
        Ok(book)
    }

    /// The labelled hierarchy, as `hsched check` analyses it (a scheduler
    /// from the literature is analysed, not refused).
    pub fn analysis(&self) -> Result<Analysis, PipelineError> {
        Ok(hsched_analysis::compose::analyse(
            &self.scenario,
            &self.rule_book()?,
        ))
    }

    /// The analysis a run starts from, with the guard that re-analyses each
    /// change while it runs ([`prepare`]): refused unless the hierarchy
    /// composes or `allow_uncomposed`. With `allow_uncomposed`, the second
    /// value is why it does not compose (for the caller's warning).
    pub fn to_run(
        &self,
        allow_uncomposed: bool,
    ) -> Result<(RunGuard, Option<String>), PipelineError> {
        prepare(
            &self.file(),
            &self.scenario,
            self.rule_book()?,
            allow_uncomposed,
        )
    }
}
