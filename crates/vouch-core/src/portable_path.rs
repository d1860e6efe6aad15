//! Archive member names that every consumer's file system can hold as written.
//!
//! A wheel or sdist is unpacked on Linux, Windows and macOS. A name that Windows cannot create
//! (`CON.py`, `a:b`, `x.`), or two names that a case-insensitive or normalization-insensitive
//! file system (NTFS, APFS, HFS+) folds into one (`pkg/A.py` and `pkg/a.py`, `é` as NFC and
//! as NFD), would unpack to a different tree there than the one that was checked here: one file
//! silently overwrites the other, or the install fails half-way. These are pure functions; each
//! reader applies them to the names it is about to accept.

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
/// the directory itself, derived from the members under it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{first:?} and {second:?} collide: {kind}, one path on Windows and macOS")]
pub struct Collision {
    pub first: String,
    pub second: String,
    pub kind: CollisionKind,
}

/// The key two names share exactly when some consumer's file system makes them one path.
fn fold(component: &str) -> String {
    if component.is_ascii() {
        // ASCII is already in NFC; most names are, and wheels hold tens of thousands.
        return component.to_ascii_lowercase();
    }
    component.to_lowercase().nfc().collect()
}

fn kind_of(a: &str, b: &str) -> CollisionKind {
    if a.nfc().eq(b.nfc()) {
        CollisionKind::Normalization
    } else if a.to_lowercase() == b.to_lowercase() {
        CollisionKind::Case
    } else {
        CollisionKind::CaseAndNormalization
    }
}

