//! Runs the local Sigstore instance for scripts (benchmarks, manual tries): writes
//! `trusted_root.json` and a GitHub Actions-shaped `token.jwt` (push to `main` of the given
//! repository) into DIR, prints the URL, and serves until stdin closes.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Read as _;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(repo), Some(sha)) = (args.next(), args.next(), args.next()) else {
        eprintln!("usage: vouch-testsig DIR OWNER/REPO SHA   (serves until stdin closes)");
        std::process::exit(2);
    };
    let sigstore = vouch_testsig::LocalSigstore::start();
    let dir = std::path::Path::new(&dir);
    std::fs::create_dir_all(dir).expect("create dir");
    std::fs::write(
        dir.join("trusted_root.json"),
        sigstore.trusted_root().to_string(),
    )
    .expect("write root");
    let claims = vouch_testsig::GithubClaims::push(&repo, &sha);
    std::fs::write(dir.join("token.jwt"), sigstore.mint_token(&claims)).expect("write token");
    println!("{}", sigstore.url);
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
