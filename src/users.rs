//! Users and groups from `/etc/passwd` and `/etc/group` (not through NSS: a
//! static binary under systemd's sandbox has no NSS modules to load), the
//! files `useradd` and distributions' packages write. The one parser of
//! both, for the query socket's peers and the journal files' groups.

/// One `/etc/group` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Group {
    pub name: String,
    pub gid: u32,
    /// The members it lists (not those whose primary group it is).
    pub members: Vec<String>,
}

/// One `/etc/passwd` line, the fields that are used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct User {
    pub name: String,
    pub uid: u32,
    /// The primary group.
    pub gid: u32,
}

fn parse_group(line: &str) -> Option<Group> {
    let mut f = line.split(':');
    let name = f.next()?.to_string();
    let gid = f.nth(1)?.parse().ok()?;
    let members = f
        .next()
        .unwrap_or("")
        .split(',')
        .filter(|m| !m.is_empty())
        .map(str::to_string)
        .collect();
    Some(Group { name, gid, members })
}

fn parse_user(line: &str) -> Option<User> {
    let mut f = line.split(':');
    let name = f.next()?.to_string();
    let uid = f.nth(1)?.parse().ok()?;
    let gid = f.next()?.parse().ok()?;
    Some(User { name, uid, gid })
}

/// The first group of `text` (`/etc/group`'s format) that `want` picks.
fn find_group(text: &str, want: impl Fn(&Group) -> bool) -> Option<Group> {
    text.lines().filter_map(parse_group).find(|g| want(g))
}

fn find_user(text: &str, uid: u32) -> Option<User> {
    text.lines().filter_map(parse_user).find(|u| u.uid == uid)
}

/// The group named `name`, from `/etc/group`.
pub(crate) fn group_named(name: &str) -> Option<Group> {
    let text = std::fs::read_to_string("/etc/group").ok()?;
    find_group(&text, |g| g.name == name)
}

/// The group whose id is `gid`, from `/etc/group`.
pub(crate) fn group_of_id(gid: u32) -> Option<Group> {
    let text = std::fs::read_to_string("/etc/group").ok()?;
    find_group(&text, |g| g.gid == gid)
}

/// The user whose id is `uid`, from `/etc/passwd`.
pub(crate) fn user_of_id(uid: u32) -> Option<User> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    find_user(&text, uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_name_and_by_id() {
        let text = "root:x:0:\nbroken line\nsystemd-journal:x:190:alice,,bob\nadm:x:4:syslog\n";
        let j = find_group(text, |g| g.name == "systemd-journal").unwrap();
        assert_eq!(j.gid, 190);
        assert_eq!(j.members, ["alice", "bob"]);
        assert_eq!(find_group(text, |g| g.gid == 4).unwrap().name, "adm");
        assert!(find_group(text, |g| g.gid == 0).unwrap().members.is_empty());
        assert_eq!(find_group(text, |g| g.name == "nobody"), None);
    }

    #[test]
    fn users_by_id() {
        let text =
            "root:x:0:0:root:/root:/bin/sh\nalice:x:1000:100::/home/alice:/bin/sh\nbad:x:z:1\n";
        assert_eq!(
            find_user(text, 1000),
            Some(User {
                name: "alice".into(),
                uid: 1000,
                gid: 100
            })
        );
        assert_eq!(find_user(text, 7), None);
    }
}
