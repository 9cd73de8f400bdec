//! The byte layouts of the index keys (the table in the module doc says
//! which tree holds which, and who writes it).

use sentinel_core::time::Micros;

/// Big-endian with the sign bit flipped: byte order is time order.
pub(super) fn time_key(t: Micros) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

pub(super) fn node_key(node: &str, opened_at: Micros, id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(node.len() + 1 + 8 + id.len());
    k.extend_from_slice(node.as_bytes());
    k.push(0);
    k.extend_from_slice(&time_key(opened_at));
    k.extend_from_slice(id.as_bytes());
    k
}

/// An endpoint group's member: the group's name, `0x00`, then as
/// [`node_key`] (by opening, then id, within the group).
pub(super) fn member_key(group: &str, opened_at: Micros, id: &str) -> Vec<u8> {
    node_key(group, opened_at, id)
}

/// Every member key of `group` starts so.
pub(super) fn member_prefix(group: &str) -> Vec<u8> {
    let mut k = group.as_bytes().to_vec();
    k.push(0);
    k
}

pub(super) fn by_time_key(opened_at: Micros, id: &str) -> Vec<u8> {
    let mut k = time_key(opened_at).to_vec();
    k.extend_from_slice(id.as_bytes());
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_keys_sort_in_time_order() {
        let ts = [-5i64, 0, 1, 1_700_000_000_000_000];
        let keys: Vec<[u8; 8]> = ts.iter().map(|&t| time_key(t)).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
    }
}