/// Finds two entries of an archive that would land on one path: `entries` are `/`-separated
/// relative paths (a trailing `/` is ignored) with whether each is a directory. A directory
/// may be listed any number of times under one spelling, and each entry's parents count as
/// directories, so `pkg/Sub/x.py` collides with `pkg/sub/y.py`, and a file `pkg/x` with
/// `pkg/x/y.py`. Of two colliding entries, `first` is the one listed first.
///
/// Time and memory are linear in the total length of the names (plus a sort): names are
/// compared in folded order, where any two entries whose paths fold to a common directory
/// are separated only by entries under that directory too, so comparing neighbours suffices.
pub fn find_collision<'a>(
    entries: impl IntoIterator<Item = (&'a str, bool)>,
) -> Result<(), Collision> {
    struct Entry<'a> {
        parts: Vec<&'a str>,
        folded: Vec<String>,
        dir: bool,
    }
    let entries: Vec<Entry<'a>> = entries
        .into_iter()
        .map(|(path, dir)| {
            let parts: Vec<&str> = path
                .trim_end_matches('/')
                .split('/')
                .filter(|p| !p.is_empty())
                .collect();
            let folded = parts.iter().map(|p| fold(p)).collect();
            Entry { parts, folded, dir }
        })
        .collect();
    let mut order: Vec<usize> = (0..entries.len())
        .filter(|&i| !entries[i].parts.is_empty())
        .collect();
    // Component-wise order: a path sorts right before everything under it.
    order.sort_by(|&a, &b| entries[a].folded.cmp(&entries[b].folded).then(a.cmp(&b)));
    for pair in order.windows(2) {
        let (i, j) = (pair[0].min(pair[1]), pair[0].max(pair[1]));
        let (a, b) = (&entries[i], &entries[j]);
        let shared = a
            .folded
            .iter()
            .zip(&b.folded)
            .take_while(|(x, y)| x == y)
            .count();
        let collision = |depth: usize, kind| Collision {
            first: a.parts[..depth].join("/"),
            second: b.parts[..depth].join("/"),
            kind,
        };
        if let Some(k) = (0..shared).find(|&k| a.parts[k] != b.parts[k]) {
            return Err(collision(k + 1, kind_of(a.parts[k], b.parts[k])));
        }
        let (la, lb) = (a.parts.len(), b.parts.len());
        let kind = if shared == la && shared == lb {
            match (a.dir, b.dir) {
                (true, true) => continue,
                (false, false) => CollisionKind::Duplicate,
                _ => CollisionKind::FileAndDirectory,
            }
        } else if (shared == la && !a.dir) || (shared == lb && !b.dir) {
            // One is a file, and the other lies under it.
            CollisionKind::FileAndDirectory
        } else {
            continue;
        };
        return Err(Collision {
            first: a.parts.join("/"),
            second: b.parts.join("/"),
            kind,
        });
    }
    Ok(())
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

    fn collision(entries: &[(&str, bool)]) -> Collision {
        find_collision(entries.iter().copied()).unwrap_err()
    }

    #[test]
    fn issue12_case_only_duplicates_collide() {
        let c = collision(&[
            ("pkg/A.py", false),
            ("pkg/b.py", false),
            ("pkg/a.py", false),
        ]);
        assert_eq!(c.kind, CollisionKind::Case);
        assert_eq!(
            (c.first.as_str(), c.second.as_str()),
            ("pkg/A.py", "pkg/a.py")
        );
        assert_eq!(
            c.to_string(),
            "\"pkg/A.py\" and \"pkg/a.py\" collide: names that differ only in case, one path on Windows and macOS"
        );
        // `first` is the one listed first, whatever the sort order.
        let c = collision(&[("pkg/a.py", false), ("pkg/A.py", false)]);
        assert_eq!(
            (c.first.as_str(), c.second.as_str()),
            ("pkg/a.py", "pkg/A.py")
        );
    }

    #[test]
    fn issue12_nfc_nfd_duplicates_collide() {
        let c = collision(&[("pkg/caf\u{e9}.py", false), ("pkg/cafe\u{301}.py", false)]);
        assert_eq!(c.kind, CollisionKind::Normalization);
        let c = collision(&[("pkg/caf\u{e9}.py", false), ("pkg/CAFE\u{301}.py", false)]);
        assert_eq!(c.kind, CollisionKind::CaseAndNormalization);
    }

    #[test]
    fn issue12_directories_collide_through_their_members() {
        let c = collision(&[
            ("pkg/Sub/x.py", false),
            ("pkg/Sub/y.py", false),
            ("pkg/Sub/", true),
            ("pkg/Sub-2/z.py", false),
            ("pkg/sub/z.py", false),
        ]);
        assert_eq!(
            (c.first.as_str(), c.second.as_str()),
            ("pkg/Sub", "pkg/sub")
        );
        assert_eq!(c.kind, CollisionKind::Case);
        // A file where a directory is, whatever sorts between them.
        let c = collision(&[("pkg/x", false), ("pkg/x-1", false), ("pkg/x/y", false)]);
        assert_eq!(c.kind, CollisionKind::FileAndDirectory);
        assert_eq!((c.first.as_str(), c.second.as_str()), ("pkg/x", "pkg/x/y"));
        let c = collision(&[("pkg/x/y", false), ("pkg/X", false)]);
        assert_eq!(c.kind, CollisionKind::Case);
        let c = collision(&[("pkg/x/", true), ("pkg/x", false)]);
        assert_eq!(c.kind, CollisionKind::FileAndDirectory);
        let c = collision(&[("pkg/x", false), ("pkg/x", false)]);
        assert_eq!(c.kind, CollisionKind::Duplicate);
        // The same directory listed twice, and files under it, are fine.
        find_collision([("pkg/", true), ("pkg/", true), ("pkg/a", false)]).unwrap();
    }

    #[test]
    fn issue12_distinct_names_do_not_collide() {
        find_collision(
            [
                "pkg/__init__.py",
                "pkg/a.py",
                "pkg/b.py",
                "pkg/ab.py",
                "pkg/a/b.py",
                "pkg/a-1/b.py",
                "pkg-1.0.dist-info/RECORD",
            ]
            .map(|p| (p, false)),
        )
        .unwrap();
    }

    #[test]
    fn issue12_deep_names_cost_linear_time_and_memory() {
        // 2,000 names of 1,000 one-letter components each: prefix sets would hold a billion
        // bytes; the folded components hold four million.
        let names: Vec<String> = (0..2000)
            .map(|i| format!("{}{i}", "a/".repeat(1000)))
            .collect();
        find_collision(names.iter().map(|n| (n.as_str(), false))).unwrap();
    }
}
