//! RECORD: the CSV manifest of a wheel, one `path,hash,size` row per member, with the RECORD
//! row itself left without hash and size.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordEntry {
    pub path: String,
    /// `algorithm=urlsafe-base64-nopad`, e.g. `sha256=...`.
    pub hash: Option<String>,
    pub size: Option<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub entries: Vec<RecordEntry>,
}

/// The RECORD hash of some bytes: `sha256=` and the unpadded url-safe base64 digest.
pub fn record_hash(digest: &[u8; 32]) -> String {
    format!("sha256={}", URL_SAFE_NO_PAD.encode(digest))
}

/// A syntax problem with a line number (1-based) for the error message.
#[derive(Debug)]
pub struct RecordSyntaxError {
    pub line: usize,
    pub reason: String,
}

impl Record {
    pub fn parse(data: &[u8]) -> Result<Record, RecordSyntaxError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(data);
        let mut entries = Vec::new();
        for (i, row) in reader.records().enumerate() {
            let line = i + 1;
            let row = row.map_err(|e| RecordSyntaxError {
                line,
                reason: e.to_string(),
            })?;
            if row.len() != 3 {
                return Err(RecordSyntaxError {
                    line,
                    reason: format!("expected 3 fields (path,hash,size), found {}", row.len()),
                });
            }
            let path = row[0].to_owned();
            if path.is_empty() {
                return Err(RecordSyntaxError {
                    line,
                    reason: "empty path".into(),
                });
            }
            let hash = Some(row[1].to_owned()).filter(|h| !h.is_empty());
            if let Some(h) = &hash
                && !h.contains('=')
            {
                return Err(RecordSyntaxError {
                    line,
                    reason: format!("hash {h:?} is not of the form algorithm=digest"),
                });
            }
            let size = if row[2].is_empty() {
                None
            } else {
                Some(row[2].parse::<u64>().map_err(|_| RecordSyntaxError {
                    line,
                    reason: format!("size {:?} is not a non-negative integer", &row[2]),
                })?)
            };
            entries.push(RecordEntry { path, hash, size });
        }
        Ok(Record { entries })
    }

    /// Renders with `\n` line ends and minimal quoting, as Python's csv module does for RECORD.
    pub fn render(&self) -> Vec<u8> {
        let mut writer = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        for e in &self.entries {
            let size = e.size.map(|s| s.to_string()).unwrap_or_default();
            writer
                .write_record([
                    e.path.as_str(),
                    e.hash.as_deref().unwrap_or(""),
                    size.as_str(),
                ])
                .expect("writing to a Vec cannot fail");
        }
        writer.into_inner().expect("writing to a Vec cannot fail")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_quoting() {
        let rec = Record {
            entries: vec![
                RecordEntry {
                    path: "a,b.py".into(),
                    hash: Some(record_hash(&[0; 32])),
                    size: Some(3),
                },
                RecordEntry {
                    path: "x-1.0.dist-info/RECORD".into(),
                    hash: None,
                    size: None,
                },
            ],
        };
        let text = rec.render();
        assert_eq!(
            String::from_utf8(text.clone()).unwrap(),
            "\"a,b.py\",sha256=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,3\nx-1.0.dist-info/RECORD,,\n"
        );
        assert_eq!(Record::parse(&text).unwrap(), rec);
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let err = Record::parse(b"a,sha256=x,1\nb,sha256=y\n").unwrap_err();
        assert_eq!(err.line, 2);
        let err = Record::parse(b"a,nohash,1\n").unwrap_err();
        assert!(err.reason.contains("algorithm=digest"));
        let err = Record::parse(b"a,sha256=x,-1\n").unwrap_err();
        assert!(err.reason.contains("size"));
    }
}
