//! pgmcc's knobs ([`PGMCC_KNOBS`]), for `cc = "pgmcc"` and `cc = "pgmcc-paper"`, and their
//! refusal elsewhere.

use pgmcc::cc::pgmcc::{
    Accounting, Election, LossDetection, LossReport, PgmccConfig, Recovery, Repairs, RttUnit,
    SlowStart,
};
use pgmcc::cc::throughput::ThroughputModel;
use pgmcc::cc::Controller;

use super::switch_bias;
use crate::scenario::schema::{BoolOrName, FlowSpec};
use crate::scenario::validate::{Ctx, ScenarioError};
use toml::Spanned;

/// pgmcc's own flow keys: what [`apply`] reads, what [`refuse`] refuses under another
/// controller, and what `pgmcc compare` drops from a flow it reruns under one. The first two
/// mean the same under both presets; the rest are where the presets differ
/// ([`PRESET_KNOBS`]).
pub(crate) const PGMCC_KNOBS: [&str; 15] = [
    "c",
    "model",
    "rtt_unit",
    "adaptive_timeout",
    "stall_min",
    "accounting",
    "recovery",
    "loss_detection",
    "report_bar",
    "slow_start",
    "loss_report",
    "election",
    "silent_receivers",
    "acker_reports",
    "repair_accounting",
];

/// The pgmcc keys whose defaults differ between `pgmcc` and `pgmcc-paper`: a scenario rerun
/// under the other preset (the reproduction's second column) drops them, so that each
/// column runs its preset's own choices.
pub(crate) const PRESET_KNOBS: &[&str] = PGMCC_KNOBS.split_at(2).1;

/// Whether flow `fl` sets pgmcc key `k` (one of [`PGMCC_KNOBS`], or the retired
/// `realign_tokens`).
fn is_set(fl: &FlowSpec, k: &str) -> bool {
    match k {
        "c" => fl.c.is_some(),
        "model" => fl.model.is_some(),
        "rtt_unit" => fl.rtt_unit.is_some(),
        "adaptive_timeout" => fl.adaptive_timeout.is_some(),
        "stall_min" => fl.stall_min.is_some(),
        "accounting" => fl.accounting.is_some(),
        "recovery" => fl.recovery.is_some(),
        "loss_detection" => fl.loss_detection.is_some(),
        "report_bar" => fl.report_bar.is_some(),
        "slow_start" => fl.slow_start.is_some(),
        "loss_report" => fl.loss_report.is_some(),
        "election" => fl.election.is_some(),
        "silent_receivers" => fl.silent_receivers.is_some(),
        "acker_reports" => fl.acker_reports.is_some(),
        "repair_accounting" => fl.repair_accounting.is_some(),
        "realign_tokens" => fl.realign_tokens.is_some(),
        _ => false,
    }
}

