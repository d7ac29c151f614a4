//! The schedulers "from the literature" of Table 1 (Regehr & Stankovic,
//! HLS, §5.1, lower part), as data in the paper's notation, so that a
//! hierarchy naming them can be analysed (`hsched check`). They cannot run:
//! the scenario parser accepts them through [`find`] (a [`PolicyInfo`]
//! whose `build` refuses), and `hsched sim` refuses a scenario that names
//! one ([`refuse_to_run`]).
//!
//! A child of a literature scheduler says what it is promised with the
//! attachment key `guarantee` (e.g. `at = { guarantee = "RESBH 5, 33" }`);
//! [`super::notation::eval_row`] checks the promises against the row.
//!
//! Policy names are the paper's, in lower case, with spaces and `/` as `-`
//! (`Win 2000` is `win-2000`, `Rialto/NT` is `rialto-nt`). SFQ and Rialto
//! are implemented here (`sfq`, `rialto`): their built-in rules apply.

use crate::rules::RuleBook;
use hsched_core::{ParamKind, ParamSpec, Params, PolicyInfo, Scheduler, Value};
use hsched_model::Scenario;

/// One line of the lower part of Table 1.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// As the paper names them.
    pub paper: &'static str,
    /// The policy names a scenario uses.
    pub policies: &'static [&'static str],
    /// The row, in the paper's notation.
    pub row: &'static str,
    /// The paper's justification, in short (§5.1, "Schedulers From the
    /// Literature").
    pub why: &'static str,
}

/// Table 1, lower part, as printed (§5.1).
pub const TABLE: &[Entry] = &[
    Entry {
        paper: "BSS-I, PShED",
        policies: &["bss-i", "pshed"],
        row: "ALL -> RESU+, RESU -> RESU+",
        why: "provide uniformly slower processors to other schedulers",
    },
    Entry {
        paper: "CBS",
        policies: &["cbs"],
        row: "ALL -> RESBH+, RESU -> RESBH+",
        why: "the constant bandwidth server behaves as a basic hard reservation; deadline based, so it can run on a USP",
    },
    Entry {
        paper: "EEVDF",
        policies: &["eevdf"],
        row: "ALL -> PSBE+, RESU -> PSBE+",
        why: "proportional share with bounded error (the quantum); not shown to work on less than the whole processor",
    },
    Entry {
        paper: "Linux, Win 2000",
        policies: &["linux", "win-2000"],
        row: "NULL -> NULL+",
        why: "time sharing: no guarantees",
    },
    Entry {
        paper: "Lottery, Stride",
        policies: &["lottery", "stride"],
        row: "PS -> PS+, RESU -> PS+",
        why: "proportional share without a bound on the allocation error; shown to work hierarchically",
    },
    Entry {
        paper: "Resource Kernel",
        policies: &["resource-kernel"],
        row: "ALL -> (RESBS+, RESBH+), RESU -> (RESBS+, RESBH+)",
        why: "hard and soft reservations; designed as a root scheduler, adaptable to a USP (it keeps deadlines to replenish budgets)",
    },
    Entry {
        paper: "Rialto, Rialto/NT",
        policies: &["rialto", "rialto-nt"],
        row: "ALL -> RESCS+, RESU -> RESCS+",
        why: "continuous reservations from a static schedule; adaptable to a USP",
    },
    Entry {
        paper: "SFQ",
        policies: &["sfq"],
        row: "PS -> PS+, PSBE -> PSBE+, RESU -> PSBE+",
        why: "start-time fair queuing: fair hierarchically (Goyal et al.); FC servers in, FC servers out",
    },
    Entry {
        paper: "SFS",
        policies: &["sfs"],
        row: "PS+ -> PS+, RESU+ -> PS+",
        why: "a multiprocessor proportional-share scheduler without a bounded error",
    },
    Entry {
        paper: "Spring",
        policies: &["spring"],
        row: "ALL -> RESBH+, RESU -> RESBH+",
        why: "deadline-based hard real-time guarantees; can use a USP",
    },
    Entry {
        paper: "TBS",
        policies: &["tbs"],
        row: "ALL -> RESBS+, RESU -> RESBS+",
        why: "the total bandwidth server: a minimum fraction plus slack, so soft reservations; deadline based",
    },
];

fn no_params() -> Vec<ParamSpec> {
    Vec::new()
}

fn child_params() -> Vec<ParamSpec> {
    vec![ParamSpec::new(
        "guarantee",
        ParamKind::Str,
        "what this child is promised, as the HLS paper writes it (e.g. \"RESBH 5, 33\"); empty: nothing (NULL)",
    )
    .with_default(Value::Str(String::new()))]
}

