//! vouch's integration tests: one binary (`cargo test --test it`), one module per area, all
//! driving the real `vouch` executable. One binary links the dependencies once instead of
//! eight times, and lets the modules share `common` without `#[allow(dead_code)]` per copy.

mod common;

mod audit;
mod build;
mod cache;
mod cell;
mod fetch;
mod profile;
mod provenance;
mod wheel;
