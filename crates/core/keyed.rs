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
use std::sync::atomic::{AtomicUsize, Ordering};

/// No slot found yet.
const NONE: usize = usize::MAX;

/// A map from host names (`K`: `String` or `Text`) to `V`, iterated in key
/// order like a `BTreeMap` (see the module's doc).
pub struct HostMap<K, V> {
    /// Each key's slot, in key order.
    index: BTreeMap<K, usize>,
    /// The values, with their keys; `None`: free (listed in `free`).
    slots: Vec<Option<(K, V)>>,
    free: Vec<usize>,
    /// The slot found last ([`NONE`]: none); a hint, so relaxed.
    last: AtomicUsize,
}

impl<K, V> Default for HostMap<K, V> {
    fn default() -> Self {
        Self {
            index: BTreeMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            last: AtomicUsize::new(NONE),
        }
    }
}

impl<K: Ord + Borrow<str> + Clone, V> HostMap<K, V> {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// `host`'s slot: the last one found when it is `host`'s, else from
    /// the index.
    fn slot(&self, host: &str) -> Option<usize> {
        let last = self.last.load(Ordering::Relaxed);
        if let Some(Some((k, _))) = self.slots.get(last) {
            if k.borrow() == host {
                return Some(last);
            }
        }
        let i = *self.index.get(host)?;
        self.last.store(i, Ordering::Relaxed);
        Some(i)
    }

    pub fn get(&self, host: &str) -> Option<&V> {
        let i = self.slot(host)?;
        self.slots[i].as_ref().map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, host: &str) -> Option<&mut V> {
        let i = self.slot(host)?;
        self.slots[i].as_mut().map(|(_, v)| v)
    }

    pub fn contains_key(&self, host: &str) -> bool {
        self.slot(host).is_some()
    }

    /// `host`'s value, made by `make` (with the key from `key`) if it has
    /// none: the key is made only then.
    pub fn get_or_insert_with(
        &mut self,
        host: &str,
        key: impl FnOnce() -> K,
        make: impl FnOnce() -> V,
    ) -> &mut V {
        let i = match self.slot(host) {
            Some(i) => i,
            None => self.put(key(), make()),
        };
        match &mut self.slots[i] {
            Some((_, v)) => v,
            None => unreachable!("an indexed slot holds a value"),
        }
    }

    /// Puts a new key's value in a free slot; returns the slot.
    fn put(&mut self, key: K, value: V) -> usize {
        let i = if let Some(i) = self.free.pop() {
            self.slots[i] = Some((key.clone(), value));
            i
        } else {
            self.slots.push(Some((key.clone(), value)));
            self.slots.len() - 1
        };
        self.index.insert(key, i);
        self.last.store(i, Ordering::Relaxed);
        i
    }

    /// Sets `key`'s value; returns the one it had.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if let Some(i) = self.slot(key.borrow()) {
            self.slots[i]
                .as_mut()
                .map(|(_, v)| std::mem::replace(v, value))
        } else {
            self.put(key, value);
            None
        }
    }

    pub fn remove(&mut self, host: &str) -> Option<V> {
        let i = self.index.remove(host)?;
        self.free.push(i);
        self.slots[i].take().map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Key by key, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.index
            .iter()
            .filter_map(|(k, &i)| self.slots[i].as_ref().map(|(_, v)| (k, v)))
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.index.keys()
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }

    /// Key by key, in key order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> {
        let mut values: Vec<Option<&mut V>> = self
            .slots
            .iter_mut()
            .map(|s| s.as_mut().map(|(_, v)| v))
            .collect();
        self.index
            .iter()
            .filter_map(move |(k, &i)| values[i].take().map(|v| (k, v)))
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.slots.iter_mut().flatten().map(|(_, v)| v)
    }

    /// The pairs, in key order.
    pub fn into_sorted(mut self) -> Vec<(K, V)> {
        let index = std::mem::take(&mut self.index);
        index
            .into_values()
            .filter_map(|i| self.slots[i].take())
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
            last: AtomicUsize::new(self.last.load(Ordering::Relaxed)),
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
}
