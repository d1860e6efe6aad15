use std::path::PathBuf;

/// Everything that can go wrong reading, checking or writing a wheel. Each variant names the
/// wheel file and, where there is one, the member at fault.
#[derive(Debug, thiserror::Error)]
pub enum WheelError {
    #[error("cannot read {path:?}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path:?}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path:?} is not a valid zip archive")]
    BadZip {
        path: PathBuf,
        #[source]
        source: zip::result::ZipError,
    },
    #[error("{path:?}: member {member:?} cannot be decompressed")]
    CorruptMember {
        path: PathBuf,
        member: String,
        #[source]
        source: std::io::Error,
    },
    #[error("wheel filename {name:?} is invalid: {reason}")]
    Filename { name: String, reason: String },
    #[error(
        "{path:?}: member {member:?} has an unsafe name ({reason}); members must be relative paths without `..`"
    )]
    UnsafeName {
        path: PathBuf,
        member: String,
        reason: &'static str,
    },
    #[error(
        "{path:?}: member {member:?} cannot be unpacked under that name on Windows or macOS: {rule}"
    )]
    NonPortableName {
        path: PathBuf,
        member: String,
        rule: vouch_core::portable_path::PortableNameError,
    },
    #[error("{path:?}: members {collision}")]
    NameCollision {
        path: PathBuf,
        collision: vouch_core::portable_path::Collision,
    },
    #[error(
        "{path:?}: member {member:?} fails its CRC-32 check: the archive records {expected:08x}, the data has {found:08x}"
    )]
    CrcMismatch {
        path: PathBuf,
        member: String,
        expected: u32,
        found: u32,
    },
    #[error("{path:?} declares a central directory of {size} bytes, over the limit of {limit}")]
    DirectoryTooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("{path:?} declares {count} entries, over the limit of {limit}")]
    TooManyMembers {
        path: PathBuf,
        count: u64,
        limit: usize,
    },
    #[error("{path:?}: member {member:?} appears more than once")]
    DuplicateMember { path: PathBuf, member: String },
    #[error("{path:?}: member {member:?} is a {kind}; a wheel may only hold regular files")]
    NotAFile {
        path: PathBuf,
        member: String,
        kind: &'static str,
    },
    #[error("{path:?}: expected exactly one top-level `{expected}` directory, found {found}")]
    DistInfo {
        path: PathBuf,
        expected: String,
        found: String,
    },
    #[error("{path:?}: missing member {member:?}; every wheel must carry a RECORD")]
    MissingRecord { path: PathBuf, member: String },
    #[error("{path:?}: {member:?} line {line}: {reason}")]
    RecordSyntax {
        path: PathBuf,
        member: String,
        line: usize,
        reason: String,
    },
    #[error("{path:?}: member {member:?} is not listed in RECORD")]
    NotInRecord { path: PathBuf, member: String },
    #[error("{path:?}: RECORD lists {member:?}, which is not in the archive")]
    MissingMember { path: PathBuf, member: String },
    #[error("{path:?}: RECORD lists {member:?} without a hash")]
    MissingHash { path: PathBuf, member: String },
    #[error("{path:?}: RECORD hash of {member:?} uses {algorithm:?}; expected sha256 or stronger")]
    WeakHash {
        path: PathBuf,
        member: String,
        algorithm: String,
    },
    #[error(
        "{path:?}: member {member:?} does not match RECORD: expected {expected}, found {found}"
    )]
    HashMismatch {
        path: PathBuf,
        member: String,
        expected: String,
        found: String,
    },
    #[error(
        "{path:?}: member {member:?} does not match RECORD: expected size {expected}, found {found}"
    )]
    SizeMismatch {
        path: PathBuf,
        member: String,
        expected: u64,
        found: u64,
    },
    #[error("{path:?}: member {member:?} is {size} bytes uncompressed, over the limit of {limit}")]
    TooLarge {
        path: PathBuf,
        member: String,
        size: u64,
        limit: u64,
    },
    #[error("cannot write the normalized wheel {path:?}")]
    ZipWrite {
        path: PathBuf,
        #[source]
        source: zip::result::ZipError,
    },
}
