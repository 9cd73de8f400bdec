//! Silences: [`list`], [`add`], [`expire`].

use serde::{Deserialize, Serialize};

use super::{Live, QueryError, new_id, now};
use crate::store::{Silence, Store};
use sentinel_core::signals::Cause;
use sentinel_core::time::{Micros, SECOND, rfc3339};
use sentinel_core::tracker::IncidentKind;

/// Longest silence: a month (a forgotten silence must end by itself).
pub(crate) const MAX_SILENCE: u64 = 31 * 24 * 3600;
/// Silences in force (or pending) at a time: more is a mistake or an
/// attack, and every delivery pass matches every one.
pub(crate) const MAX_SILENCES: usize = 1000;
const MAX_TEXT: usize = 1000;

/// `silence add`: what to silence, for how long, who and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewSilence {
    pub node: String,
    #[serde(default)]
    pub cause: Option<Cause>,
    /// Only incidents of this kind; `None`: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<IncidentKind>,
    pub seconds: u64,
    /// Who: the server sets it from the peer's credentials (a body's
    /// value, which older CLIs send, is ignored); the CLI sets it only
    /// when it writes the store itself.
    #[serde(default, skip_serializing)]
    pub by: String,
    #[serde(default)]
    pub comment: String,
}

impl NewSilence {
    fn validate(&self) -> Result<(), QueryError> {
        let invalid = |why: String| Err(QueryError::InvalidSilence(why));
        if self.node.trim().is_empty() || self.node.len() > 253 {
            return invalid("--node: a node name or pattern (worker-*), at most 253 bytes".into());
        }
        if self.node.chars().any(char::is_control) {
            return invalid("--node: no control characters".into());
        }
        if self.seconds == 0 || self.seconds > MAX_SILENCE {
            return invalid(format!("--for: from 1s to {}d", MAX_SILENCE / 86_400));
        }
        if self.comment.len() > MAX_TEXT || self.by.len() > 256 {
            return invalid(format!("--comment: at most {MAX_TEXT} bytes"));
        }
        Ok(())
    }
}

/// `silence list`: active, pending and recently expired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SilenceList {
    pub silences: Vec<SilenceOut>,
}

/// Whether a silence holds now, later, or no more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SilenceState {
    Active,
    /// It starts later.
    Pending,
    Expired,
}

sentinel_core::spelling!(SilenceState {
    Active => "active",
    Pending => "pending",
    Expired => "expired",
});

/// A silence as `silence list` and `status` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SilenceOut {
    pub id: String,
    pub node: String,
    pub cause: Option<Cause>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<IncidentKind>,
    pub state: SilenceState,
    pub starts_at: String,
    pub ends_at: String,
    pub created_by: String,
    pub comment: String,
    /// Ended early by `silence expire`: who, and when.
    #[serde(default)]
    pub expired_by: Option<String>,
    #[serde(default)]
    pub expired_at: Option<String>,
}

impl SilenceOut {
    #[must_use]
    pub(crate) fn new(s: &Silence, now: Micros) -> Self {
        Self {
            id: s.id.clone(),
            node: s.node.clone(),
            cause: s.cause,
            kind: s.kind,
            state: if s.active(now) {
                SilenceState::Active
            } else if now < s.starts_at {
                SilenceState::Pending
            } else {
                SilenceState::Expired
            },
            starts_at: rfc3339(s.starts_at),
            ends_at: rfc3339(s.ends_at),
            created_by: s.created_by.clone(),
            comment: s.comment.clone(),
            expired_by: s.expired_by.clone(),
            expired_at: s.expired_at.map(rfc3339),
        }
    }
}

/// Every silence the store keeps.
pub(crate) fn list(store: &Store, live: Option<&Live>) -> Result<SilenceList, QueryError> {
    let now = now(live);
    let silences = store
        .silences()?
        .iter()
        .map(|s| SilenceOut::new(s, now))
        .collect();
    Ok(SilenceList { silences })
}

