//! Serves the fake GitHub API over a local artifact store for scripts (benchmarks): prints the
//! URL, serves until stdin closes.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Read as _;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(store), Some(token)) = (args.next(), args.next()) else {
        eprintln!("usage: vouch-testgh STORE_DIR TOKEN   (serves until stdin closes)");
        std::process::exit(2);
    };
    let gh = vouch_testgh::FakeGithub::start(store.into(), &token);
    println!("{}", gh.url);
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