fn cannot_run(_params: &Params) -> Result<Box<dyn Scheduler>, String> {
    Err(
        "a scheduler from the literature (HLS Table 1), known to the analysis only: it cannot run"
            .into(),
    )
}

macro_rules! literature_policy {
    ($name:literal, $paper:literal, $row:literal) => {
        PolicyInfo {
            name: $name,
            summary: concat!(
                $paper,
                " from the literature (HLS Table 1: ",
                $row,
                "), known to the analysis only"
            ),
            doc: concat!(
                "Regehr & Stankovic, HLS, Table 1 and section 5.1. `hsched check` analyses a \
                 hierarchy naming it with the row ",
                $row,
                "; each child says what it is promised with the attachment key `guarantee`. \
                 It cannot run: `hsched sim` refuses it."
            ),
            params: no_params,
            child_params,
            build: cannot_run,
            max_parents: 1,
            max_children: u32::MAX,
        }
    };
}

/// The literature schedulers as policies a scenario may name (for the
/// analysis only). Kept in step with [`TABLE`] by a test.
static INFOS: &[PolicyInfo] = &[
    literature_policy!("bss-i", "BSS-I", "ALL -> RESU+, RESU -> RESU+"),
    literature_policy!("pshed", "PShED", "ALL -> RESU+, RESU -> RESU+"),
    literature_policy!("cbs", "CBS", "ALL -> RESBH+, RESU -> RESBH+"),
    literature_policy!("eevdf", "EEVDF", "ALL -> PSBE+, RESU -> PSBE+"),
    literature_policy!("linux", "Linux", "NULL -> NULL+"),
    literature_policy!("win-2000", "Windows 2000", "NULL -> NULL+"),
    literature_policy!("lottery", "Lottery", "PS -> PS+, RESU -> PS+"),
    literature_policy!("stride", "Stride", "PS -> PS+, RESU -> PS+"),
    literature_policy!(
        "resource-kernel",
        "The Resource Kernel",
        "ALL -> (RESBS+, RESBH+), RESU -> (RESBS+, RESBH+)"
    ),
    literature_policy!("rialto-nt", "Rialto/NT", "ALL -> RESCS+, RESU -> RESCS+"),
    literature_policy!("sfs", "SFS", "PS+ -> PS+, RESU+ -> PS+"),
    literature_policy!("spring", "Spring", "ALL -> RESBH+, RESU -> RESBH+"),
    literature_policy!("tbs", "TBS", "ALL -> RESBS+, RESU -> RESBS+"),
];

/// Every literature scheduler a scenario may name.
pub fn infos() -> &'static [PolicyInfo] {
    INFOS
}

/// The literature scheduler called `name`, if it is one.
pub fn find(name: &str) -> Option<&'static PolicyInfo> {
    INFOS.iter().find(|p| p.name == name)
}

/// `Err` naming the first scheduler of `scn` that is from the literature
/// (it cannot run), with what to do instead.
pub fn refuse_to_run(scn: &Scenario) -> Result<(), String> {
    match scn.schedulers.iter().find(|s| find(&s.policy).is_some()) {
        None => Ok(()),
        Some(s) => Err(format!(
            "scheduler `{}`: `{}` is a scheduler from the literature known to the analysis only (HLS Table 1): `hsched check` analyses it, but it cannot run",
            s.name, s.policy
        )),
    }
}

/// The rows of every literature policy name, as the standard rule book has
/// them (for `hsched policies`-like listings and tests).
pub fn rows(book: &RuleBook) -> Vec<(&'static str, String)> {
    INFOS
        .iter()
        .filter_map(|p| book.get(p.name).map(|r| (p.name, r.row().to_string())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::notation::Row;

    #[test]
    fn the_policy_list_and_the_table_agree() {
        for info in INFOS {
            let entry = TABLE
                .iter()
                .find(|e| e.policies.contains(&info.name))
                .unwrap_or_else(|| panic!("{} is not in TABLE", info.name));
            assert!(info.summary.contains(entry.row), "{}", info.name);
            assert!((info.build)(&Params::new()).is_err());
            assert_eq!((info.child_params)()[0].name, "guarantee");
        }
        for e in TABLE {
            Row::parse(e.row).unwrap_or_else(|err| panic!("{}: {err}", e.paper));
            for p in e.policies {
                assert!(
                    find(p).is_some() || ["sfq", "rialto"].contains(p),
                    "{p} has no policy entry"
                );
            }
        }
        let book = RuleBook::standard();
        assert_eq!(rows(&book).len(), INFOS.len());
    }
}
