//! Member-level comparison of two wheels (or any two zips).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::{Member, WheelError, read_archive};

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct MemberChange {
    pub name: String,
    /// The decompressed bytes differ.
    pub content: bool,
    /// Unix permission bits `[a, b]`, when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<[Option<String>; 2]>,
    /// Timestamps `[a, b]`, when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<[Option<String>; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<[String; 2]>,
}

#[derive(Clone, Debug, Serialize)]
pub struct WheelDiff {
    /// The two files are byte-identical.
    pub identical: bool,
    pub sha256: [vouch_core::Sha256Digest; 2],
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    pub changed: Vec<MemberChange>,
    /// Same members with the same contents, modes and times, but in another order.
    pub order_differs: bool,
}

impl WheelDiff {
    /// True when nothing member-level differs, though the bytes may (compression, extra
    /// fields, comments).
    pub fn members_identical(&self) -> bool {
        self.only_in_a.is_empty()
            && self.only_in_b.is_empty()
            && self.changed.is_empty()
            && !self.order_differs
    }
}

fn mode_str(m: Option<u32>) -> Option<String> {
    m.map(|m| format!("{m:04o}"))
}

fn compare(a: &Member, b: &Member) -> Option<MemberChange> {
    let content = a.sha256 != b.sha256;
    let mode = (a.unix_mode != b.unix_mode).then(|| [mode_str(a.unix_mode), mode_str(b.unix_mode)]);
    let timestamp = (a.modified != b.modified).then(|| {
        [
            a.modified.map(|t| t.to_string()),
            b.modified.map(|t| t.to_string()),
        ]
    });
    let sha256 = content.then(|| [hex(&a.sha256), hex(&b.sha256)]);
    (content || mode.is_some() || timestamp.is_some()).then(|| MemberChange {
        name: a.name.clone(),
        content,
        mode,
        timestamp,
        sha256,
    })
}

fn hex(d: &[u8; 32]) -> String {
    vouch_core::Sha256Digest::from_bytes(*d).to_string()
}

pub fn diff_wheels(a: &Path, b: &Path) -> Result<WheelDiff, WheelError> {
    let (a, b) = rayon::join(|| read_archive(a), || read_archive(b));
    let (a, b) = (a?, b?);
    let map_a: BTreeMap<&str, &Member> = a.members.iter().map(|m| (m.name.as_str(), m)).collect();
    let map_b: BTreeMap<&str, &Member> = b.members.iter().map(|m| (m.name.as_str(), m)).collect();
    let only_in_a = map_a
        .keys()
        .filter(|k| !map_b.contains_key(*k))
        .map(|k| k.to_string())
        .collect();
    let only_in_b = map_b
        .keys()
        .filter(|k| !map_a.contains_key(*k))
        .map(|k| k.to_string())
        .collect();
    let changed = map_a
        .iter()
        .filter_map(|(name, ma)| map_b.get(name).and_then(|mb| compare(ma, mb)))
        .collect();
    let order_a: Vec<&str> = a.members.iter().map(|m| m.name.as_str()).collect();
    let order_b: Vec<&str> = b.members.iter().map(|m| m.name.as_str()).collect();
    let mut diff = WheelDiff {
        identical: a.sha256 == b.sha256 && a.size == b.size,
        sha256: [a.sha256(), b.sha256()],
        only_in_a,
        only_in_b,
        changed,
        order_differs: false,
    };
    diff.order_differs =
        diff.only_in_a.is_empty() && diff.only_in_b.is_empty() && order_a != order_b;
    Ok(diff)
}