/// pgmcc's knobs ([`PGMCC_KNOBS`]) on the defaults of the flow's controller, `pgmcc` or
/// `pgmcc-paper`. The retired `realign_tokens` is refused with what replaced it.
pub(super) fn apply(
    fl: &FlowSpec,
    pc: &mut PgmccConfig,
    cx: &Ctx<'_>,
) -> Result<(), ScenarioError> {
    if let Some(b) = switch_bias(fl, cx)? {
        pc.switch_bias = b;
    }
    if let Some(m) = &fl.model {
        pc.model = choice(
            m,
            "flow.model",
            &[
                ("simple", ThroughputModel::Simple),
                ("pftk", ThroughputModel::Pftk),
            ],
            "use simple or pftk",
            cx,
        )?;
    }
    if let Some(u) = &fl.rtt_unit {
        pc.rtt_unit = choice(
            u,
            "flow.rtt_unit",
            &[
                ("packets", RttUnit::Packets),
                ("ms", RttUnit::Millis),
                ("millis", RttUnit::Millis),
            ],
            "use packets or ms",
            cx,
        )?;
    }
    adaptive_timeout(fl, pc, cx)?;
    if fl.realign_tokens.is_some() {
        return cx.err(
            fl.kind.span(),
            "flow.realign_tokens",
            "retired (issue 19): token realignment over-credited after acker switches; \
             cc = \"pgmcc\" now counts packets in flight across switches (accounting = \
             \"pipe\"), cc = \"pgmcc-paper\" is the published token rule",
        );
    }
    if let Some(a) = &fl.accounting {
        pc.accounting = choice(
            a,
            "flow.accounting",
            &[("tokens", Accounting::Tokens), ("pipe", Accounting::Pipe)],
            "use tokens (the paper's) or pipe (ours)",
            cx,
        )?;
    }
    if let Some(r) = &fl.recovery {
        pc.recovery = choice(
            r,
            "flow.recovery",
            &[("grow", Recovery::Grow), ("hold", Recovery::Hold)],
            "use grow (the paper's) or hold (ours, TCP's)",
            cx,
        )?;
    }
    if let Some(v) = &fl.loss_detection {
        pc.loss_detection = choice(
            v,
            "flow.loss_detection",
            &[
                ("dupacks", LossDetection::DupAcks),
                ("rack", LossDetection::Rack),
            ],
            "use dupacks (the paper's) or rack (ours, Linux TCP's RACK-TLP)",
            cx,
        )?;
    }
    if let Some(a) = fl.report_bar {
        pc.advertise_report_bar = a;
    }
    if let Some(v) = &fl.slow_start {
        pc.slow_start = choice(
            v,
            "flow.slow_start",
            &[
                ("fixed", SlowStart::Fixed),
                ("adaptive", SlowStart::Adaptive),
            ],
            "use fixed (the paper's 6 packets) or adaptive (ours, TCP's)",
            cx,
        )?;
    }
    if let Some(v) = &fl.loss_report {
        pc.loss_report = choice(
            v,
            "flow.loss_report",
            &[
                ("filter", LossReport::Filter),
                ("intervals", LossReport::Intervals),
            ],
            "use filter (the paper's) or intervals (ours, TFRC's loss intervals)",
            cx,
        )?;
    }
    if let Some(v) = &fl.election {
        pc.election = choice(
            v,
            "flow.election",
            &[
                ("paper", Election::Paper),
                ("like-with-like", Election::LikeWithLike),
            ],
            "use paper (the acker's latest report) or like-with-like (ours: its report just \
             after its latest loss; at zero loss, the longer RTT is slower)",
            cx,
        )?;
    }
    if let Some(v) = &fl.silent_receivers {
        pc.cap_for_silent = choice(
            v,
            "flow.silent_receivers",
            &[("ignore", false), ("cap", true)],
            "use ignore (the paper's: only reports count) or cap (ours: the loss a receiver \
             without reports NAKs bounds the window)",
            cx,
        )?;
    }
    if let Some(v) = &fl.acker_reports {
        pc.check_reports = choice(
            v,
            "flow.acker_reports",
            &[("trust", false), ("check", true)],
            "use trust (the paper's: the election believes every report) or check (ours: the \
             acker's reports are checked against its own ACKs)",
            cx,
        )?;
    }
    repair_accounting(fl, pc, cx)
}

