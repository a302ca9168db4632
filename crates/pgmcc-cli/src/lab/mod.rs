//! The research harness: the simulator (`sim`), the emulator (`emu`), the papers'
//! experiments (`reproduce`), the fairness grid and its receiver sweep (`grid`), and the
//! generated fairness scenarios (`fairness`); what they share is in `shared`.

pub(crate) mod emu;
pub(crate) mod fairness;
pub(crate) mod grid;
pub(crate) mod reproduce;
mod shared;
pub(crate) mod sim;
mod sweep;
