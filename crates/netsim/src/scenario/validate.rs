//! The checks that name bad keys: each turns one key (or one combination of keys) of the
//! file into its typed value, or into a [`ScenarioError`] giving the file, the line and the
//! key. Keys that do not apply to a flow's kind or controller are refused here too.

use std::net::{IpAddr, Ipv4Addr};

use pgmcc::ne::NakSuppression;
use pgmcc::{Duration, Instant, RateLimit};
use thiserror::Error;
use toml::Spanned;

use super::schema::{FlowKind, FlowSpec, LinkSpec, NodeSpec};
use crate::link::LossModel;
use crate::units;

/// A scenario that cannot be used, with where and why.
#[derive(Debug, Error)]
#[error("{file}:{line}: {key}: {message}")]
pub struct ScenarioError {
    /// The scenario file.
    pub file: String,
    /// 1-based line (0 when unknown).
    pub line: usize,
    /// The key at fault.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl ScenarioError {
    /// Reads the file at `path`: its name as errors show it, and its text; an unreadable
    /// file is an error naming it.
    pub(crate) fn read(path: &std::path::Path) -> Result<(String, String), ScenarioError> {
        let file = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(src) => Ok((file, src)),
            Err(e) => Err(ScenarioError {
                file,
                line: 0,
                key: "-".into(),
                message: format!("cannot read: {e}"),
            }),
        }
    }
}

/// The file being read, to turn a span into a line for errors.
pub(super) struct Ctx<'a> {
    pub(super) file: &'a str,
    pub(super) src: &'a str,
    /// Building for `pgmcc emu`: the external flow kinds are accepted.
    pub(super) emulation: bool,
}

impl Ctx<'_> {
    /// An error at `span` (a byte range of the source) about `key`.
    pub(super) fn err<T>(
        &self,
        span: std::ops::Range<usize>,
        key: &str,
        msg: impl Into<String>,
    ) -> Result<T, ScenarioError> {
        Err(ScenarioError {
            file: self.file.to_string(),
            line: self.line(span.start),
            key: key.to_string(),
            message: msg.into(),
        })
    }

    /// The 1-based line of byte `at`.
    fn line(&self, at: usize) -> usize {
        self.src[..at.min(self.src.len())].matches('\n').count() + 1
    }

    /// The file as serde reads it; a TOML error (syntax, unknown key, wrong type) names the
    /// line and the key `toml`.
    pub(super) fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, ScenarioError> {
        toml::from_str(self.src).map_err(|e| ScenarioError {
            file: self.file.to_string(),
            line: e.span().map_or(0, |s| self.line(s.start)),
            key: "toml".into(),
            message: e.message().to_string(),
        })
    }

    /// A duration key.
    pub(super) fn dur(&self, s: &Spanned<String>, key: &str) -> Result<Duration, ScenarioError> {
        units::duration(s.get_ref()).or_else(|m| self.err(s.span(), key, m))
    }

    /// An optional time key (a duration from the start of the run).
    pub(super) fn time(
        &self,
        s: &Option<Spanned<String>>,
        key: &str,
    ) -> Result<Option<Instant>, ScenarioError> {
        s.as_ref()
            .map(|s| self.dur(s, key).map(|d| Instant::ZERO + d))
            .transpose()
    }
}

/// `flow.kind`.
pub(super) fn flow_kind(fl: &FlowSpec, cx: &Ctx<'_>) -> Result<FlowKind, ScenarioError> {
    Ok(match fl.kind.get_ref().as_str() {
        "pgmcc" => FlowKind::Pgmcc,
        "pgm" => FlowKind::Pgm,
        "tcp-reno" | "reno" => FlowKind::TcpReno,
        "tcp-newreno" | "newreno" => FlowKind::TcpNewReno,
        "tcp-sack" | "sack" => FlowKind::TcpSack,
        "openpgm" if cx.emulation => FlowKind::OpenPgm,
        "uftp" if cx.emulation => FlowKind::Uftp,
        "norm" if cx.emulation => FlowKind::Norm,
        other @ ("openpgm" | "uftp" | "norm") => {
            return cx.err(
                fl.kind.span(),
                "flow.kind",
                format!(
                    "`{other}` is another implementation's real program, which the simulator \
                     does not model: run this file with `pgmcc emu`"
                ),
            )
        }
        other => {
            return cx.err(
                fl.kind.span(),
                "flow.kind",
                format!(
                    "`{other}`: use pgmcc, pgm, tcp-reno, tcp-newreno or tcp-sack (and, in \
                     `pgmcc emu` only, openpgm, uftp or norm)"
                ),
            )
        }
    })
}

