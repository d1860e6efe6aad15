//! CPython as an oracle for the unit tests, where it exists.

use std::io::Write as _;
use std::process::{Command, Stdio};

/// Runs `script` with `stdin` through python3 and returns its stdout; `None` (the comparison
/// is skipped, and says so) when there is no python3.
#[allow(clippy::print_stderr)]
pub fn python(script: &str, stdin: &[u8]) -> Option<String> {
    let child = Command::new("python3")
        .args(["-I", "-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("python3 not found: the comparison with CPython is skipped");
            return None;
        }
        Err(e) => panic!("starting python3: {e}"),
    };
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}
