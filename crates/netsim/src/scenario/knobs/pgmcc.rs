//! pgmcc's knobs (`c`, `model`, `rtt_unit`, `adaptive_timeout`, `realign_tokens`), for
//! `cc = "pgmcc"` and `cc = "pgmcc-realigned"`, and their refusal elsewhere.

use pgmcc::cc::pgmcc::{PgmccConfig, RttUnit};
use pgmcc::cc::throughput::ThroughputModel;
use pgmcc::cc::Controller;

use super::switch_bias;
use crate::scenario::schema::FlowSpec;
use crate::scenario::validate::{Ctx, ScenarioError};

/// pgmcc's knobs (`c`, `model`, `rtt_unit`, `adaptive_timeout`, `realign_tokens`) on the
/// defaults of `ctl`, `pgmcc` or `pgmcc-realigned`. `realign_tokens = false` contradicts
/// `pgmcc-realigned` and is refused.
pub(super) fn apply(
    fl: &FlowSpec,
    ctl: Controller,
    pc: &mut PgmccConfig,
    cx: &Ctx<'_>,
) -> Result<(), ScenarioError> {
    if let Some(b) = switch_bias(fl, cx)? {
        pc.switch_bias = b;
    }
    if let Some(m) = &fl.model {
        pc.model = match m.get_ref().as_str() {
            "simple" => ThroughputModel::Simple,
            "pftk" => ThroughputModel::Pftk,
            other => {
                return cx.err(
                    m.span(),
                    "flow.model",
                    format!("`{other}`: use simple or pftk"),
                )
            }
        };
    }
    if let Some(u) = &fl.rtt_unit {
        pc.rtt_unit = match u.get_ref().as_str() {
            "packets" => RttUnit::Packets,
            "ms" | "millis" => RttUnit::Millis,
            other => {
                return cx.err(
                    u.span(),
                    "flow.rtt_unit",
                    format!("`{other}`: use packets or ms"),
                )
            }
        };
    }
    if fl.adaptive_timeout.unwrap_or(false) {
        *pc = pc.with_adaptive_timeout();
    }
    match fl.realign_tokens {
        Some(false) if ctl == Controller::PgmccRealigned => {
            let span = fl.cc.as_ref().map_or_else(|| fl.kind.span(), |c| c.span());
            return cx.err(
                span,
                "flow.realign_tokens",
                "`false` contradicts cc = \"pgmcc-realigned\" (pgmcc with realign_tokens = \
                 true); for pgmcc without realignment use cc = \"pgmcc\"",
            );
        }
        Some(realign) => pc.realign_tokens = realign,
        // The controller's default: off for `pgmcc`, on for `pgmcc-realigned`.
        None => {}
    }
    Ok(())
}

/// Refuses pgmcc's own knobs on a flow run by controller `ctl`; `c` is refused only when
/// `allow_c` is false (the low-weight controllers take it as their switch bias).
pub(super) fn refuse(
    fl: &FlowSpec,
    ctl: Controller,
    allow_c: bool,
    cx: &Ctx<'_>,
) -> Result<(), ScenarioError> {
    for (k, present) in [
        ("c", fl.c.is_some() && !allow_c),
        ("model", fl.model.is_some()),
        ("rtt_unit", fl.rtt_unit.is_some()),
        ("adaptive_timeout", fl.adaptive_timeout.is_some()),
        ("realign_tokens", fl.realign_tokens.is_some()),
    ] {
        if present {
            return cx.err(
                fl.kind.span(),
                &format!("flow.{k}"),
                format!("a pgmcc knob: not for cc = \"{ctl}\""),
            );
        }
    }
    Ok(())
}
