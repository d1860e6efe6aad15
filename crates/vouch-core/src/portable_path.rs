//! Archive member names that every consumer's file system can hold as written.
//!
//! A wheel or sdist is unpacked on Linux, Windows and macOS. A name that Windows cannot create
//! (`CON.py`, `a:b`, `x.`), or two names that a case-insensitive or normalization-insensitive
//! file system (NTFS, APFS, HFS+) folds into one (`pkg/A.py` and `pkg/a.py`, `é` as NFC and
//! as NFD), would unpack to a different tree there than the one that was checked here: one file
//! silently overwrites the other, or the install fails half-way. These are pure functions; each
//! reader applies them to the names it is about to accept.

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization as _;

/// Why one path component cannot be created on every platform.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PortableNameError {
    #[error(
        "component {component:?} is the Windows device name {device}, reserved with any extension and in any case"
    )]
    ReservedName {
        component: String,
        device: &'static str,
    },
    #[error(
        "component {component:?} ends with a dot or a space, which Windows strips from file names"
    )]
    TrailingDotOrSpace { component: String },
    #[error("component {component:?} contains control character {ch:?} (U+{code:04X})")]
    ControlCharacter {
        component: String,
        ch: char,
        code: u32,
    },
    #[error(
        "component {component:?} contains {ch:?}, which is not allowed in Windows file names (none of < > : \" | ? * \\)"
    )]
    ForbiddenCharacter { component: String, ch: char },
}

impl PortableNameError {
    /// A short, stable name for the rule, for JSON output and tests.
    pub fn rule(&self) -> &'static str {
        match self {
            PortableNameError::ReservedName { .. } => "reserved-name",
            PortableNameError::TrailingDotOrSpace { .. } => "trailing-dot-or-space",
            PortableNameError::ControlCharacter { .. } => "control-character",
            PortableNameError::ForbiddenCharacter { .. } => "forbidden-character",
        }
    }
}

/// Windows' reserved device names. `CONIN$`/`CONOUT$` and the superscript-digit ports are
/// reserved too, though rarer in documentation.
const RESERVED: &[&str] = &[
    "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "COM1", "COM2", "COM3", "COM4", "COM5",
    "COM6", "COM7", "COM8", "COM9", "COM¹", "COM²", "COM³", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5",
    "LPT6", "LPT7", "LPT8", "LPT9", "LPT¹", "LPT²", "LPT³",
];

/// Characters Windows refuses in a file name, besides controls. `:` is also the path separator
/// of macOS's Carbon layer, and `\` a separator on Windows.
const FORBIDDEN: &[char] = &['<', '>', ':', '"', '|', '?', '*', '\\'];

/// Checks one path component (no `/` in it).
pub fn check_component(component: &str) -> Result<(), PortableNameError> {
    let owned = || component.to_owned();
    // Every refused character is ASCII, so bytes will do (a UTF-8 continuation byte is never
    // ASCII). Controls first: they are the more alarming finding.
    if let Some(&b) = component.as_bytes().iter().find(|b| b.is_ascii_control()) {
        let ch = char::from(b);
        return Err(PortableNameError::ControlCharacter {
            component: owned(),
            ch,
            code: u32::from(ch),
        });
    }
    if let Some(&b) = component
        .as_bytes()
        .iter()
        .find(|&&b| b.is_ascii() && FORBIDDEN.contains(&char::from(b)))
    {
        return Err(PortableNameError::ForbiddenCharacter {
            component: owned(),
            ch: char::from(b),
        });
    }
    if component.ends_with('.') || component.ends_with(' ') {
        // `.` and `..` are traversal, not portability; the callers refuse them first.
        if component != "." && component != ".." {
            return Err(PortableNameError::TrailingDotOrSpace { component: owned() });
        }
    }
    // Windows matches the device name on the part before the first dot, ignoring the spaces
    // before that dot: `nul.txt`, `Con .py` and `aux.tar.gz` all open the device.
    let stem = component.split('.').next().unwrap_or_default().trim_end();
    // No device name is longer than `CONOUT$`; most stems are, and skip the comparisons.
    if stem.len() > 7 {
        return Ok(());
    }
    if let Some(device) = RESERVED.iter().find(|d| d.eq_ignore_ascii_case(stem)) {
        return Err(PortableNameError::ReservedName {
            component: owned(),
            device,
        });
    }
    Ok(())
}

/// Checks every component of a `/`-separated relative path. Empty components (a directory
/// entry's trailing `/`) are skipped: whether they are allowed is the caller's rule.
pub fn check_path(path: &str) -> Result<(), PortableNameError> {
    path.split('/')
        .filter(|c| !c.is_empty())
        .try_for_each(check_component)
}

