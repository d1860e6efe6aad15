//! What the cache service knows, apart from any wire format: the tokens it minted, the
//! entries per scope ref, the repository's quota. Semantics after GitHub's "Restrictions for
//! accessing a cache" and "Matching a cache key": a run writes only its own ref and reads its
//! own ref, then the PR's base, then the default branch; within a ref the exact key wins, then
//! each restore key as a prefix (newest first); entries are immutable.

use std::collections::HashMap;

use super::EntryInfo;
use super::blob::Blob;
use super::twirp::{Code, Refusal};

/// The most characters a key may have (toolkit `cache.ts` `checkKey`).
const MAX_KEY_CHARS: usize = 512;
/// The most keys one lookup may name, primary and restore keys together (same file).
const MAX_LOOKUP_KEYS: usize = 10;

/// What one runtime token may do: the real token carries this as its `ac` claim
/// (`[{"Scope":"refs/...","Permission":1|2|3}]`).
#[derive(Clone, Debug)]
pub(super) struct Grant {
    pub write: Option<String>,
    /// Searched in this order.
    pub read: Vec<String>,
}

pub(super) struct Entry {
    pub blob_id: u64,
    pub scope_ref: String,
    pub key: String,
    pub version: String,
    pub upload_sig: String,
    pub download_sig: String,
    pub blob: Blob,
    /// Set by Finalize: from then on the entry is visible and its blob can no longer change.
    pub entry_id: Option<i64>,
}

impl Entry {
    fn is_committed(&self) -> bool {
        self.entry_id.is_some()
    }
}

pub(super) struct Model {
    quota: u64,
    tokens: HashMap<String, Grant>,
    /// Reserved and committed entries, in the order they were created.
    entries: Vec<Entry>,
    next_blob: u64,
    next_entry_id: i64,
}

/// `bytes` random bytes as lowercase hex: tokens and URL signatures.
pub(super) fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the OS random source works");
    hex::encode(buf)
}

fn invalid(msg: String) -> Refusal {
    Refusal::new(Code::InvalidArgument, msg)
}

fn check_key(key: &str) -> Result<(), Refusal> {
    if key.is_empty() {
        return Err(invalid("key is empty; a cache key is required".into()));
    }
    let chars = key.chars().count();
    if chars > MAX_KEY_CHARS {
        return Err(invalid(format!(
            "key {key:?} has {chars} characters; at most {MAX_KEY_CHARS} are allowed"
        )));
    }
    if key.contains(',') {
        return Err(invalid(format!(
            "key {key:?} contains a comma; cache keys cannot contain commas"
        )));
    }
    Ok(())
}

fn check_version(version: &str) -> Result<(), Refusal> {
    if version.is_empty() {
        return Err(invalid(
            "version is empty; a cache version is required".into(),
        ));
    }
    Ok(())
}

impl Model {
    pub fn new(quota: u64) -> Model {
        Model {
            quota,
            tokens: HashMap::new(),
            entries: Vec::new(),
            next_blob: 1,
            next_entry_id: 1,
        }
    }

    pub fn mint(&mut self, grant: Grant) -> String {
        let token = format!("ghac-{}", random_hex(16));
        self.tokens.insert(token.clone(), grant);
        token
    }

    pub fn grant(&self, token: &str) -> Option<Grant> {
        self.tokens.get(token).cloned()
    }

    fn write_ref(grant: &Grant) -> Result<&str, Refusal> {
        grant.write.as_deref().ok_or_else(|| {
            Refusal::new(
                Code::PermissionDenied,
                "this token has no write scope; it can only restore caches".into(),
            )
        })
    }

    /// Reserves (scope, key, version) for an upload and returns the reserved entry.
    pub fn create(&mut self, grant: &Grant, key: &str, version: &str) -> Result<&Entry, Refusal> {
        check_key(key)?;
        check_version(version)?;
        let scope = Self::write_ref(grant)?.to_owned();
        if self
            .entries
            .iter()
            .any(|e| e.scope_ref == scope && e.key == key && e.version == version)
        {
            return Err(Refusal::new(
                Code::AlreadyExists,
                "cache entry with the same key, version, and scope already exists".into(),
            ));
        }
        let blob_id = self.next_blob;
        self.next_blob += 1;
        self.entries.push(Entry {
            blob_id,
            scope_ref: scope,
            key: key.to_owned(),
            version: version.to_owned(),
            upload_sig: random_hex(16),
            download_sig: random_hex(16),
            blob: Blob::default(),
            entry_id: None,
        });
        Ok(self.entries.last().expect("just pushed"))
    }

    /// Commits the reserved entry once its blob holds exactly `size` bytes, then evicts the
    /// oldest committed entries while the repository is over its quota.
    pub fn finalize(
        &mut self,
        grant: &Grant,
        key: &str,
        version: &str,
        size: i64,
    ) -> Result<i64, Refusal> {
        check_key(key)?;
        check_version(version)?;
        let scope = Self::write_ref(grant)?;
        let Some(entry) = self
            .entries
            .iter_mut()
            .find(|e| e.scope_ref == scope && e.key == key && e.version == version)
        else {
            return Err(Refusal::new(
                Code::NotFound,
                format!(
                    "no cache entry with key {key:?} and version {version:?} was reserved in \
                     scope {scope:?}; call CreateCacheEntry first"
                ),
            ));
        };
        if entry.is_committed() {
            return Err(Refusal::new(
                Code::AlreadyExists,
                format!("cache entry with key {key:?} is already finalized; entries are immutable"),
            ));
        }
        let Some(uploaded) = entry.blob.size() else {
            return Err(invalid(format!(
                "nothing was uploaded for key {key:?}; upload the blob before finalizing"
            )));
        };
        if u64::try_from(size).ok() != Some(uploaded) {
            return Err(invalid(format!(
                "size_bytes {size} does not match the {uploaded} bytes uploaded for key {key:?}"
            )));
        }
        let id = self.next_entry_id;
        self.next_entry_id += 1;
        entry.entry_id = Some(id);
        self.evict();
        Ok(id)
    }

