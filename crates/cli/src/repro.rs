//! placeholder
use crate::CliError;
pub fn command(_name: Option<&str>, _list: bool, _all: bool) -> Result<(), CliError> { Ok(()) }
