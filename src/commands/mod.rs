//! One module per command (or family of commands). Each takes its parsed arguments from
//! `cli` and returns an exit status; shared helpers are in `common`. Command modules never
//! import each other: a test in `main.rs` checks it.

pub mod attest;
pub mod audit;
pub mod build;
pub mod cache;
pub mod demo;
pub mod dispatch;
pub mod docs;
pub mod fetch;
pub mod lock;
pub mod plan;
pub mod pr_run;
pub mod sdist;
pub mod toolchain;
pub mod trust;
pub mod verify;
pub mod wheel;
pub mod workflows;
