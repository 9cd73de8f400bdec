//! One file a command (or a few that belong together).

pub(crate) mod assets;
pub(crate) mod check_config;
pub(crate) mod control;
pub(crate) mod query;
pub(crate) mod reload;
pub(crate) mod scan;
pub(crate) mod service;
pub(crate) mod test_email;
