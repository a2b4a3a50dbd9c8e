//! retrygen: reads an OpenAPI document, decides for every operation whether a failed attempt may
//! be replayed, and emits the same retry policy as source code for six SDK languages.
//!
//! The pipeline flows one way: [`read`] (document -> raw operations) -> [`model`] (classes and
//! policy, no language knowledge) -> [`emit`] (one backend per language) -> [`write`]
//! (atomic writes, or a diff in check mode).

pub mod cli;
pub mod config;
pub mod decide;
pub mod diag;
pub mod diff;
pub mod emit;
pub mod explain;
mod facade;
pub mod model;
pub mod percent;
pub mod read;
pub mod write;

pub use config::Config;
pub use diag::{Diagnostic, Diagnostics, Location};
pub use emit::{Backend, BACKENDS};
pub use facade::{
    check, diff as diff_specs, display_path, generate, load_api, load_spec, model_options, write,
    CheckReport, Error, Plan,
};
pub use model::{Api, ModelOptions, ReplayClass};
pub use write::{Orphan, Planned, Status};