/// How two names collide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollisionKind {
    /// The same spelling twice, both files.
    Duplicate,
    /// The same spelling, once as a file and once as a directory.
    FileAndDirectory,
    /// Equal when upper and lower case are the same (Windows, macOS by default).
    Case,
    /// Equal after Unicode normalization (NFC/NFD; macOS, and what a user types).
    Normalization,
    /// Equal only after both.
    CaseAndNormalization,
}

impl std::fmt::Display for CollisionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CollisionKind::Duplicate => "the same name twice",
            CollisionKind::FileAndDirectory => "the same name as a file and as a directory",
            CollisionKind::Case => "names that differ only in case",
            CollisionKind::Normalization => {
                "names that differ only in Unicode normalization (NFC/NFD)"
            }
            CollisionKind::CaseAndNormalization => {
                "names that differ only in case and Unicode normalization"
            }
        })
    }
}

/// Two entries that would land on one path of a case- or normalization-insensitive file system.
/// `first` and `second` are the paths as the archive spells them (for a directory, the path of
/// the directory itself, derived from the member under it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{first:?} and {second:?} collide: {kind}, one path on Windows and macOS")]
pub struct Collision {
    pub first: String,
    pub second: String,
    pub kind: CollisionKind,
}

/// The key two names share exactly when some consumer's file system makes them one path.
fn fold(path: &str) -> String {
    if path.is_ascii() {
        // ASCII is already in NFC; most names are, and wheels hold tens of thousands.
        return path.to_ascii_lowercase();
    }
    path.to_lowercase().nfc().collect()
}

fn nfc(path: &str) -> String {
    path.nfc().collect()
}

#[derive(Debug)]
struct Seen {
    spelling: String,
    dir: bool,
}

/// Every path an archive creates so far, folded, to find the next name that collides.
#[derive(Debug, Default)]
pub struct PathSet {
    seen: HashMap<String, Seen>,
    /// The parent directory of the last path inserted: archives list a directory's files
    /// together, so its ancestors need not be looked up again.
    last_parent: String,
}

impl PathSet {
    pub fn new() -> PathSet {
        PathSet::default()
    }

    /// Records `path` (`/`-separated, relative; a trailing `/` is ignored) as a file or a
    /// directory, and each of its parents as a directory. A directory may be recorded any
    /// number of times under one spelling; anything else that folds to a path already recorded
    /// is a [`Collision`].
    pub fn insert(&mut self, path: &str, is_dir: bool) -> Result<(), Collision> {
        let path = path.trim_end_matches('/');
        let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
        if !parent.is_empty() && parent != self.last_parent {
            let mut end = 0;
            for (i, part) in parent.split('/').enumerate() {
                end += part.len() + usize::from(i > 0);
                self.insert_one(&parent[..end], true)?;
            }
            parent.clone_into(&mut self.last_parent);
        }
        if path.is_empty() {
            return Ok(());
        }
        self.insert_one(path, is_dir)
    }