    fn used(&self) -> u64 {
        self.committed().map(|e| e.blob.size().unwrap_or(0)).sum()
    }

    fn committed(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.is_committed())
    }

    fn evict(&mut self) {
        while self.used() > self.quota {
            let oldest = self
                .entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| Some((e.entry_id?, i)))
                .min()
                .map(|(_, i)| i);
            match oldest {
                Some(i) => drop(self.entries.remove(i)),
                None => break,
            }
        }
    }

    /// The entry a restore gets, and the key it matched: each read ref in turn, the exact
    /// `key` first, then each restore key as a prefix (newest entry wins).
    pub fn lookup(
        &self,
        grant: &Grant,
        key: &str,
        restore_keys: &[String],
        version: &str,
    ) -> Result<Option<&Entry>, Refusal> {
        check_key(key)?;
        for k in restore_keys {
            check_key(k)?;
        }
        check_version(version)?;
        let keys = 1 + restore_keys.len();
        if keys > MAX_LOOKUP_KEYS {
            return Err(invalid(format!(
                "{keys} keys given (key and restore_keys); at most {MAX_LOOKUP_KEYS} are allowed"
            )));
        }
        for scope in &grant.read {
            let visible = || {
                self.committed()
                    .filter(|e| &e.scope_ref == scope && e.version == version)
            };
            if let Some(e) = visible().find(|e| e.key == key) {
                return Ok(Some(e));
            }
            for prefix in restore_keys {
                if let Some(e) = visible()
                    .filter(|e| e.key.starts_with(prefix.as_str()))
                    .max_by_key(|e| e.entry_id)
                {
                    return Ok(Some(e));
                }
            }
        }
        Ok(None)
    }

    pub fn entry_by_blob(&mut self, blob_id: u64) -> Option<&mut Entry> {
        self.entries.iter_mut().find(|e| e.blob_id == blob_id)
    }

    pub fn entries(&self) -> Vec<EntryInfo> {
        let mut all: Vec<&Entry> = self.committed().collect();
        all.sort_by_key(|e| e.entry_id);
        all.into_iter()
            .map(|e| EntryInfo {
                scope_ref: e.scope_ref.clone(),
                key: e.key.clone(),
                version: e.version.clone(),
                size: e.blob.size().unwrap_or(0),
                entry_id: e.entry_id.unwrap_or(0),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(write: Option<&str>, read: &[&str]) -> Grant {
        Grant {
            write: write.map(str::to_owned),
            read: read.iter().map(|r| (*r).to_owned()).collect(),
        }
    }

    fn commit(m: &mut Model, g: &Grant, key: &str, data: &'static [u8]) -> i64 {
        let id = m.create(g, key, "v").unwrap().blob_id;
        m.entry_by_blob(id)
            .unwrap()
            .blob
            .put_blob(bytes::Bytes::from_static(data));
        m.finalize(g, key, "v", data.len() as i64).unwrap()
    }

    #[test]
    fn restore_keys_prefer_the_own_ref_then_the_newest_match() {
        let mut m = Model::new(1 << 20);
        let main = grant(Some("refs/heads/main"), &["refs/heads/main"]);
        let pr = grant(
            Some("refs/pull/7/merge"),
            &["refs/pull/7/merge", "refs/heads/main"],
        );
        commit(&mut m, &main, "deps-a", b"1");
        commit(&mut m, &main, "deps-b", b"2");
        commit(&mut m, &pr, "deps-pr", b"3");
        let hit = |g: &Grant, key: &str, rk: &[&str]| {
            let rk: Vec<String> = rk.iter().map(|s| (*s).to_owned()).collect();
            m.lookup(g, key, &rk, "v").unwrap().map(|e| e.key.clone())
        };
        assert_eq!(hit(&pr, "deps-x", &["deps-"]).as_deref(), Some("deps-pr"));
        assert_eq!(hit(&main, "deps-x", &["deps-"]).as_deref(), Some("deps-b"));
        // A restore key's match in the own ref beats the exact key in the base ref.
        assert_eq!(hit(&pr, "deps-a", &["deps-"]).as_deref(), Some("deps-pr"));
        assert_eq!(hit(&pr, "deps-a", &[]).as_deref(), Some("deps-a"));
        assert_eq!(hit(&main, "deps-pr", &[]), None);
        assert_eq!(
            m.lookup(&main, "deps-a", &[], "other")
                .unwrap()
                .map(|e| e.entry_id),
            None
        );
    }

    #[test]
    fn a_finalize_over_quota_evicts_the_oldest_committed_entries() {
        let mut m = Model::new(5);
        let g = grant(Some("refs/heads/main"), &["refs/heads/main"]);
        commit(&mut m, &g, "a", b"12");
        commit(&mut m, &g, "b", b"34");
        commit(&mut m, &g, "c", b"56");
        let keys: Vec<String> = m.entries().into_iter().map(|e| e.key).collect();
        assert_eq!(keys, ["b", "c"]);
    }

    #[test]
    fn keys_are_checked_as_the_toolkit_does() {
        let mut m = Model::new(5);
        let g = grant(Some("refs/heads/main"), &[]);
        let long = "k".repeat(513);
        for bad in ["", "a,b", long.as_str()] {
            assert_eq!(
                m.create(&g, bad, "v").err().unwrap().code,
                Code::InvalidArgument
            );
        }
        assert!(m.create(&g, &"k".repeat(512), "v").is_ok());
    }
}
