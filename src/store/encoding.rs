//! How records are written as bytes: JSON, and the records that grow with
//! a fleet deflated (see [`to_record`]); and read back, telling damage from
//! another version's shape (see [`decode`]).

use serde::{Deserialize, Serialize};

pub(super) fn to_json<T: Serialize>(v: &T) -> Vec<u8> {
    // Serializing these plain data types cannot fail (no maps with
    // non-string keys, no custom serializers that error).
    serde_json::to_vec(v).expect("records serialize")
}

/// Records whose JSON is longer are written deflated.
const DEFLATE_OVER: usize = 256;

/// What a deflated record may inflate to: more is damage, not a record.
pub(super) const INFLATE_MAX: u64 = 64 << 20;

/// An incident, an endpoint group's member or a held line as stored: its
/// JSON, as a zlib stream when longer than [`DEFLATE_OVER`]. They are the
/// records that grow with a fleet (an incident is mostly its evidence
/// lines and their cursors, 4 KB of text that deflates to a fifth), and
/// sled keeps every version written until it cleans a segment, so the
/// store at rest is several times what is written: measured on 10 000
/// hosts, 3.5 KiB a host with plain JSON, 2.5 with these deflated (1.9
/// with the host records trimmed too, see `Origin`). A zlib
/// stream starts with `0x78`, which no JSON text does; [`inflate`] tells
/// them apart, so records written plain (by an older version) read as
/// before. The CPU it costs is small beside sled's own (a 4 KB incident
/// deflates in tens of microseconds at the fast level).
///
/// The encoder is kept per thread and reset for each record: a new one
/// allocates its tables (about 300 KB, zeroed) for every record, which
/// cost more than deflating it (callgrind, `run --once` over 400 hosts,
/// 1 450 records: `Compress::new` 0.64G of the commit thread's 1.13G
/// instructions; with the reset, which zeroes them again but allocates
/// nothing, the commits are 0.87G). The bytes written are the same.
pub(super) fn to_record<T: Serialize>(v: &T) -> Vec<u8> {
    let json = to_json(v);
    if json.len() <= DEFLATE_OVER {
        return json;
    }
    thread_local! {
        /// Taken while in use: a panic meanwhile leaves none, not a
        /// stream half written.
        static ENCODER: std::cell::Cell<Option<Encoder>> = const { std::cell::Cell::new(None) };
    }
    let z = ENCODER.take().unwrap_or_else(encoder);
    let (z, out) = deflate(z, &json);
    ENCODER.set(Some(z));
    out
}

type Encoder = flate2::write::ZlibEncoder<Vec<u8>>;

fn encoder() -> Encoder {
    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast())
}

/// `json` as a zlib stream, and the encoder reset for the next one.
fn deflate(mut z: Encoder, json: &[u8]) -> (Encoder, Vec<u8>) {
    use std::io::Write as _;
    *z.get_mut() = Vec::with_capacity(json.len() / 3);
    // Writing into a Vec cannot fail.
    z.write_all(json).expect("in memory");
    z.try_finish().expect("in memory");
    let out = z.reset(Vec::new()).expect("in memory");
    (z, out)
}

/// A stored value's JSON: as it is, or inflated (see [`to_record`]), at
/// most `max` bytes of it.
pub(super) fn inflate(v: &[u8], max: u64) -> Result<std::borrow::Cow<'_, [u8]>, String> {
    use std::io::Read as _;
    if v.first() != Some(&0x78) {
        return Ok(std::borrow::Cow::Borrowed(v));
    }
    let mut out = Vec::with_capacity(v.len() * 4);
    flate2::read::ZlibDecoder::new(v)
        .take(max + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("cannot inflate it: {e}"))?;
    if out.len() as u64 > max {
        return Err(format!("it inflates past {max} bytes"));
    }
    Ok(std::borrow::Cow::Owned(out))
}

/// Why a stored record cannot be read.
pub(super) enum Unreadable {
    /// Its bytes are no record (a stream cut short or inflating past the
    /// bound, JSON cut short or not JSON): damage, set aside.
    Damaged(String),
    /// Well-formed JSON of another shape: written by another version
    /// (a downgrade), refused whole as before, never set aside.
    Foreign(String),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::Damaged(w) | Unreadable::Foreign(w) => f.write_str(w),
        }
    }
}

/// A stored record's value, plain or deflated (see [`to_record`]), or
/// why it cannot be read.
pub(super) fn decode<T: for<'de> Deserialize<'de>>(v: &[u8]) -> Result<T, Unreadable> {
    let v = inflate(v, INFLATE_MAX).map_err(Unreadable::Damaged)?;
    serde_json::from_slice(&v).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => Unreadable::Foreign(e.to_string()),
        serde_json::error::Category::Io
        | serde_json::error::Category::Syntax
        | serde_json::error::Category::Eof => Unreadable::Damaged(e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reused encoder writes the bytes a new one writes, record after
    /// record, and they inflate back.
    #[test]
    fn a_reused_encoder_writes_what_a_new_one_writes() {
        let records: Vec<Vec<String>> = (0..4)
            .map(|n| {
                (0..40 * (n + 1))
                    .map(|i| format!("E1205 08:4{n}:{i:02} kubelet.go:{i}] \"line {i}\" err=\"x\""))
                    .collect()
            })
            .collect();
        for r in &records {
            let json = to_json(r);
            let (_, fresh) = deflate(encoder(), &json);
            assert_eq!(to_record(r), fresh);
            assert_eq!(*inflate(&fresh, INFLATE_MAX).unwrap(), *json);
        }
    }
}
