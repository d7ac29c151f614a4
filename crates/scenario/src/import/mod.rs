//! Importers: configurations written for other tools, turned into scenario
//! TOML (`hsched import ...`).

pub mod simso;