/// `node.suppression` of a node running the network element (`None`: the default).
pub(super) fn ne_suppression(
    n: &NodeSpec,
    cx: &Ctx<'_>,
) -> Result<Option<NakSuppression>, ScenarioError> {
    let Some(s) = &n.suppression else {
        return Ok(None);
    };
    let policy = match s.get_ref().as_str() {
        "always" => NakSuppression::Always,
        "loss-aware" => NakSuppression::LossAware,
        other => match other
            .strip_prefix("probabilistic:")
            .and_then(|p| p.parse::<f64>().ok())
        {
            Some(p) if (0.0..=1.0).contains(&p) => NakSuppression::Probabilistic { forward: p },
            _ => {
                return cx.err(
                    s.span(),
                    "node.suppression",
                    format!("`{other}`: use always, loss-aware or probabilistic:P (0 <= P <= 1)"),
                )
            }
        },
    };
    Ok(Some(policy))
}

/// `link.loss` or `link.gilbert` (at most one of them).
pub(super) fn loss_model(l: &LinkSpec, cx: &Ctx<'_>) -> Result<LossModel, ScenarioError> {
    Ok(match (&l.loss, &l.gilbert) {
        (Some(_), Some(_)) => {
            return cx.err(
                l.from.span(),
                "link.loss",
                "give either loss or gilbert, not both",
            )
        }
        (Some(p), None) => {
            let v = *p.get_ref();
            if !(0.0..=1.0).contains(&v) {
                return cx.err(
                    p.span(),
                    "link.loss",
                    format!("{v} is not a probability (0..1)"),
                );
            }
            LossModel::Bernoulli { p: v }
        }
        (None, Some(g)) => {
            for (k, v) in [
                ("p_gb", g.p_gb),
                ("p_bg", g.p_bg),
                ("loss_good", g.loss_good),
                ("loss_bad", g.loss_bad),
            ] {
                if !(0.0..=1.0).contains(&v) {
                    return cx.err(
                        l.from.span(),
                        &format!("link.gilbert.{k}"),
                        format!("{v} is not a probability"),
                    );
                }
            }
            LossModel::GilbertElliott {
                p_gb: g.p_gb,
                p_bg: g.p_bg,
                loss_good: g.loss_good,
                loss_bad: g.loss_bad,
            }
        }
        (None, None) => LossModel::None,
    })
}

/// `flow.payload` in 1..=9000 bytes, `default` when absent.
pub(super) fn payload(fl: &FlowSpec, default: u32, cx: &Ctx<'_>) -> Result<u32, ScenarioError> {
    let Some(p) = &fl.payload else {
        return Ok(default);
    };
    let v = *p.get_ref();
    if !(1..=9000).contains(&v) {
        return cx.err(p.span(), "flow.payload", format!("{v} bytes: use 1..9000"));
    }
    Ok(v)
}

/// The shape of a PGM flow: receivers listed, no `to`.
pub(super) fn pgm_receivers(fl: &FlowSpec, cx: &Ctx<'_>) -> Result<(), ScenarioError> {
    if let Some(to) = &fl.to {
        return cx.err(
            to.span(),
            "flow.to",
            "PGM flows name receivers with [[flow.receiver]], not `to`",
        );
    }
    if fl.receivers.is_empty() {
        return cx.err(
            fl.name.span(),
            "flow.receiver",
            "a PGM flow needs at least one [[flow.receiver]]",
        );
    }
    Ok(())
}

/// `flow.group`, a multicast address (default 239.1.1.`id`).
pub(super) fn group(fl: &FlowSpec, id: u32, cx: &Ctx<'_>) -> Result<IpAddr, ScenarioError> {
    Ok(match &fl.group {
        Some(g) => match g.get_ref().parse::<IpAddr>() {
            Ok(a) if a.is_multicast() => a,
            _ => {
                return cx.err(
                    g.span(),
                    "flow.group",
                    format!("`{}` is not a multicast address", g.get_ref()),
                )
            }
        },
        None => IpAddr::V4(Ipv4Addr::new(239, 1, 1, id as u8)),
    })
}

