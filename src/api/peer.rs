//! Who is asking on the query socket, and what they may do.
//!
//! The socket's mode (0660, group `systemd-journal`) decides who may connect
//! and so read: whoever may read the kubelet's journal may read what was
//! derived from it. Changing what is delivered (silences, their expiry,
//! acknowledgements, reload) takes more: uid 0 or membership of
//! `[api] admin_group`. The kernel says who the peer is (`SO_PEERCRED`,
//! taken at accept); the author recorded is that uid's user name, never
//! what a request body claims.
//!
//! Users and groups come from the name service ([`crate::users`]: NSS,
//! so an `admin_group` from LDAP or SSSD counts, and a dynamic user has
//! its name).

/// The other end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peer {
    /// A local process, as the kernel saw it when it connected.
    Local { uid: u32, gid: u32 },
    /// Over TCP, or credentials that could not be read: may only read.
    Unknown,
}

/// The user's name and primary gid.
fn passwd_entry(uid: u32) -> Option<(String, u32)> {
    crate::users::user_of_id(uid).map(|u| (u.name, u.gid))
}

/// The group's id.
#[must_use]
pub(crate) fn group_id(name: &str) -> Option<u32> {
    crate::users::group_named(name).map(|g| g.gid)
}

/// Said at start and by `check-config` when `[api] admin_group` names no
/// group the system knows.
#[must_use]
pub(crate) fn missing_admin_group(g: &str) -> Option<String> {
    if g.is_empty() {
        return None;
    }
    group_id(g).is_none().then(|| {
        format!(
            "[api] admin_group {g:?} is no group this system knows (getent group {g} finds \
             nothing): only root may change silences, acknowledge or reload until it exists"
        )
    })
}

/// The user name of `uid`, or `uid N` when no source knows it.
#[must_use]
pub(crate) fn user_name(uid: u32) -> String {
    passwd_entry(uid).map_or_else(|| format!("uid {uid}"), |(name, _)| name)
}

/// The user running this process (the author when the CLI writes the
/// store itself, the service being stopped).
#[must_use]
pub(crate) fn current_user() -> String {
    user_name(rustix::process::getuid().as_raw())
}

/// True when `uid` (whose process had `gid` when it connected) belongs to
/// `group`: by the gid it connected with, or as its user's primary group
/// or a membership any source lists (`getgrouplist`).
#[must_use]
pub(crate) fn member_of(uid: u32, gid: u32, group: &str) -> bool {
    let Some(group_gid) = group_id(group) else {
        return false;
    };
    if gid == group_gid {
        return true;
    }
    match passwd_entry(uid) {
        Some((name, primary)) => {
            primary == group_gid || crate::users::groups_of(&name, primary).contains(&group_gid)
        }
        None => false,
    }
}

/// What a write needs (root, the service's own user, or `admin_group`),
/// and who is asking: the author's name, or the refusal to show (the CLI
/// prints it as it is).
pub(crate) fn authorize(
    peer: Peer,
    admin_group: Option<&str>,
    what: &str,
) -> Result<String, String> {
    let needs = match admin_group {
        Some(g) => format!("{what} need root or membership of group {g}"),
        None => format!("{what} need root ([api] admin_group is not set)"),
    };
    // The service's own user too: `systemctl reload` runs `kubelet-sentinel
    // reload` as the unit's (dynamic) user.
    let own = rustix::process::geteuid().as_raw();
    match peer {
        Peer::Local { uid, .. } if uid == 0 || uid == own => Ok(user_name(uid)),
        Peer::Local { uid, gid } => {
            if admin_group.is_some_and(|g| member_of(uid, gid, g)) {
                Ok(user_name(uid))
            } else {
                Err(format!("{needs}; you are uid {uid} ({})", user_name(uid)))
            }
        }
        Peer::Unknown => Err(format!(
            "{needs}; who is asking could not be told (no peer credentials)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_may_and_strangers_are_told_why_not() {
        assert_eq!(
            authorize(Peer::Local { uid: 0, gid: 0 }, None, "silences"),
            Ok(user_name(0))
        );
        let no = authorize(
            Peer::Local {
                uid: 4_000_000_000,
                gid: 4_000_000_000,
            },
            Some("no-such-group-here"),
            "silences",
        )
        .unwrap_err();
        assert_eq!(
            no,
            "silences need root or membership of group no-such-group-here; you are uid 4000000000 (uid 4000000000)"
        );
        assert!(authorize(Peer::Unknown, None, "reload").is_err());
    }
}