    fn insert_one(&mut self, path: &str, dir: bool) -> Result<(), Collision> {
        let key = fold(path);
        let Some(seen) = self.seen.get(&key) else {
            self.seen.insert(
                key,
                Seen {
                    spelling: path.to_owned(),
                    dir,
                },
            );
            return Ok(());
        };
        let kind = if seen.spelling == path {
            match (seen.dir, dir) {
                (true, true) => return Ok(()),
                (false, false) => CollisionKind::Duplicate,
                _ => CollisionKind::FileAndDirectory,
            }
        } else if nfc(&seen.spelling) == nfc(path) {
            CollisionKind::Normalization
        } else if seen.spelling.to_lowercase() == path.to_lowercase() {
            CollisionKind::Case
        } else {
            CollisionKind::CaseAndNormalization
        };
        Err(Collision {
            first: seen.spelling.clone(),
            second: path.to_owned(),
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(path: &str) -> Option<&'static str> {
        check_path(path).err().map(|e| e.rule())
    }

    #[test]
    fn issue12_reserved_device_names_in_any_component_case_and_extension() {
        for p in [
            "CON",
            "pkg/con.py",
            "pkg/Nul",
            "AUX/x.py",
            "pkg/prn.tar.gz",
            "pkg/com1.txt",
            "pkg/LPT9",
            "pkg/Lpt5.h",
            "pkg/nul .txt",
            "pkg/COM¹",
            "pkg/conin$",
        ] {
            assert_eq!(rule(p), Some("reserved-name"), "{p}");
        }
        for p in [
            "pkg/console.py",
            "pkg/com10",
            "pkg/com0",
            "pkg/lpt",
            "pkg/nullable.py",
            "pkg/xcon",
            "pkg/_con.py",
        ] {
            assert_eq!(rule(p), None, "{p}");
        }
        let e = check_path("pkg/aux.py").unwrap_err();
        assert_eq!(
            e.to_string(),
            "component \"aux.py\" is the Windows device name AUX, reserved with any extension and in any case"
        );
    }

    #[test]
    fn issue12_trailing_dot_or_space() {
        for p in ["pkg/x.", "pkg./x.py", "pkg/x ", "pkg /x.py", "pkg/x.py."] {
            assert_eq!(rule(p), Some("trailing-dot-or-space"), "{p}");
        }
        for p in ["pkg/.hidden", "pkg/ lead.py", "pkg/a b.py", "pkg/x..y"] {
            assert_eq!(rule(p), None, "{p}");
        }
    }

    #[test]
    fn issue12_colon_and_windows_forbidden_characters() {
        for p in [
            "pkg/a:b.py",
            "C:/x",
            "pkg/x.py:stream",
            "pkg/a<b",
            "pkg/a>b",
            "pkg/a\"b",
            "pkg/a|b",
            "pkg/a?b",
            "pkg/a*b",
            "pkg\\x.py",
        ] {
            assert_eq!(rule(p), Some("forbidden-character"), "{p}");
        }
        let e = check_path("pkg/a:b.py").unwrap_err();
        assert!(e.to_string().contains("\"a:b.py\" contains ':'"), "{e}");
    }

    #[test]
    fn issue12_control_characters() {
        for c in (0u8..0x20).chain([0x7f]) {
            let p = format!("pkg/a{}b.py", c as char);
            assert_eq!(rule(&p), Some("control-character"), "{c:#x}");
        }
        let e = check_path("pkg/a\nb").unwrap_err();
        assert!(e.to_string().contains("U+000A"), "{e}");
        // Non-ASCII is fine: only the ASCII controls are refused by Windows.
        assert_eq!(rule("pkg/caf\u{e9}.py"), None);
        assert_eq!(rule("pkg/\u{65e5}\u{672c}.py"), None);
    }

    #[test]
    fn issue12_directory_entries_skip_the_trailing_slash() {
        assert_eq!(rule("pkg/sub/"), None);
        assert_eq!(rule("pkg/con/"), Some("reserved-name"));
    }

    #[test]
    fn issue12_case_only_duplicates_collide() {
        let mut set = PathSet::new();
        set.insert("pkg/A.py", false).unwrap();
        let c = set.insert("pkg/a.py", false).unwrap_err();
        assert_eq!(c.kind, CollisionKind::Case);
        assert_eq!(
            (c.first.as_str(), c.second.as_str()),
            ("pkg/A.py", "pkg/a.py")
        );
        assert_eq!(
            c.to_string(),
            "\"pkg/A.py\" and \"pkg/a.py\" collide: names that differ only in case, one path on Windows and macOS"
        );
    }

    #[test]
    fn issue12_nfc_nfd_duplicates_collide() {
        let mut set = PathSet::new();
        set.insert("pkg/caf\u{e9}.py", false).unwrap();
        let c = set.insert("pkg/cafe\u{301}.py", false).unwrap_err();
        assert_eq!(c.kind, CollisionKind::Normalization);
        let c = set.insert("pkg/CAFE\u{301}.py", false).unwrap_err();
        assert_eq!(c.kind, CollisionKind::CaseAndNormalization);
    }

    #[test]
    fn issue12_directories_collide_through_their_members() {
        let mut set = PathSet::new();
        set.insert("pkg/Sub/x.py", false).unwrap();
        // Same directory, same spelling: fine, and an explicit directory entry too.
        set.insert("pkg/Sub/y.py", false).unwrap();
        set.insert("pkg/Sub/", true).unwrap();
        let c = set.insert("pkg/sub/z.py", false).unwrap_err();
        assert_eq!(
            (c.first.as_str(), c.second.as_str()),
            ("pkg/Sub", "pkg/sub")
        );
        assert_eq!(c.kind, CollisionKind::Case);
        // A file where a directory is.
        let c = set.insert("pkg/Sub", false).unwrap_err();
        assert_eq!(c.kind, CollisionKind::FileAndDirectory);
        let mut set = PathSet::new();
        set.insert("pkg/x", false).unwrap();
        let c = set.insert("pkg/x/y", false).unwrap_err();
        assert_eq!(c.kind, CollisionKind::FileAndDirectory);
        let c = set.insert("pkg/x", false).unwrap_err();
        assert_eq!(c.kind, CollisionKind::Duplicate);
    }

    #[test]
    fn issue12_distinct_names_do_not_collide() {
        let mut set = PathSet::new();
        for p in [
            "pkg/__init__.py",
            "pkg/a.py",
            "pkg/b.py",
            "pkg/ab.py",
            "pkg/a/b.py",
            "pkg-1.0.dist-info/RECORD",
        ] {
            set.insert(p, false).unwrap();
        }
    }
}
