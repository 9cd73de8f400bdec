//! The history: incidents, one incident, nodes, and the acknowledgement
//! the CLI records itself when the service is stopped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Live, QueryError, now, settings};
use crate::report::starts::place_in_starts;
use crate::report::{IncidentOut, views};
use crate::status::AckRequest;
use crate::store::{Filter, Store};
use sentinel_core::time::rfc3339;
use sentinel_core::tracker::{Incident, Status};

/// `incidents`: newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct IncidentList {
    pub incidents: Vec<IncidentOut>,
}

/// `nodes`: a row a node, by name.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct NodeList {
    pub nodes: Vec<NodeRow>,
}

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct NodeRow {
    pub node: String,
    #[serde(default)]
    pub hosts: Vec<String>,
    pub incidents: u64,
    pub open: u64,
    pub retries: u64,
    pub last_trouble_at: Option<String>,
    pub last_verdict: Option<String>,
}

/// The incidents `f` matches, each marked with the silences holding it.
pub(crate) fn incidents(
    store: &Store,
    live: Option<&Live>,
    f: &Filter,
) -> Result<IncidentList, QueryError> {
    let settings = settings(store, live)?;
    let now = now(live);
    // Nothing happened after a time still to come (as journalctl
    // --since tomorrow), open incidents included.
    let incidents = if f.since.is_some_and(|s| s > now) {
        Vec::new()
    } else {
        let mut all = store.incidents(f, &settings)?;
        place_in_starts(&mut all, |h, at| store.start(h, at))?;
        all
    };
    let silences = store.silences()?;
    let incidents = incidents
        .iter()
        .zip(views(&incidents, &settings))
        .map(|(i, o)| o.silenced(i, &silences, now))
        .collect();
    Ok(IncidentList { incidents })
}

/// One incident by its id or a unique prefix of it.
pub(crate) fn incident(
    store: &Store,
    live: Option<&Live>,
    id: &str,
) -> Result<IncidentOut, QueryError> {
    let settings = settings(store, live)?;
    let mut i = find(store, id)?;
    // The phase it opened in, from its start's record.
    place_in_starts(std::slice::from_mut(&mut i), |h, at| store.start(h, at))?;
    let silences = store.silences()?;
    Ok(IncidentOut::new(&i, &settings).silenced(&i, &silences, now(live)))
}

/// Acknowledges an incident in the store. Only while the service is
/// stopped (it answers acknowledgements itself): the record in the store
/// is the open incident it resumes.
pub(crate) fn ack(
    store: &Store,
    live: Option<&Live>,
    a: &AckRequest,
) -> Result<IncidentOut, QueryError> {
    let settings = settings(store, live)?;
    let mut i = find(store, &a.id)?;
    if i.resolved_at.is_some() {
        return Err(QueryError::IncidentResolved(i.id));
    }
    i.ack = Some(sentinel_core::tracker::Ack {
        by: a.by.clone(),
        at: now(live),
        comment: a.comment.clone(),
    });
    store.put_incident(&i)?;
    Ok(IncidentOut::new(&i, &settings))
}

/// An incident by its id or a unique prefix of it.
fn find(store: &Store, id: &str) -> Result<Incident, QueryError> {
    if let Some(i) = store.incident(id)? {
        return Ok(i);
    }
    if !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(QueryError::NoIncident(id.to_string()));
    }
    if id.len() < 4 {
        return Err(QueryError::ShortPrefix(id.to_string()));
    }
    let mut found = store.incidents_with_prefix(id, 2)?;
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(QueryError::NoIncident(id.to_string())),
        _ => Err(QueryError::AmbiguousIncident(id.to_string())),
    }
}

/// One row a node: its incidents, open ones, retries, last trouble.
pub(crate) fn nodes(store: &Store, live: Option<&Live>) -> Result<NodeList, QueryError> {
    let settings = settings(store, live)?;
    let all = store.incidents(&Filter::default(), &settings)?;
    let mut rows: BTreeMap<String, NodeRow> = BTreeMap::new();
    // Newest first: the first seen per node is its last.
    // An endpoint incident is listed under its endpoint, no node's row;
    // its nodes have their own incidents.
    for i in all.iter().filter(|i| !i.kind().of_many_nodes()) {
        let row = rows.entry(i.node.clone()).or_insert_with(|| NodeRow {
            node: i.node.clone(),
            hosts: Vec::new(),
            incidents: 0,
            open: 0,
            retries: 0,
            last_trouble_at: Some(rfc3339(i.last_trouble_at)),
            last_verdict: Some(i.verdict(&settings).as_str().to_string()),
        });
        if let Some(h) = &i.host {
            if !row.hosts.contains(h) {
                row.hosts.push(h.clone());
            }
        }
        row.incidents += 1;
        row.open += u64::from(i.status() == Status::Open);
        row.retries += i.counted_retries();
    }
    Ok(NodeList {
        nodes: rows.into_values().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_name_nothing_are_typed_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&tmp.path().join("store")).unwrap();
        let short = incident(&store, None, "ab").unwrap_err();
        assert!(matches!(short, QueryError::ShortPrefix(_)));
        assert!(
            short.to_string().contains("at least 4 characters"),
            "{short}"
        );
        assert!(matches!(
            incident(&store, None, "not-hex"),
            Err(QueryError::NoIncident(_))
        ));
        assert!(matches!(
            incident(&store, None, "abcd"),
            Err(QueryError::NoIncident(_))
        ));
        let a = AckRequest {
            id: "abcd".into(),
            by: "me".into(),
            comment: String::new(),
        };
        assert!(matches!(
            ack(&store, None, &a),
            Err(QueryError::NoIncident(_))
        ));
        let all = incidents(&store, None, &Filter::default()).unwrap();
        assert!(all.incidents.is_empty());
        assert_eq!(serde_json::to_string(&all).unwrap(), r#"{"incidents":[]}"#);
        assert!(nodes(&store, None).unwrap().nodes.is_empty());
    }
}
