//! The one way a file's sha256 is computed: streamed, so a multi-gigabyte toolkit archive
//! never sits in memory.

use std::io::Read;
use std::path::Path;

use crate::{Sha256Digest, Sha256Hasher};

impl Sha256Digest {
    /// The digest of everything `reader` yields, and how many bytes that was.
    pub fn of_reader(reader: impl Read) -> std::io::Result<(Sha256Digest, u64)> {
        let mut hasher = Sha256Hasher::new();
        let size = std::io::copy(
            &mut std::io::BufReader::with_capacity(1 << 20, reader),
            &mut hasher,
        )?;
        Ok((hasher.finish(), size))
    }

    /// The digest of the file at `path`.
    pub fn of_file(path: &Path) -> std::io::Result<Sha256Digest> {
        Ok(Self::of_reader(std::fs::File::open(path)?)?.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_and_bytes_agree() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data = vec![7u8; (1 << 20) + 3];
        std::fs::write(&path, &data).unwrap();
        assert_eq!(
            Sha256Digest::of_file(&path).unwrap(),
            Sha256Digest::of(&data)
        );
        let (d, n) = Sha256Digest::of_reader(&data[..]).unwrap();
        assert_eq!((d, n), (Sha256Digest::of(&data), data.len() as u64));
    }
}
