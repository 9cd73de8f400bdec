//! `journalctl -o json`: one JSON object a line. Field values are strings,
//! arrays of byte values (binary or invalid UTF-8), arrays of those (a field
//! repeated in one entry: the first is kept), or null (too large to show).

use std::io::BufRead;

use serde_json::Value;

use super::export::{entry_from_fields, with_own_time};
use super::{Item, Malformed, SourceError, read_line_bounded};
use sentinel_core::time::{Clock, Placer};

/// The longest line read as JSON: journalctl writes a field of up to
/// 48 KiB as at most six times that.
const MAX_LINE: usize = 4 << 20;

pub(crate) struct JsonReader<R> {
    path: String,
    reader: R,
    line_no: u64,
    buf: Vec<u8>,
    placer: Placer,
    notice: Option<Item>,
}

impl<R: BufRead> JsonReader<R> {
    pub(crate) fn new(path: &str, reader: R, clock: Clock) -> Self {
        Self {
            path: path.to_string(),
            reader,
            line_no: 0,
            buf: Vec::new(),
            placer: Placer::new(clock),
            notice: None,
        }
    }
}

fn field_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.clone().into_bytes()),
        Value::Array(items) if items.iter().all(Value::is_u64) => Some(
            items
                .iter()
                .filter_map(Value::as_u64)
                .map(|b| b as u8)
                .collect(),
        ),
        Value::Array(items) => items.first().and_then(field_bytes),
        _ => None,
    }
}

impl<R: BufRead> Iterator for JsonReader<R> {
    type Item = Result<Item, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(n) = self.notice.take() {
            return Some(Ok(n));
        }
        loop {
            let cut = match read_line_bounded(&mut self.reader, &mut self.buf, MAX_LINE) {
                Ok(None) => return None,
                Ok(Some(cut)) => cut,
                Err(source) => {
                    return Some(Err(SourceError::Io {
                        path: self.path.clone(),
                        source,
                    }));
                }
            };
            self.line_no += 1;
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let place = format!("{}:{}", self.path, self.line_no);
            if cut {
                return Some(Ok(Item::Malformed(Malformed {
                    place,
                    reason: format!("a line longer than {MAX_LINE} bytes is not journalctl's JSON"),
                })));
            }
            let obj = match serde_json::from_slice::<Value>(&self.buf) {
                Ok(Value::Object(map)) => map,
                Ok(_) => {
                    return Some(Ok(Item::Malformed(Malformed {
                        place,
                        reason: "not a JSON object".into(),
                    })));
                }
                Err(e) => {
                    return Some(Ok(Item::Malformed(Malformed {
                        place,
                        reason: format!("invalid JSON: {e}"),
                    })));
                }
            };
            let fields: Vec<(String, Vec<u8>)> = obj
                .iter()
                .filter_map(|(k, v)| field_bytes(v).map(|b| (k.clone(), b)))
                .collect();
            let entry = entry_from_fields(fields.iter().map(|(k, v)| (k.as_bytes(), v.as_slice())));
            return Some(Ok(match entry {
                Some(e) => {
                    let (e, notice) = with_own_time(e, &mut self.placer, place);
                    self.notice = notice;
                    Item::Entry(e)
                }
                None => Item::Malformed(Malformed {
                    place,
                    reason: "no MESSAGE field (or MESSAGE null: over journalctl's size limit)"
                        .into(),
                }),
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_strings_and_byte_arrays() {
        let input = concat!(
            r#"{"__CURSOR":"s=1","__REALTIME_TIMESTAMP":"1700000000000001","_HOSTNAME":"w1","SYSLOG_IDENTIFIER":"kubelet","MESSAGE":"hello"}"#,
            "\n\n",
            r#"{"__REALTIME_TIMESTAMP":"2","MESSAGE":[104,255,10,105]}"#,
            "\nnot json\n",
            r#"{"__REALTIME_TIMESTAMP":"3","MESSAGE":null}"#,
            "\n"
        );
        let clock = Clock {
            zone: sentinel_core::time::Zone::Utc,
            year: None,
            now: 1_800_000_000_000_000,
        };
        let items: Vec<Item> = JsonReader::new("j", input.as_bytes(), clock)
            .map(Result::unwrap)
            .collect();
        assert_eq!(items.len(), 4);
        let Item::Entry(e) = &items[0] else { panic!() };
        assert_eq!(e.message, b"hello");
        assert_eq!(e.at, Some(1_700_000_000_000_001));
        let Item::Entry(e) = &items[1] else { panic!() };
        assert_eq!(e.message, b"h\xff\ni");
        let Item::Malformed(m) = &items[2] else {
            panic!()
        };
        assert_eq!(m.place, "j:4");
        assert!(matches!(&items[3], Item::Malformed(_)));
    }
}
