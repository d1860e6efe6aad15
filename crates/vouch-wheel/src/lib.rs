//! The wheel model: filenames and tags (PEP 427/491), RECORD, a strict reader that rejects
//! malformed or lying wheels, a deterministic repack, and a member-level diff; the same
//! deterministic repack for sdists.

mod diff;
mod error;
mod filename;
mod normalize;
mod reader;
mod record;
mod sdist;
mod time;

pub use diff::{MemberChange, WheelDiff, diff_wheels};
pub use error::WheelError;
pub use filename::{WheelFilename, WheelTag};
pub use normalize::{
    DEFAULT_EPOCH, DEFLATE_LEVEL, NormalizeOptions, NormalizeReport, normalize_wheel,
};
pub use reader::{
    Archive, MAX_DIRECTORY_SIZE, MAX_MEMBER_SIZE, MAX_MEMBERS, MAX_RECORD_SIZE, MAX_TOTAL_SIZE,
    Member, WheelContents, read_archive, read_wheel,
};
pub use record::{Record, RecordEntry, record_hash};
pub use sdist::{
    MAX_SDIST_SIZE, SDIST_GZIP_LEVEL, SdistError, SdistKind, SdistMember, SdistReport, diff_sdists,
    normalize_sdist, read_sdist,
};
pub use time::DosTime;
