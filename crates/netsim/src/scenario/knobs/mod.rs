//! The congestion-control keys of a PGM flow: `cc`, parsed by the registry
//! ([`Controller`]), and each controller's own knobs, one file per controller; keys of
//! another controller are refused with a message naming the one they belong to.

mod lowweight;
mod pgmcc;
pub(crate) use pgmcc::{PGMCC_KNOBS, PRESET_KNOBS};
mod pseudofed;

use ::pgmcc::cc::throughput::SwitchBias;
use ::pgmcc::cc::{CcConfig, Controller};
use toml::Spanned;

use super::schema::FlowKind;
use super::schema::FlowSpec;
use super::validate::{Ctx, ScenarioError};
use crate::units;

/// The controller a PGM flow of `kind` runs: `flow.cc` as the registry
/// ([`Controller`]) parses it, `pgmcc` by default. A `kind = "pgm"` flow runs none and
/// takes no `cc`; `cc = "none"` is refused in favour of that kind, so that one name means
/// one thing.
fn controller(fl: &FlowSpec, kind: FlowKind, cx: &Ctx<'_>) -> Result<Controller, ScenarioError> {
    match (&fl.cc, kind) {
        (Some(c), FlowKind::Pgmcc) => match c.get_ref().parse::<Controller>() {
            Ok(Controller::None) => cx.err(
                c.span(),
                "flow.cc",
                "`none`: a PGM flow without congestion control is kind = \"pgm\" \
                 (paced by rate_limit alone)",
            ),
            Ok(ctl) => Ok(ctl),
            Err(e) => cx.err(c.span(), "flow.cc", e.to_string()),
        },
        (Some(c), _) => cx.err(c.span(), "flow.cc", "only for kind = \"pgmcc\""),
        (None, FlowKind::Pgmcc) => Ok(Controller::Pgmcc),
        (None, _) => Ok(Controller::None),
    }
}

/// The congestion controller of a PGM flow of `kind` with its knobs: the registry's
/// [`Controller::config`] with the flow's keys applied; keys of other controllers are
/// refused.
pub(in crate::scenario) fn pgm_cc(
    fl: &FlowSpec,
    kind: FlowKind,
    payload: u32,
    cx: &Ctx<'_>,
) -> Result<CcConfig, ScenarioError> {
    let ctl = controller(fl, kind, cx)?;
    if ctl != Controller::LowWeight {
        lowweight::refuse(fl, cx)?;
    }
    if ctl != Controller::Pseudofed {
        pseudofed::refuse(fl, cx)?;
    }
    let mut cc = ctl.config();
    match &mut cc {
        CcConfig::Pgmcc(pc) => pgmcc::apply(fl, pc, cx)?,
        CcConfig::Tfmcc(_) => pgmcc::refuse(fl, ctl, false, cx)?,
        CcConfig::Pseudofed(pc) => {
            pgmcc::refuse(fl, ctl, false, cx)?;
            pseudofed::apply(fl, payload, pc, cx)?;
        }
        CcConfig::LowWeight(lc) => {
            pgmcc::refuse(fl, ctl, true, cx)?;
            lowweight::apply(fl, payload, lc, cx)?;
        }
        CcConfig::PgmccAckless(ac) => {
            pgmcc::refuse(fl, ctl, true, cx)?;
            lowweight::apply_ackless(fl, ac, cx)?;
        }
        CcConfig::None => {
            for (k, present) in [
                ("c", fl.c.is_some()),
                ("model", fl.model.is_some()),
                ("adaptive_timeout", fl.adaptive_timeout.is_some()),
            ] {
                if present {
                    return cx.err(
                        fl.kind.span(),
                        &format!("flow.{k}"),
                        "only for kind = \"pgmcc\"",
                    );
                }
            }
        }
    }
    Ok(cc)
}

/// The flow's switch bias `c`, checked to lie in (0, 1].
fn switch_bias(fl: &FlowSpec, cx: &Ctx<'_>) -> Result<Option<SwitchBias>, ScenarioError> {
    let Some(c) = &fl.c else {
        return Ok(None);
    };
    let v = *c.get_ref();
    if !(v > 0.0 && v <= 1.0) {
        return cx.err(
            c.span(),
            "flow.c",
            format!("{v}: the switch bias is in (0, 1]"),
        );
    }
    Ok(Some(SwitchBias {
        num: (v * 1000.0).round() as u32,
        den: 1000,
    }))
}

/// A rate key given as a rate of payload, in packets per second of `payload`-byte packets.
fn payload_pps(
    r: &Spanned<String>,
    key: &str,
    payload: u32,
    cx: &Ctx<'_>,
) -> Result<f64, ScenarioError> {
    let bps = units::rate(r.get_ref()).or_else(|m| cx.err(r.span(), key, m))?;
    Ok(bps as f64 / 8.0 / f64::from(payload.max(1)))
}
