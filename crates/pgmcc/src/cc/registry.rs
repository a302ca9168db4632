//! The one list of controller names. Scenarios (`cc = "..."`), the comparison matrix
//! (`controllers = [...]`) and the CLI (`pgmcc send --cc ...`) all parse a name with
//! [`Controller::from_str`](std::str::FromStr) and start from [`Controller::config`], so a
//! name runs the same mechanism in every driver.
//!
//! Adding a controller: one variant here, one line in each of [`Controller::ALL`],
//! [`Controller::name`], [`Controller::about`], [`Controller::config`] and [`Controller::of`]
//! (`docs/architecture.md` walks through the whole recipe).

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use serde::Serialize;

use super::{lowweight, pgmcc, pseudofed, tfmcc, CongestionControl};
use crate::time::{Duration, Instant};

/// A congestion controller, by the name it has everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Controller {
    /// `pgmcc`: our recommended pgmcc, the default everywhere
    /// ([`pgmcc::PgmccConfig::recommended`]: the paper's controller with TCP's pipe rule,
    /// [`pgmcc::Accounting::Pipe`], TCP's recovery and slow start, and the report bar).
    Pgmcc,
    /// `pgmcc-paper`: pgmcc as published, for reproductions (paper §3 with the draft's token
    /// rule; ACKs from former ackers return nothing: [`pgmcc::Accounting::Tokens`]).
    PgmccPaper,
    /// `tfmcc`: the TFMCC-style equation-based baseline (`docs/tfmcc.md`).
    Tfmcc,
    /// `pseudofed`: Pseudofed's representative-based rate controller (`docs/pseudofed.md`).
    Pseudofed,
    /// `lowweight`: low-weight multi-sender control (`docs/lowweight.md`).
    LowWeight,
    /// `pgmcc-ackless`: pgmcc's window driven by the worst receiver's quick NAKs.
    PgmccAckless,
    /// `none`: no congestion control; the PGM rate limiter alone paces the session.
    None,
}

impl Controller {
    /// Every controller, in the order error messages and `--help` list them.
    pub const ALL: [Controller; 7] = [
        Controller::Pgmcc,
        Controller::PgmccPaper,
        Controller::Tfmcc,
        Controller::Pseudofed,
        Controller::LowWeight,
        Controller::PgmccAckless,
        Controller::None,
    ];

    /// The name, as scenarios, the matrix and the CLI spell it.
    pub fn name(self) -> &'static str {
        match self {
            Controller::Pgmcc => "pgmcc",
            Controller::PgmccPaper => "pgmcc-paper",
            Controller::Tfmcc => "tfmcc",
            Controller::Pseudofed => "pseudofed",
            Controller::LowWeight => "lowweight",
            Controller::PgmccAckless => "pgmcc-ackless",
            Controller::None => "none",
        }
    }

    /// One line saying what runs, for `--help` and docs.
    pub fn about(self) -> &'static str {
        match self {
            Controller::Pgmcc => {
                "pgmcc, recommended: the paper's window and acker election with TCP's pipe \
                 rule (packets still travelling to a former acker counted), recovery and \
                 slow start (docs/pgmcc.md)"
            }
            Controller::PgmccPaper => {
                "pgmcc as published (paper §3, the draft's token rule), for reproductions"
            }
            Controller::Tfmcc => "the TFMCC-style equation-based baseline (docs/tfmcc.md)",
            Controller::Pseudofed => {
                "Pseudofed's representative-based rate controller (docs/pseudofed.md)"
            }
            Controller::LowWeight => {
                "low-weight multi-sender control: no ACKs, the worst receiver NAKs at once, \
                 the rate stays between a floor and a ceiling (docs/lowweight.md)"
            }
            Controller::PgmccAckless => {
                "pgmcc's window driven by the worst receiver's NAKs instead of ACKs \
                 (docs/lowweight.md; a research comparison, not recommended)"
            }
            Controller::None => "no congestion control: only the rate limit paces the session",
        }
    }

    /// The controller with its defaults; drivers then set the knobs they expose.
    pub fn config(self) -> CcConfig {
        match self {
            Controller::Pgmcc => CcConfig::Pgmcc(pgmcc::PgmccConfig::recommended()),
            Controller::PgmccPaper => CcConfig::Pgmcc(pgmcc::PgmccConfig::default()),
            Controller::Tfmcc => CcConfig::Tfmcc(tfmcc::TfmccConfig::default()),
            Controller::Pseudofed => CcConfig::Pseudofed(pseudofed::PseudofedConfig::default()),
            Controller::LowWeight => CcConfig::LowWeight(lowweight::LowWeightConfig::default()),
            Controller::PgmccAckless => CcConfig::PgmccAckless(lowweight::AcklessConfig::default()),
            Controller::None => CcConfig::None,
        }
    }

    /// The name a configuration runs under.
    pub fn of(config: &CcConfig) -> Controller {
        match config {
            CcConfig::Pgmcc(c) if c.accounting == pgmcc::Accounting::Pipe => Controller::Pgmcc,
            CcConfig::Pgmcc(_) => Controller::PgmccPaper,
            CcConfig::Tfmcc(_) => Controller::Tfmcc,
            CcConfig::Pseudofed(_) => Controller::Pseudofed,
            CcConfig::LowWeight(_) => Controller::LowWeight,
            CcConfig::PgmccAckless(_) => Controller::PgmccAckless,
            CcConfig::None => Controller::None,
        }
    }

    /// True for the two pgmcc names, which share [`pgmcc::PgmccConfig`]'s knobs.
    pub fn is_pgmcc(self) -> bool {
        matches!(self, Controller::Pgmcc | Controller::PgmccPaper)
    }

    /// Every name, in [`Controller::ALL`]'s order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Controller::ALL.into_iter().map(Controller::name)
    }
}

