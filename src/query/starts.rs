//! `starts`: the kubelets' starts (design 5.5) from the store, with the
//! fleet's figures.

use serde::{Deserialize, Serialize};

use super::{Live, QueryError};
use crate::report::starts::{StartOut, StartsSummary};
use crate::store::{StartFilter, Store};

/// The starts asked for, newest first, and the fleet's figures over them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StartList {
    pub starts: Vec<StartOut>,
    pub fleet: StartsSummary,
}

pub(crate) fn starts(
    store: &Store,
    _live: Option<&Live>,
    f: &StartFilter,
) -> Result<StartList, QueryError> {
    let starts: Vec<StartOut> = store.starts(f)?.iter().map(StartOut::new).collect();
    let fleet = StartsSummary::of(&starts);
    Ok(StartList { starts, fleet })
}
