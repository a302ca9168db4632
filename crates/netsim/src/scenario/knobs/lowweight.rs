//! The low-weight controllers' knobs: `rate_floor` and `rate_ceiling` (`cc = "lowweight"`)
//! and the switch bias `c` of the worst-receiver choice (both low-weight controllers).

use pgmcc::cc::lowweight::{self, AcklessConfig, LowWeightConfig};
use toml::Spanned;

use super::{payload_pps, switch_bias};
use crate::scenario::schema::FlowSpec;
use crate::scenario::validate::{Ctx, ScenarioError};

/// The knobs of a `cc = "lowweight"` flow on `lc`.
pub(super) fn apply(
    fl: &FlowSpec,
    payload: u32,
    lc: &mut LowWeightConfig,
    cx: &Ctx<'_>,
) -> Result<(), ScenarioError> {
    let bias = switch_bias(fl, cx)?;
    lc.floor = rate(&fl.rate_floor, "flow.rate_floor", payload, cx)?;
    lc.ceiling = rate(&fl.rate_ceiling, "flow.rate_ceiling", payload, cx)?;
    if let (Some(f), Some(c), Some(r)) = (lc.floor, lc.ceiling, &fl.rate_floor) {
        if f > c {
            return cx.err(r.span(), "flow.rate_floor", "above rate_ceiling");
        }
    }
    if let Some(b) = bias {
        lc.worst.switch_bias = b;
    }
    Ok(())
}

/// The knobs of a `cc = "pgmcc-ackless"` flow on `ac`.
pub(super) fn apply_ackless(
    fl: &FlowSpec,
    ac: &mut AcklessConfig,
    cx: &Ctx<'_>,
) -> Result<(), ScenarioError> {
    if let Some(b) = switch_bias(fl, cx)? {
        ac.worst.switch_bias = b;
    }
    Ok(())
}

/// Refuses `rate_floor` and `rate_ceiling` on a flow of another controller.
pub(super) fn refuse(fl: &FlowSpec, cx: &Ctx<'_>) -> Result<(), ScenarioError> {
    for (k, present) in [
        ("rate_floor", fl.rate_floor.is_some()),
        ("rate_ceiling", fl.rate_ceiling.is_some()),
    ] {
        if present {
            return cx.err(
                fl.kind.span(),
                &format!("flow.{k}"),
                "only for cc = \"lowweight\"",
            );
        }
    }
    Ok(())
}

/// A low-weight rate bound (`rate_floor`, `rate_ceiling`) in packets per second, at least
/// [`lowweight::MIN_RATE`].
fn rate(
    r: &Option<Spanned<String>>,
    key: &str,
    payload: u32,
    cx: &Ctx<'_>,
) -> Result<Option<f64>, ScenarioError> {
    let Some(r) = r else { return Ok(None) };
    let v = payload_pps(r, key, payload, cx)?;
    if v < lowweight::MIN_RATE {
        return cx.err(
            r.span(),
            key,
            format!("below {} packets per second", lowweight::MIN_RATE),
        );
    }
    Ok(Some(v))
}
