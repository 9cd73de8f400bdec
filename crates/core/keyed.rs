//! A map keyed by a host name that finds the host it found last with one
//! comparison.
//!
//! Entries come host by host (a collector's workers send a batch of one
//! host's entries at a time), and each entry asks several per-host maps
//! for its host: with 400 hosts, a `BTreeMap` search is a dozen string
//! comparisons each time. [`HostMap`] keeps its values in slots, an ordered
//! index of the keys to the slots (iteration stays in key order), and the
//! slot found last: the next lookup of the same host compares one key.
//! No hashing: nothing here has an order of its own.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// No slot found yet.
const NONE: usize = usize::MAX;

/// Emptied slots kept for their keys, beyond the slots in use, before
/// they are given up (see [`HostMap::remove`]).
const KEPT_EMPTY: usize = 64;

/// A map from host names (`K`: `String` or `Text`) to `V`, iterated in key
/// order like a `BTreeMap` (see the module's doc).
///
/// A key removed keeps its slot (and its place in the index) for a while:
/// a stream's held line is handed on and the next one held under the same
/// key, entry after entry, with no search of the index and no new key.
pub struct HostMap<K, V> {
    /// Each key's slot, in key order (emptied ones too).
    index: BTreeMap<K, usize>,
    /// The keys and their values; `None`: emptied (still indexed), or free
    /// (listed in `free`, no longer indexed).
    slots: Vec<(K, Option<V>)>,
    free: Vec<usize>,
    /// Indexed slots emptied.
    empty: usize,
    /// The indexed slot found last ([`NONE`]: none); a hint, so relaxed.
    last: AtomicUsize,
    /// The key looked for last and not indexed (a host with no value in
    /// this map is asked again entry after entry): answered with one
    /// comparison until a key is added. Its buffer is reused.
    missed: Mutex<Option<String>>,
}

impl<K, V> Default for HostMap<K, V> {
    fn default() -> Self {
        Self {
            index: BTreeMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            empty: 0,
            last: AtomicUsize::new(NONE),
            missed: Mutex::new(None),
        }
    }
}

impl<K: Ord + Borrow<str> + Clone, V> HostMap<K, V> {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// `host`'s indexed slot (emptied or not): the last one found when it
    /// is `host`'s, else from the index.
    #[inline]
    fn slot(&self, host: &str) -> Option<usize> {
        let last = self.last.load(Ordering::Relaxed);
        if let Some((k, _)) = self.slots.get(last) {
            let k: &str = k.borrow();
            // The same shared text (an entry's interned host) needs no
            // comparison of its bytes.
            if std::ptr::eq(k, host) || k == host {
                return Some(last);
            }
        }
        self.look_up(host)
    }

    /// [`Self::slot`] past the last slot found: out of line, so the
    /// common case is a few instructions where it is asked.
    #[cold]
    #[inline(never)]
    fn look_up(&self, host: &str) -> Option<usize> {
        // Poisoned only by a panic between lock and unlock, where nothing
        // panics: the cache is then passed by.
        let mut missed = self.missed.try_lock().ok();
        if let Some(m) = &missed
            && m.as_deref() == Some(host)
        {
            return None;
        }
        let Some(&i) = self.index.get(host) else {
            if let Some(m) = &mut missed {
                let buf = m.get_or_insert_with(String::new);
                buf.clear();
                buf.push_str(host);
            }
            return None;
        };
        self.last.store(i, Ordering::Relaxed);
        Some(i)
    }

    pub fn get(&self, host: &str) -> Option<&V> {
        self.slots[self.slot(host)?].1.as_ref()
    }

    pub fn get_mut(&mut self, host: &str) -> Option<&mut V> {
        let i = self.slot(host)?;
        self.slots[i].1.as_mut()
    }

    pub fn contains_key(&self, host: &str) -> bool {
        self.get(host).is_some()
    }

    /// Sets the value of an indexed slot; returns the one it had.
    fn fill(&mut self, i: usize, value: V) -> Option<V> {
        let old = self.slots[i].1.replace(value);
        if old.is_none() {
            self.empty -= 1;
        }
        old
    }