impl fmt::Display for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A controller name that is not in the registry.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("`{name}`: use {}", list())]
pub struct UnknownController {
    /// The name given.
    pub name: String,
}

/// "a, b, ... or z".
fn list() -> String {
    let names: Vec<&str> = Controller::names().collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

impl FromStr for Controller {
    type Err = UnknownController;

    fn from_str(s: &str) -> Result<Controller, UnknownController> {
        Controller::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| UnknownController {
                name: s.to_string(),
            })
    }
}

/// Which controller a sender runs; the factory for [`CongestionControl`] objects.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub enum CcConfig {
    /// No congestion control: the PGM rate limiter alone paces the session.
    #[default]
    None,
    /// pgmcc with the given knobs.
    Pgmcc(pgmcc::PgmccConfig),
    /// A TFMCC-style rate controller (RFC 4654 essentials), the comparison baseline.
    Tfmcc(tfmcc::TfmccConfig),
    /// Pseudofed's representative-based rate controller (`docs/pseudofed.md`).
    Pseudofed(pseudofed::PseudofedConfig),
    /// The low-weight multi-sender rate controller: no ACKs, quick NAKs from the worst
    /// receiver, rate floor and ceiling (`docs/lowweight.md`).
    LowWeight(lowweight::LowWeightConfig),
    /// pgmcc's window driven by the worst receiver's quick NAKs instead of ACKs
    /// (`docs/lowweight.md`).
    PgmccAckless(lowweight::AcklessConfig),
}

impl CcConfig {
    /// Builds the controller, or `None` for [`CcConfig::None`].
    pub fn build(&self, now: Instant) -> Option<Box<dyn CongestionControl>> {
        match self {
            CcConfig::None => None,
            CcConfig::Pgmcc(c) => Some(Box::new(pgmcc::Pgmcc::new(*c, now))),
            CcConfig::Tfmcc(c) => Some(Box::new(tfmcc::Tfmcc::new(*c, now))),
            CcConfig::Pseudofed(c) => Some(Box::new(pseudofed::Pseudofed::new(*c, now))),
            CcConfig::LowWeight(c) => Some(Box::new(lowweight::LowWeight::new(*c, now))),
            CcConfig::PgmccAckless(c) => Some(Box::new(lowweight::AcklessPgmcc::new(*c, now))),
        }
    }

    /// The loss-event merging interval receivers of this controller should report with
    /// ([`ReceiverConfig::loss_events`](crate::ReceiverConfig::loss_events)), when it wants
    /// TFRC's loss event rate instead of pgmcc's loss filter: TFMCC's receivers, which
    /// measure no RTT of their own, merge losses over RFC 4654's initial RTT
    /// (`docs/tfmcc.md`). Drivers that configure both ends (the simulator) use it; receivers
    /// that see OPT_TFMCC_DATA switch on their own anyway.
    pub fn receiver_loss_events(&self) -> Option<Duration> {
        match self {
            CcConfig::Tfmcc(t) => Some(t.initial_rtt),
            _ => None,
        }
    }

    /// True when the controller's loss signal is the sequence numbers receivers NAK (the
    /// low-weight controllers' quick NAKs): FEC parity, whose NAKs name a group and a
    /// count, would hide it, so the source offers no parity under them.
    pub fn needs_selective_naks(&self) -> bool {
        matches!(self, CcConfig::LowWeight(_) | CcConfig::PgmccAckless(_))
    }

    /// Bytes a data packet must keep free for the controller's own options beyond
    /// OPT_PGMCC_DATA (OPT_PSEUDOFED, OPT_TFMCC_DATA, OPT_LOWWEIGHT); 0 for pgmcc.
    pub fn data_option_room(&self) -> usize {
        match self {
            CcConfig::Pseudofed(c) => pseudofed::option_room(c),
            // OPT_TFMCC_DATA.
            CcConfig::Tfmcc(t) if t.feedback_rounds => 20,
            CcConfig::LowWeight(_) | CcConfig::PgmccAckless(_) => lowweight::OPTION_ROOM,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_its_controller_and_config() {
        for c in Controller::ALL {
            assert_eq!(c.name().parse::<Controller>(), Ok(c));
            assert_eq!(c.to_string(), c.name());
            assert_eq!(Controller::of(&c.config()), c, "{c}");
        }
    }

    #[test]
    fn unknown_names_list_every_controller() {
        let e = "tfrc".parse::<Controller>().unwrap_err().to_string();
        assert_eq!(
            e,
            "`tfrc`: use pgmcc, pgmcc-paper, tfmcc, pseudofed, lowweight, pgmcc-ackless or none"
        );
    }
}
