//! Scenario files (TOML): what an experiment is. The format is documented in
//! `docs/scenarios.md`. Unknown keys and bad values are errors naming the file, the line and
//! the key.
//!
//! Reading a file goes through three steps, one module each:
//!
//! * `schema`: the serde structs of the file, every key as written;
//! * `validate`: the checks that name bad keys, each turning a key into its typed value or
//!   a [`ScenarioError`] (file, line, key); `knobs` does it for `cc` and each controller's
//!   own keys, one file per controller;
//! * `build`: the validated keys turned into a [`Sim`](crate::Sim) with its agents, a
//!   [`Scenario`].
//!
//! Dependencies run one way: `scenario` builds a [`Scenario`] (including its
//! [`Reproduce`] row, a plain description from [`crate::reproduce`]) and knows nothing of
//! running it; [`crate::run`] runs a [`Scenario`] into a [`crate::summary::Summary`]; and
//! [`crate::reproduce`] measures a row on that summary. So `scenario` never imports `run`,
//! and `run` never imports the reproduction measurement.

mod build;
mod knobs;
pub(crate) use knobs::{PGMCC_KNOBS, PRESET_KNOBS};
mod schema;
mod validate;

pub use build::{
    load, load_for_emulation, load_network, load_with_pgmcc, parse, set_pgm_cc, FlowInfo,
    NetworkOnly, Scenario,
};
pub use schema::FlowKind;
pub use validate::ScenarioError;

/// Re-exported from [`crate::reproduce`], where the measurement lives, so that
/// `netsim::scenario::Reproduce` keeps working.
pub use crate::reproduce::{Measured, Reproduce};