    /// `host`'s value, made by `make` (with the key from `key`) if it has
    /// none: the key is made only when `host` has no slot.
    pub fn get_or_insert_with(
        &mut self,
        host: &str,
        key: impl FnOnce() -> K,
        make: impl FnOnce() -> V,
    ) -> &mut V {
        let i = match self.slot(host) {
            Some(i) => {
                if self.slots[i].1.is_none() {
                    self.fill(i, make());
                }
                i
            }
            None => self.put(key(), make()),
        };
        match &mut self.slots[i].1 {
            Some(v) => v,
            None => unreachable!("the slot was filled"),
        }
    }

    /// Sets `host`'s value (the key from `key`, made only when `host` has
    /// no slot); returns the one it had.
    pub fn insert_with(&mut self, host: &str, key: impl FnOnce() -> K, value: V) -> Option<V> {
        if let Some(i) = self.slot(host) {
            self.fill(i, value)
        } else {
            self.put(key(), value);
            None
        }
    }

    /// Sets `key`'s value; returns the one it had.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if let Some(i) = self.slot(key.borrow()) {
            self.fill(i, value)
        } else {
            self.put(key, value);
            None
        }
    }

    /// Puts a new key's value in a free slot; returns the slot.
    fn put(&mut self, key: K, value: V) -> usize {
        let i = if let Some(i) = self.free.pop() {
            self.slots[i] = (key.clone(), Some(value));
            i
        } else {
            self.slots.push((key.clone(), Some(value)));
            self.slots.len() - 1
        };
        self.index.insert(key, i);
        self.last.store(i, Ordering::Relaxed);
        if let Ok(m) = self.missed.get_mut() {
            *m = None;
        }
        i
    }

    /// Takes `host`'s value out; its slot stays, emptied, for the next
    /// value of the same key, until more than [`KEPT_EMPTY`] beyond those
    /// in use are: then every emptied slot is given up.
    pub fn remove(&mut self, host: &str) -> Option<V> {
        let i = self.slot(host)?;
        let v = self.slots[i].1.take()?;
        self.empty += 1;
        if self.empty > self.len() + KEPT_EMPTY {
            self.give_up_empty();
        }
        Some(v)
    }

    fn give_up_empty(&mut self) {
        let slots = &self.slots;
        let free = &mut self.free;
        self.index.retain(|_, &mut i| {
            let kept = slots[i].1.is_some();
            if !kept {
                free.push(i);
            }
            kept
        });
        self.empty = 0;
        self.last.store(NONE, Ordering::Relaxed);
    }

    pub fn len(&self) -> usize {
        self.index.len() - self.empty
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Key by key, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.index
            .iter()
            .filter_map(|(k, &i)| self.slots[i].1.as_ref().map(|v| (k, v)))
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }

    /// Key by key, in key order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> {
        let mut values: Vec<Option<&mut V>> =
            self.slots.iter_mut().map(|(_, v)| v.as_mut()).collect();
        self.index
            .iter()
            .filter_map(move |(k, &i)| values[i].take().map(|v| (k, v)))
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.slots.iter_mut().filter_map(|(_, v)| v.as_mut())
    }

    /// The pairs, in key order.
    pub fn into_sorted(mut self) -> Vec<(K, V)> {
        let index = std::mem::take(&mut self.index);
        index
            .into_iter()
            .filter_map(|(k, i)| self.slots[i].1.take().map(|v| (k, v)))
            .collect()
    }

    /// Keeps the pairs `keep` says, asked in key order.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        let gone: Vec<K> = self
            .iter_mut()
            .filter_map(|(k, v)| (!keep(k, v)).then(|| k.clone()))
            .collect();
        for k in gone {
            self.remove(k.borrow());
        }
    }
}

impl<K: Ord + Borrow<str> + Clone, V> FromIterator<(K, V)> for HostMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = Self::default();
        m.extend(iter);
        m
    }
}

