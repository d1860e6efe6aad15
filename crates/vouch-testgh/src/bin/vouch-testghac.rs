//! Serves the GitHub Actions cache service double for scripts (benchmarks) until stdin
//! closes. Prints, one `NAME=value` line each (a shell can `eval` them):
//!   ACTIONS_RESULTS_URL    the service URL
//!   VOUCH_GHAC_MAIN_TOKEN  a push run on main: writes and reads refs/heads/main
//!   VOUCH_GHAC_PR_TOKEN    a pull_request run of PR 7: writes refs/pull/7/merge, reads it,
//!                          then refs/heads/main
//!   VOUCH_GHAC_READ_TOKEN  reads refs/heads/main, writes nothing (a token without write scope)
//! then an empty line. `--quota BYTES` sets the repository's size cap.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{Read as _, Write as _};

use vouch_testgh::cache::GhaCache;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut builder = GhaCache::builder();
    match args.as_slice() {
        [] => {}
        [flag, bytes] if flag == "--quota" => match bytes.parse() {
            Ok(b) => builder = builder.quota(b),
            Err(_) => {
                eprintln!("vouch-testghac: --quota {bytes:?} is not a number of bytes");
                std::process::exit(2);
            }
        },
        _ => {
            eprintln!("usage: vouch-testghac [--quota BYTES]   (serves until stdin closes)");
            std::process::exit(2);
        }
    }
    let cache = builder.start();
    let main = cache.token(Some("refs/heads/main"), &["refs/heads/main"]);
    let pr = cache.token(
        Some("refs/pull/7/merge"),
        &["refs/pull/7/merge", "refs/heads/main"],
    );
    let read = cache.token(None, &["refs/heads/main"]);
    println!("ACTIONS_RESULTS_URL={}", cache.url());
    println!("VOUCH_GHAC_MAIN_TOKEN={main}");
    println!("VOUCH_GHAC_PR_TOKEN={pr}");
    println!("VOUCH_GHAC_READ_TOKEN={read}");
    println!();
    let _ = std::io::stdout().flush();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