/// `adaptive_timeout`: the stall timeout's rule; `stall_min`: its lower bound.
fn adaptive_timeout(
    fl: &FlowSpec,
    pc: &mut PgmccConfig,
    cx: &Ctx<'_>,
) -> Result<(), ScenarioError> {
    if let Some(t) = &fl.adaptive_timeout {
        match t.get_ref() {
            BoolOrName::Bool(false) => *pc = pc.with_fixed_timeout(),
            BoolOrName::Bool(true) => *pc = pc.with_adaptive_timeout(),
            BoolOrName::Name(n) => {
                type With = fn(PgmccConfig) -> PgmccConfig;
                let with = choice(
                    &Spanned::new(t.span(), n.clone()),
                    "flow.adaptive_timeout",
                    &[
                        ("benchmark", PgmccConfig::with_adaptive_timeout as With),
                        ("draft", PgmccConfig::with_draft_timeout),
                        ("linux", PgmccConfig::with_linux_timeout),
                    ],
                    "use true or \"benchmark\" (restarted only by an ACK without holes), \
                     \"draft\" (restarted by every ACK of new data), \"linux\" (the \
                     draft's, at least SRTT + 200 ms as Linux bounds TCP's RTO), or false",
                    cx,
                )?;
                *pc = with(*pc);
            }
        }
    }
    if let Some(m) = &fl.stall_min {
        let min = cx.dur(m, "flow.stall_min")?;
        match pc.with_stall_min(min) {
            Some(c) => *pc = c,
            None => {
                return cx.err(
                    m.span(),
                    "flow.stall_min",
                    "bounds the adaptive stall timeout: this flow's is fixed (adaptive_timeout \
                     = false, or cc = \"pgmcc-paper\" without adaptive_timeout)",
                )
            }
        }
    }
    Ok(())
}

/// `repair_accounting`: whether repairs count in flight and wait for room (the pipe
/// accounting only).
fn repair_accounting(
    fl: &FlowSpec,
    pc: &mut PgmccConfig,
    cx: &Ctx<'_>,
) -> Result<(), ScenarioError> {
    if let Some(v) = &fl.repair_accounting {
        pc.repairs = choice(
            v,
            "flow.repair_accounting",
            &[
                ("outside", Repairs::Outside),
                ("in-window", Repairs::InWindow),
                ("wait", Repairs::Wait),
                ("acked", Repairs::Acked),
            ],
            "use outside (the paper's: repairs are not counted by the window), in-window \
             (ours: each repair counts as in flight for one acker RTT, as a TCP retransmission \
             does) or wait (ours: a repair of a packet the acker lost also waits for room in \
             the window, as a TCP retransmission waits for room in cwnd) or acked (ours, \
             experimental: as wait, and the repair holds its room until the acker's ACKs \
             answer it)",
            cx,
        )?;
        if pc.repairs != Repairs::Outside && pc.accounting == Accounting::Tokens {
            return cx.err(
                v.span(),
                "flow.repair_accounting",
                "`in-window` and `wait` need accounting = \"pipe\": the token rule (accounting = \
                 \"tokens\", the default of cc = \"pgmcc-paper\") counts no packets in flight",
            );
        }
    }
    Ok(())
}

/// The value of a knob that names one of `options`; otherwise an error at its span that
/// quotes it and says `hint`.
fn choice<T: Copy>(
    v: &Spanned<String>,
    key: &str,
    options: &[(&str, T)],
    hint: &str,
    cx: &Ctx<'_>,
) -> Result<T, ScenarioError> {
    let name = v.get_ref().as_str();
    match options.iter().find(|(n, _)| *n == name) {
        Some(&(_, t)) => Ok(t),
        None => cx.err(v.span(), key, format!("`{name}`: {hint}")),
    }
}