impl<K: Ord + Borrow<str> + Clone, V> Extend<(K, V)> for HostMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K: Ord + Borrow<str> + Clone, V: Clone> Clone for HostMap<K, V> {
    fn clone(&self) -> Self {
        Self {
            index: self.index.clone(),
            slots: self.slots.clone(),
            free: self.free.clone(),
            empty: self.empty,
            last: AtomicUsize::new(self.last.load(Ordering::Relaxed)),
            missed: Mutex::new(None),
        }
    }
}

impl<K: Ord + Borrow<str> + Clone, V: PartialEq> PartialEq for HostMap<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<K: Ord + Borrow<str> + Clone, V: Eq> Eq for HostMap<K, V> {}

impl<K: Ord + Borrow<str> + Clone + fmt::Debug, V: fmt::Debug> fmt::Debug for HostMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// As a map in key order (as a `BTreeMap` is).
impl<K: Ord + Borrow<str> + Clone + serde::Serialize, V: serde::Serialize> serde::Serialize
    for HostMap<K, V>
{
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_inserts_removes_in_key_order() {
        let mut m: HostMap<String, u32> = HostMap::new();
        m.insert("b".into(), 2);
        m.insert("a".into(), 1);
        *m.get_or_insert_with("c", || "c".into(), || 0) += 3;
        assert_eq!(m.get("b"), Some(&2));
        assert_eq!(m.get("b"), Some(&2));
        assert_eq!(m.insert("b".into(), 5), Some(2));
        assert_eq!(m.remove("b"), Some(5));
        assert_eq!(m.get("b"), None);
        // The freed slot is reused; the old key is not found in it.
        m.insert("d".into(), 4);
        assert_eq!(m.get("b"), None);
        assert_eq!(m.get("d"), Some(&4));
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        assert_eq!(keys, ["a", "c", "d"]);
        for (_, v) in m.iter_mut() {
            *v *= 10;
        }
        m.retain(|k, _| k != "c");
        assert_eq!(
            m.clone().into_sorted(),
            vec![("a".to_string(), 10), ("d".to_string(), 40)]
        );
        assert_eq!(m, m.clone());
        assert_eq!(format!("{m:?}"), r#"{"a": 10, "d": 40}"#);
    }

    /// A key asked for and missing is remembered as missing, and found
    /// once it is added, whichever way.
    #[test]
    fn a_missing_key_is_found_once_added() {
        let mut m: HostMap<String, u32> = HostMap::new();
        m.insert("a".into(), 1);
        for _ in 0..3 {
            assert_eq!(m.get("b"), None);
        }
        assert_eq!(m.get("a"), Some(&1));
        assert_eq!(m.get("b"), None);
        *m.get_or_insert_with("b", || "b".into(), || 0) += 2;
        assert_eq!(m.get("b"), Some(&2));
        assert_eq!(m.get("c"), None);
        m.extend([("c".to_string(), 3)]);
        assert_eq!(m.get("c"), Some(&3));
        assert_eq!(m.get("d"), None);
        m.insert_with("d", || "d".into(), 4);
        assert_eq!(m.get("d"), Some(&4));
        assert_eq!(m.remove("d"), Some(4));
        assert_eq!(m.get("d"), None);
        m.insert("d".into(), 5);
        assert_eq!(m.get("d"), Some(&5));
    }

    #[test]
    fn an_emptied_slot_keeps_its_key_until_too_many_are_empty() {
        let mut m: HostMap<String, u32> = HostMap::new();
        m.insert("a".into(), 1);
        assert_eq!(m.remove("a"), Some(1));
        assert_eq!(m.remove("a"), None);
        assert!(m.is_empty() && !m.contains_key("a"));
        assert_eq!(m.insert_with("a", || unreachable!(), 2), None);
        assert_eq!(m.len(), 1);
        for n in 0..200u32 {
            let k = format!("k{n}");
            m.insert(k.clone(), n);
            assert_eq!(m.remove(&k), Some(n));
        }
        assert!(m.index.len() <= 1 + 1 + KEPT_EMPTY + 1);
        assert_eq!(m.iter().collect::<Vec<_>>(), [(&"a".to_string(), &2)]);
        m.insert("k7".into(), 7);
        assert_eq!(m.keys().collect::<Vec<_>>(), ["a", "k7"]);
        assert_eq!(m.len(), 2);
    }
}
