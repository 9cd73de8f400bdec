//! Users and groups through the system's name service (NSS): `getpwuid_r`,
//! `getgrnam_r`, `getgrgid_r` and `getgrouplist`, by `nix`. The binary
//! links glibc dynamically, so whatever `/etc/nsswitch.conf` names answers:
//! `/etc/passwd` and `/etc/group`, systemd's dynamic users (the service's
//! own), LDAP or SSSD, where an operations team's groups often live. For
//! the query socket's peers and the journal files' groups.

use std::ffi::CString;

use nix::unistd::{Gid, Uid};

/// A group, as the name service gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Group {
    pub name: String,
    pub gid: u32,
}

/// A user, the fields that are used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct User {
    pub name: String,
    pub uid: u32,
    /// The primary group.
    pub gid: u32,
}

fn group(g: nix::unistd::Group) -> Group {
    Group {
        name: g.name,
        gid: g.gid.as_raw(),
    }
}

/// The group named `name`; `None` when no source knows it (or the lookup
/// failed: a source that does not answer says nothing either way).
pub(crate) fn group_named(name: &str) -> Option<Group> {
    nix::unistd::Group::from_name(name)
        .ok()
        .flatten()
        .map(group)
}

/// The group whose id is `gid`.
pub(crate) fn group_of_id(gid: u32) -> Option<Group> {
    nix::unistd::Group::from_gid(Gid::from_raw(gid))
        .ok()
        .flatten()
        .map(group)
}

/// The user whose id is `uid`.
pub(crate) fn user_of_id(uid: u32) -> Option<User> {
    nix::unistd::User::from_uid(Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| User {
            name: u.name,
            uid: u.uid.as_raw(),
            gid: u.gid.as_raw(),
        })
}

/// Every group `user` belongs to: its primary group `gid` and each group
/// any source lists it in (`getgrouplist`, what `id` and login use: it
/// also finds the memberships of directories that do not enumerate a
/// group's members).
pub(crate) fn groups_of(user: &str, gid: u32) -> Vec<u32> {
    let Ok(name) = CString::new(user) else {
        return Vec::new();
    };
    nix::unistd::getgrouplist(&name, Gid::from_raw(gid))
        .map(|v| v.into_iter().map(Gid::as_raw).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// root and its group are known to every system; what the name
    /// service says matches what `id` says (the same NSS).
    #[test]
    fn users_and_groups_as_the_system_knows_them() {
        let root = user_of_id(0).unwrap();
        assert_eq!((root.name.as_str(), root.uid, root.gid), ("root", 0, 0));
        assert_eq!(group_of_id(0).unwrap().name, "root");
        assert_eq!(group_named("root").unwrap().gid, 0);
        assert!(groups_of("root", 0).contains(&0));
        assert_eq!(group_named("no-such-group-here"), None);
        assert_eq!(user_of_id(4_000_000_000), None);
        assert_eq!(groups_of("bad\0name", 0), Vec::<u32>::new());
        let id = std::process::Command::new("id")
            .args(["-G", "root"])
            .output()
            .unwrap();
        let mut by_id: Vec<u32> = String::from_utf8_lossy(&id.stdout)
            .split_whitespace()
            .map(|g| g.parse().unwrap())
            .collect();
        let mut ours = groups_of("root", 0);
        by_id.sort_unstable();
        ours.sort_unstable();
        ours.dedup();
        assert_eq!(ours, by_id);
    }
}
