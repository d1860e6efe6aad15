//! vouch's integration tests: one binary (`cargo test --test it`), one module per area, all
//! driving the real `vouch` executable. One binary links the dependencies once instead of
//! eight times, and every module shares one `common` harness and its `vouch_snapshot!`.
//!
//! To add a test: put it in the module of the command it exercises (a new area gets a new
//! module here). Run the command with `vouch_snapshot!(vouch().args([...]), @"")` and fill the
//! snapshot from the failure's "new results" (or `cargo insta test --accept` where cargo-insta
//! is installed); a table of cases goes into one `snapshot_cases` snapshot, labelled per case.

mod common;

mod attestations;
mod audit;
mod build;
mod cache;
mod cell;
mod cli;
mod cython_cache;
mod dispatch;
mod fetch;
mod flexci;
mod kernel_cache;
mod lock;
mod mutation_pins;
mod profile;
mod provenance;
mod prsign;
mod sdist;
mod stores;
mod toolchain;
mod trust;
mod wheel;