/// Adds a silence from now on.
pub(crate) fn add(
    store: &Store,
    live: Option<&Live>,
    n: &NewSilence,
) -> Result<SilenceOut, QueryError> {
    n.validate()?;
    let now = now(live);
    let in_force = store.silences()?.iter().filter(|s| s.ends_at > now).count();
    if in_force >= MAX_SILENCES {
        return Err(QueryError::TooManySilences(in_force));
    }
    let mut s = Silence {
        id: String::new(),
        node: n.node.clone(),
        cause: n.cause,
        kind: n.kind,
        starts_at: now,
        ends_at: now + (n.seconds as Micros) * SECOND,
        created_by: n.by.clone(),
        comment: n.comment.clone(),
        expired_by: None,
        expired_at: None,
    };
    // 64 bits, and never one already taken: the store inserts only where
    // the id is free (one compare-and-swap).
    loop {
        s.id = new_id(&[n.node.as_bytes(), n.by.as_bytes(), &now.to_be_bytes()]);
        if store.silence_insert(&s)? {
            break;
        }
    }
    let matcher = [
        (!s.node.is_empty()).then(|| format!("node {}", s.node)),
        s.cause.map(|c| format!("cause {c}")),
        s.kind.map(|k| format!("kind {k}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    crate::notify::events::Events::from_env().write(&[crate::notify::events::Event::silence(
        &s.id,
        &s.created_by,
        &matcher,
        s.ends_at,
    )]);
    Ok(SilenceOut::new(&s, now))
}

/// Ends a silence now (its id or a unique prefix); `by` who.
pub(crate) fn expire(
    store: &Store,
    live: Option<&Live>,
    id: &str,
    by: &str,
) -> Result<SilenceOut, QueryError> {
    let now = now(live);
    let all = store.silences()?;
    let found: Vec<&Silence> = all.iter().filter(|s| s.id.starts_with(id)).collect();
    match found.as_slice() {
        [] => Err(QueryError::NoSilence(id.to_string())),
        [s] if s.ends_at <= now => Err(QueryError::SilenceEnded(s.id.clone())),
        [s] => {
            let ended = Silence {
                ends_at: now,
                expired_by: Some(by.to_string()),
                expired_at: Some(now),
                ..(*s).clone()
            };
            store.silence_put(&ended)?;
            Ok(SilenceOut::new(&ended, now))
        }
        _ => Err(QueryError::AmbiguousSilence(id.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(node: &str, seconds: u64) -> NewSilence {
        NewSilence {
            node: node.into(),
            cause: Some(Cause::Auth),
            kind: None,
            seconds,
            by: "me".into(),
            comment: "kernel upgrade".into(),
        }
    }

    #[test]
    fn add_list_and_expire_answer_typed_values_or_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&tmp.path().join("store")).unwrap();
        assert!(matches!(
            add(&store, None, &new(" ", 60)),
            Err(QueryError::InvalidSilence(_))
        ));
        assert!(matches!(
            add(&store, None, &new("worker-*", MAX_SILENCE + 1)),
            Err(QueryError::InvalidSilence(_))
        ));
        let s = add(&store, None, &new("worker-*", 60)).unwrap();
        assert_eq!(
            (s.cause, s.state),
            (Some(Cause::Auth), SilenceState::Active)
        );
        assert_eq!(list(&store, None).unwrap().silences, vec![s.clone()]);
        assert!(matches!(
            expire(&store, None, "nope", "me"),
            Err(QueryError::NoSilence(_))
        ));
        let ended = expire(&store, None, &s.id[..6], "you").unwrap();
        assert_eq!(ended.expired_by.as_deref(), Some("you"));
        assert!(matches!(
            expire(&store, None, &s.id, "me"),
            Err(QueryError::SilenceEnded(_))
        ));
    }

    #[test]
    fn a_silence_body_names_its_cause_and_kind_as_the_cli_does() {
        let n: NewSilence = serde_json::from_str(
            r#"{"node":"w","cause":"api-unreachable","kind":"kubelet-down","seconds":5}"#,
        )
        .unwrap();
        assert_eq!(n.cause, Some(Cause::ApiUnreachable));
        assert_eq!(n.kind, Some(IncidentKind::KubeletDown));
        assert!(
            serde_json::from_str::<NewSilence>(r#"{"node":"w","cause":"dns","seconds":5}"#)
                .is_err()
        );
    }
}
