//! Pseudofed's knobs (`representatives`, `rate_min`, `delta_rate`, `wait`, `suppression`)
//! for `cc = "pseudofed"`, and their refusal elsewhere.

use pgmcc::cc::pseudofed::PseudofedConfig;

use super::payload_pps;
use crate::scenario::schema::FlowSpec;
use crate::scenario::validate::{Ctx, ScenarioError};

/// The Pseudofed knobs of a `cc = "pseudofed"` flow (`docs/scenarios.md`) on `pc`.
pub(super) fn apply(
    fl: &FlowSpec,
    payload: u32,
    pc: &mut PseudofedConfig,
    cx: &Ctx<'_>,
) -> Result<(), ScenarioError> {
    if let Some(n) = &fl.representatives {
        let v = *n.get_ref();
        if !(1..=pgm_wire::MAX_REPRESENTATIVES as u32).contains(&v) {
            return cx.err(n.span(), "flow.representatives", format!("{v}: use 1..=8"));
        }
        pc.representatives = v as usize;
    }
    if let Some(r) = &fl.rate_min {
        let pps = payload_pps(r, "flow.rate_min", payload, cx)?;
        if pps <= 0.0 {
            return cx.err(r.span(), "flow.rate_min", "must be above 0");
        }
        pc.rate_min = pps;
    }
    for (k, slot, v) in [
        ("delta_rate", &mut pc.delta_rate, &fl.delta_rate),
        ("wait", &mut pc.wait, &fl.wait),
        ("suppression", &mut pc.suppression, &fl.suppression),
    ] {
        if let Some(v) = v {
            let x = *v.get_ref();
            if !(0.0..=2.55).contains(&x) {
                return cx.err(
                    v.span(),
                    &format!("flow.{k}"),
                    format!("{x}: a fraction in 0..=2.55"),
                );
            }
            *slot = x;
        }
    }
    Ok(())
}

/// Refuses Pseudofed's knobs on a flow of another controller.
pub(super) fn refuse(fl: &FlowSpec, cx: &Ctx<'_>) -> Result<(), ScenarioError> {
    for (k, present) in [
        ("representatives", fl.representatives.is_some()),
        ("rate_min", fl.rate_min.is_some()),
        ("delta_rate", fl.delta_rate.is_some()),
        ("wait", fl.wait.is_some()),
        ("suppression", fl.suppression.is_some()),
    ] {
        if present {
            return cx.err(
                fl.kind.span(),
                &format!("flow.{k}"),
                "only for cc = \"pseudofed\"",
            );
        }
    }
    Ok(())
}