/// `flow.repair_budget`: a positive multiple of the controller's rate, `inf` for none.
pub(super) fn repair_budget(
    fl: &FlowSpec,
    cx: &Ctx<'_>,
) -> Result<Option<Option<f64>>, ScenarioError> {
    positive_or_inf(
        fl.repair_budget.as_ref(),
        "flow.repair_budget",
        "must be a positive multiple of the controller's rate (2.0 by default), or inf for no budget",
        cx,
    )
}

/// `flow.nak_source_share`: a positive multiple of the session rate, `inf` for no per-source
/// limit.
pub(super) fn nak_source_share(
    fl: &FlowSpec,
    cx: &Ctx<'_>,
) -> Result<Option<Option<f64>>, ScenarioError> {
    positive_or_inf(
        fl.nak_source_share.as_ref(),
        "flow.nak_source_share",
        "must be a positive multiple of the session rate (1.0 by default), or inf for no per-source limit",
        cx,
    )
}

/// A key that takes a positive number, or `inf` for none (`Some(None)`); `None` when absent.
fn positive_or_inf(
    v: Option<&Spanned<f64>>,
    key: &'static str,
    what: &str,
    cx: &Ctx<'_>,
) -> Result<Option<Option<f64>>, ScenarioError> {
    let Some(b) = v else {
        return Ok(None);
    };
    let x = *b.get_ref();
    if x.is_nan() || x <= 0.0 {
        return cx.err(b.span(), key, what);
    }
    Ok(Some(x.is_finite().then_some(x)))
}

/// `flow.fec`: on-demand parity over groups of this many packets, `0` for none.
pub(super) fn fec(fl: &FlowSpec, cx: &Ctx<'_>) -> Result<Option<Option<u32>>, ScenarioError> {
    let Some(k) = &fl.fec else {
        return Ok(None);
    };
    match *k.get_ref() {
        0 => Ok(Some(None)),
        k if pgmcc::fec::valid_tg_size(k) => Ok(Some(Some(k))),
        _ => cx.err(
            k.span(),
            "flow.fec",
            "the transmission group size: a power of two from 2 to 128, or 0 for no parity",
        ),
    }
}

/// `flow.proactive_parity`: pro-active parity packets per transmission group, at most the
/// group size `k` (`None` when parity is off).
pub(super) fn proactive_parity(
    fl: &FlowSpec,
    k: Option<u32>,
    cx: &Ctx<'_>,
) -> Result<u32, ScenarioError> {
    let Some(h) = &fl.proactive_parity else {
        return Ok(0);
    };
    match (*h.get_ref(), k) {
        (0, _) => Ok(0),
        (h, Some(k)) if h <= k => Ok(h),
        (_, Some(k)) => cx.err(
            h.span(),
            "flow.proactive_parity",
            format!("parity packets per group: 0 to the group size ({k})"),
        ),
        (_, None) => cx.err(
            h.span(),
            "flow.proactive_parity",
            "needs parity: set `fec` to a group size",
        ),
    }
}

/// `flow.txw_sqns`: the source's transmit window in packets (TXW_SQNS).
pub(super) fn txw_sqns(fl: &FlowSpec, cx: &Ctx<'_>) -> Result<Option<u32>, ScenarioError> {
    count_in(
        &fl.txw_sqns,
        "flow.txw_sqns",
        1..=TXW_SQNS_MAX,
        "packets kept for repair",
        cx,
    )
}

/// `flow.rwnd`, TCP's receiver window in segments (ns-2's `window_`), if set.
pub(super) fn rwnd(fl: &FlowSpec, cx: &Ctx<'_>) -> Result<Option<u32>, ScenarioError> {
    count_in(
        &fl.rwnd,
        "flow.rwnd",
        1..=1_000_000,
        "segments of the receiver's window",
        cx,
    )
}

/// `flow.initial_window`, TCP's initial congestion window in segments, if set.
pub(super) fn initial_window(fl: &FlowSpec, cx: &Ctx<'_>) -> Result<Option<u32>, ScenarioError> {
    count_in(
        &fl.initial_window,
        "flow.initial_window",
        1..=1000,
        "segments of the initial window",
        cx,
    )
}