/// Refuses pgmcc's own knobs on a flow run by controller `ctl`; `c` is refused only when
/// `allow_c` is false (the low-weight controllers take it as their switch bias).
pub(super) fn refuse(
    fl: &FlowSpec,
    ctl: Controller,
    allow_c: bool,
    cx: &Ctx<'_>,
) -> Result<(), ScenarioError> {
    let keys = PGMCC_KNOBS.iter().chain(&["realign_tokens"]);
    for &k in keys.filter(|&&k| !(k == "c" && allow_c)) {
        if is_set(fl, k) {
            return cx.err(
                fl.kind.span(),
                &format!("flow.{k}"),
                format!("a pgmcc knob: not for cc = \"{ctl}\""),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgmcc::cc::pgmcc::TimeoutPolicy;

    /// Every key of the list is one `is_set` knows: a flow that sets them all sets each, and
    /// one that sets none sets none. (A key added to the list but not to `is_set` would
    /// never be refused.)
    #[test]
    fn every_pgmcc_key_is_recognised() {
        let all: FlowSpec = toml::from_str(
            "name = \"m\"\nkind = \"pgmcc\"\nfrom = \"S\"\nc = 0.75\nmodel = \"pftk\"\n\
             rtt_unit = \"ms\"\nadaptive_timeout = true\nstall_min = \"200ms\"\n\
             accounting = \"pipe\"\n\
             recovery = \"hold\"\nloss_detection = \"rack\"\nreport_bar = true\nslow_start = \"fixed\"\n\
             loss_report = \"filter\"\nelection = \"paper\"\nsilent_receivers = \"cap\"\n\
             acker_reports = \"check\"\nrepair_accounting = \"outside\"\nrealign_tokens = true",
        )
        .unwrap();
        let none: FlowSpec =
            toml::from_str("name = \"m\"\nkind = \"pgmcc\"\nfrom = \"S\"").unwrap();
        for k in PGMCC_KNOBS.iter().chain(&["realign_tokens"]) {
            assert!(is_set(&all, k), "{k}");
            assert!(!is_set(&none, k), "{k}");
        }
        assert_eq!(PRESET_KNOBS.first(), Some(&"rtt_unit"));
    }

    /// The stall timeout of `base` with the pgmcc flow keys `value` applied.
    fn timeout_with(base: PgmccConfig, value: &str) -> Result<TimeoutPolicy, ScenarioError> {
        let src = format!("name = \"m\"\nkind = \"pgmcc\"\nfrom = \"S\"\n{value}");
        let fl: FlowSpec = toml::from_str(&src).unwrap();
        let cx = Ctx {
            file: "t.toml",
            src: &src,
            emulation: false,
        };
        let mut pc = base;
        apply(&fl, &mut pc, &cx).map(|()| pc.timeout)
    }

    #[test]
    fn stall_min_bounds_an_adaptive_stall_timeout_only() {
        let apply_to = timeout_with;
        let rec = PgmccConfig::recommended();
        let Ok(TimeoutPolicy::Adaptive { min, .. }) = apply_to(rec, "stall_min = \"200ms\"") else {
            panic!("the recommended stall timeout is adaptive");
        };
        assert_eq!(min, pgmcc::Duration::from_millis(200));
        let fixed = apply_to(rec, "adaptive_timeout = false\nstall_min = \"200ms\"");
        assert!(fixed.is_err_and(|e| e.to_string().contains("stall_min")));
        assert!(apply_to(PgmccConfig::default(), "stall_min = \"200ms\"").is_err());
    }

    /// The stall timeout's values on each preset: the key names a rule whatever the
    /// preset's own (`pgmcc`: "linux", the draft's bounded as Linux bounds TCP's RTO;
    /// `pgmcc-paper`: the fixed 3 s).
    #[test]
    fn adaptive_timeout_names_the_same_rule_under_both_presets() {
        let timeout = |base: PgmccConfig, value: &str| timeout_with(base, value).unwrap();
        let (rec, paper) = (PgmccConfig::recommended(), PgmccConfig::default());
        let fixed = PgmccConfig::default().with_fixed_timeout().timeout;
        let draft = PgmccConfig::default().with_draft_timeout().timeout;
        let bench = PgmccConfig::default().with_adaptive_timeout().timeout;
        let linux = PgmccConfig::default().with_linux_timeout().timeout;
        assert_eq!(rec.timeout, linux);
        assert_eq!(paper.timeout, fixed);
        for base in [rec, paper] {
            assert_eq!(timeout(base, "adaptive_timeout = false"), fixed);
            assert_eq!(timeout(base, "adaptive_timeout = true"), bench);
            assert_eq!(timeout(base, "adaptive_timeout = \"benchmark\""), bench);
            assert_eq!(timeout(base, "adaptive_timeout = \"draft\""), draft);
            assert_eq!(timeout(base, "adaptive_timeout = \"linux\""), linux);
            assert_eq!(timeout(base, ""), base.timeout);
        }
    }
}