/// An optional whole-number key within `range`; the error names the key, what it counts
/// and the range.
fn count_in(
    v: &Option<Spanned<u32>>,
    key: &str,
    range: std::ops::RangeInclusive<u32>,
    what: &str,
    cx: &Ctx<'_>,
) -> Result<Option<u32>, ScenarioError> {
    let Some(n) = v else {
        return Ok(None);
    };
    if range.contains(n.get_ref()) {
        Ok(Some(*n.get_ref()))
    } else {
        cx.err(
            n.span(),
            key,
            format!("{what}: {} to {}", range.start(), range.end()),
        )
    }
}

/// The largest `flow.txw_sqns`: 2^20 packets (1.5 GB of 1428-byte payloads), well inside
/// the 2^31 sequence numbers that comparisons allow.
const TXW_SQNS_MAX: u32 = 1 << 20;

/// `flow.rate_limit`, the session's TXW_MAX_RTE.
pub(super) fn rate_limit(fl: &FlowSpec, cx: &Ctx<'_>) -> Result<Option<RateLimit>, ScenarioError> {
    let Some(r) = &fl.rate_limit else {
        return Ok(None);
    };
    let bps = units::rate(r.get_ref()).or_else(|m| cx.err(r.span(), "flow.rate_limit", m))?;
    Ok(Some(RateLimit {
        bytes_per_sec: bps / 8,
        burst: (bps / 8 / 10).max(3000),
    }))
}

/// TCP's own keys are refused on a PGM flow.
pub(super) fn refuse_tcp_knobs(fl: &FlowSpec, cx: &Ctx<'_>) -> Result<(), ScenarioError> {
    for (k, present) in [
        ("delayed_ack", fl.delayed_ack.is_some()),
        ("min_rto", fl.min_rto.is_some()),
        ("rto", fl.rto.is_some()),
        ("limited_transmit", fl.limited_transmit.is_some()),
        ("timestamps", fl.timestamps.is_some()),
        ("rack", fl.rack.is_some()),
        ("rwnd", fl.rwnd.is_some()),
        ("initial_window", fl.initial_window.is_some()),
        (
            "partial_ack_restarts_timer",
            fl.partial_ack_restarts_timer.is_some(),
        ),
        (
            "fast_retransmit_restarts_timer",
            fl.fast_retransmit_restarts_timer.is_some(),
        ),
    ] {
        if present {
            return cx.err(fl.kind.span(), &format!("flow.{k}"), "only for TCP flows");
        }
    }
    Ok(())
}

/// The receiving node of a TCP flow, `to`.
pub(super) fn tcp_to<'f>(
    fl: &'f FlowSpec,
    cx: &Ctx<'_>,
) -> Result<&'f Spanned<String>, ScenarioError> {
    let Some(to) = &fl.to else {
        return cx.err(
            fl.name.span(),
            "flow.to",
            "a TCP flow needs `to` (the receiving node)",
        );
    };
    Ok(to)
}

/// PGM's keys (and `[[flow.receiver]]`) are refused on a TCP flow.
pub(super) fn refuse_pgm_knobs(fl: &FlowSpec, cx: &Ctx<'_>) -> Result<(), ScenarioError> {
    if let Some(r) = fl.receivers.first() {
        return cx.err(
            r.node.span(),
            "flow.receiver",
            "TCP flows have one receiver, given by `to`",
        );
    }
    for (k, present) in [
        ("group", fl.group.is_some()),
        ("rate_limit", fl.rate_limit.is_some()),
        ("c", fl.c.is_some()),
        ("model", fl.model.is_some()),
        ("rtt_unit", fl.rtt_unit.is_some()),
        ("adaptive_timeout", fl.adaptive_timeout.is_some()),
        ("stall_min", fl.stall_min.is_some()),
        ("repairs", fl.repairs.is_some()),
        ("repair_budget", fl.repair_budget.is_some()),
        ("nak_source_share", fl.nak_source_share.is_some()),
        ("repair_holdoff", fl.repair_holdoff.is_some()),
        ("fec", fl.fec.is_some()),
        ("txw_sqns", fl.txw_sqns.is_some()),
        ("proactive_parity", fl.proactive_parity.is_some()),
        ("hold_for_naks", fl.hold_for_naks.is_some()),
        ("nak_backoff", fl.nak_backoff.is_some()),
        ("cc", fl.cc.is_some()),
    ] {
        if present {
            return cx.err(fl.kind.span(), &format!("flow.{k}"), "only for PGM flows");
        }
    }
    Ok(())
}
