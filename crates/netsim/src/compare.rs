//! The same topologies under each congestion controller (issue 10): a comparison matrix
//! (`scenarios/compare/matrix.toml`) names base scenarios and controllers; [`build`] turns
//! one (topology, controller, seed) into a runnable [`Scenario`] by setting `cc` on the
//! base's PGM flows, and [`measure`] computes the comparison's metrics from a run.
//!
//! Matrix file:
//!
//! ```toml
//! controllers = ["pgmcc", "tfmcc"]
//!
//! [[topology]]
//! label = "Fig. 5"            # row label
//! base = "../fig5.toml"       # relative to the matrix file
//! flows = ["pgmcc"]           # PGM flows to put under each controller (default: all)
//! tcp = "tcp"                 # the TCP flow for f (optional)
//! from = "130s"               # f is measured over from..to
//! to = "240s"
//! step = "120s"               # a step change (optional): responsiveness is measured after it
//! settle_until = "240s"       # the end of the phase the step starts
//! duration = "300s"           # overrides the base's duration (optional)
//! ```
//!
//! Controller names are the registry's ([`pgmcc::cc::Controller`]), the same as a flow's
//! `cc` key. Knobs of the base that only pgmcc understands (`c`, `model`, `rtt_unit`,
//! `adaptive_timeout`, `accounting`, `recovery`) apply to the rows of both pgmcc names (`pgmcc`, our
//! recommended pgmcc, and `pgmcc-paper`, the published one); for the other controllers they are removed, so each controller runs with its own defaults.

use std::path::{Path, PathBuf};

use pgmcc::cc::Controller;
use serde::Deserialize;
use toml::Spanned;

use crate::agents::report::AgentReport;
use crate::scenario::{self, Scenario, ScenarioError};
use crate::summary::{mean_between, Summary};
use crate::units;

/// Band around the phase's final mean that counts as settled (+-25%).
pub const SETTLE_BAND: f64 = 0.25;

/// Moving-average window applied before judging whether a rate has settled, seconds.
pub const SETTLE_SMOOTHING_S: f64 = 5.0;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixFile {
    controllers: Spanned<Vec<String>>,
    #[serde(rename = "topology")]
    topologies: Vec<TopologySpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TopologySpec {
    label: String,
    base: Spanned<String>,
    flows: Option<Vec<String>>,
    tcp: Option<String>,
    from: Spanned<String>,
    to: Option<Spanned<String>>,
    step: Option<Spanned<String>>,
    settle_until: Option<Spanned<String>>,
    duration: Option<Spanned<String>>,
}

/// One topology of the matrix.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Row label.
    pub label: String,
    /// The base scenario file.
    pub base: PathBuf,
    /// Names of the PGM flows put under each controller (empty = every PGM flow).
    pub flows: Vec<String>,
    /// Name of the TCP flow f is computed against.
    pub tcp: Option<String>,
    /// Measurement window start, seconds.
    pub from_s: f64,
    /// Measurement window end, seconds (`None` = the end of the run).
    pub to_s: Option<f64>,
    /// A step change and the end of its phase, seconds.
    pub step: Option<(f64, f64)>,
    /// Duration override, e.g. "600s".
    pub duration: Option<String>,
}

/// A comparison matrix: controllers x topologies.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// Values for a PGM flow's `cc` key, in table order.
    pub controllers: Vec<String>,
    /// Topologies, in file order.
    pub topologies: Vec<Topology>,
}

fn error(
    file: &str,
    src: &str,
    span: std::ops::Range<usize>,
    key: &str,
    msg: String,
) -> ScenarioError {
    let line = src[..span.start.min(src.len())].matches('\n').count() + 1;
    ScenarioError {
        file: file.to_string(),
        line,
        key: key.to_string(),
        message: msg,
    }
}

/// Reads a matrix file; base paths are resolved relative to it and must exist.
pub fn load_matrix(path: &Path) -> Result<Matrix, ScenarioError> {
    let (file, src) = ScenarioError::read(path)?;
    let m: MatrixFile = toml::from_str(&src).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        error(&file, &src, span, "toml", e.message().to_string())
    })?;
    if m.controllers.get_ref().is_empty() {
        return Err(error(
            &file,
            &src,
            m.controllers.span(),
            "controllers",
            "name at least one controller".into(),
        ));
    }
    if m.topologies.is_empty() {
        return Err(error(
            &file,
            &src,
            0..0,
            "topology",
            "no [[topology]] tables".into(),
        ));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let secs = |s: &Spanned<String>, key: &str| -> Result<f64, ScenarioError> {
        units::duration(s.get_ref())
            .map(|d| d.as_secs_f64())
            .map_err(|msg| error(&file, &src, s.span(), key, msg))
    };
    let mut topologies = Vec::new();
    for t in &m.topologies {
        let base = dir.join(t.base.get_ref());
        if !base.is_file() {
            return Err(error(
                &file,
                &src,
                t.base.span(),
                "topology.base",
                format!("{} is not a file", base.display()),
            ));
        }
        let from_s = secs(&t.from, "topology.from")?;
        let to_s = t.to.as_ref().map(|s| secs(s, "topology.to")).transpose()?;
        let step = match (&t.step, &t.settle_until) {
            (Some(s), Some(u)) => {
                let (s_s, u_s) = (secs(s, "topology.step")?, secs(u, "topology.settle_until")?);
                if u_s <= s_s {
                    return Err(error(
                        &file,
                        &src,
                        u.span(),
                        "topology.settle_until",
                        "must come after step".into(),
                    ));
                }
                Some((s_s, u_s))
            }
            (None, None) => None,
            (Some(s), None) => {
                return Err(error(
                    &file,
                    &src,
                    s.span(),
                    "topology.settle_until",
                    "step needs settle_until".into(),
                ))
            }
            (None, Some(u)) => {
                return Err(error(
                    &file,
                    &src,
                    u.span(),
                    "topology.step",
                    "settle_until needs step".into(),
                ))
            }
        };
        let duration = match &t.duration {
            Some(d) => {
                secs(d, "topology.duration")?;
                Some(d.get_ref().clone())
            }
            None => None,
        };
        topologies.push(Topology {
            label: t.label.clone(),
            base,
            flows: t.flows.clone().unwrap_or_default(),
            tcp: t.tcp.clone(),
            from_s,
            to_s,
            step,
            duration,
        });
    }
    Ok(Matrix {
        controllers: m.controllers.into_inner(),
        topologies,
    })
}

/// The base scenario of `topo` with `controller` as the `cc` of its compared PGM flows and
/// `seed`, ready to run. The scenario is named `<base stem>-<controller>`. A name the
/// registry does not know is an error naming `flow.cc`.
pub fn build(topo: &Topology, controller: &str, seed: u64) -> Result<Scenario, ScenarioError> {
    let file = topo.base.display().to_string();
    let fail = |key: &str, message: String| ScenarioError {
        file: file.clone(),
        line: 0,
        key: key.to_string(),
        message,
    };
    let ctl: Controller = controller.parse().map_err(|e| ScenarioError {
        file: format!("{file} (cc = \"{controller}\")"),
        line: 0,
        key: "flow.cc".into(),
        message: format!("{e}"),
    })?;
    let src =
        std::fs::read_to_string(&topo.base).map_err(|e| fail("-", format!("cannot read: {e}")))?;
    let mut table: toml::Table = src
        .parse()
        .map_err(|e: toml::de::Error| fail("toml", e.message().to_string()))?;
    let stem = topo
        .base
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = format!("{stem}-{controller}");
    table.insert("name".into(), toml::Value::String(name.clone()));
    table.remove("reproduce");
    if let Some(d) = &topo.duration {
        table.insert("duration".into(), toml::Value::String(d.clone()));
    }
    if !matches!(table.get("flow"), Some(toml::Value::Array(_))) {
        return Err(fail("flow", "the base scenario has no [[flow]]".into()));
    }
    let drop: &[&str] = if ctl.is_pgmcc() {
        &[]
    } else {
        &scenario::PGMCC_KNOBS
    };
    let changed = scenario::set_pgm_cc(
        &mut table,
        ctl,
        |fl| {
            let named = fl.get("name").and_then(|n| n.as_str()).unwrap_or_default();
            topo.flows.is_empty() || topo.flows.iter().any(|f| f == named)
        },
        drop,
    );
    if changed == 0 {
        return Err(fail(
            "flow",
            format!("no PGM flow to compare (flows = {:?})", topo.flows),
        ));
    }
    let text = toml::to_string(&table).map_err(|e| fail("toml", e.to_string()))?;
    scenario::parse(
        &format!("{file} (cc = \"{controller}\")"),
        &text,
        &name,
        Some(seed),
    )
}

/// What one run of one (topology, controller) measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    /// Mean rate of the compared flows over the window, per flow, kbit/s.
    pub ctl_kbps: f64,
    /// The TCP flow's mean rate over the window, kbit/s (NaN without one).
    pub tcp_kbps: f64,
    /// f = TCP / controlled flow (NaN without TCP or when the flows sent nothing).
    pub f: f64,
    /// Feedback packets the receivers sent (NAKs and ACKs) per data packet (ODATA) the
    /// compared flows sent, over the whole run.
    pub feedback_per_data: f64,
    /// Seconds after the step until the compared flows' total rate (smoothed over
    /// [`SETTLE_SMOOTHING_S`]) first comes within [`SETTLE_BAND`] of its mean over the second
    /// half of the phase (the new level); `None` without a step or when it never does.
    pub settle_s: Option<f64>,
}

/// Computes the metrics of one run of `topo`.
pub fn measure(s: &Summary, topo: &Topology) -> Metrics {
    let ctl: Vec<_> = s
        .flows
        .iter()
        .filter(|f| f.kind == "pgmcc" && (topo.flows.is_empty() || topo.flows.contains(&f.name)))
        .collect();
    let to = topo.to_s.unwrap_or(s.duration_s);
    let n = ctl.len().max(1) as f64;
    let ctl_kbps = ctl
        .iter()
        .map(|f| mean_between(s, &f.series_kbps, topo.from_s, to))
        .sum::<f64>()
        / n;
    let tcp_kbps = topo
        .tcp
        .as_ref()
        .and_then(|t| s.flows.iter().find(|f| &f.name == t))
        .map_or(f64::NAN, |f| {
            mean_between(s, &f.series_kbps, topo.from_s, to)
        });
    let f = if ctl_kbps > 0.0 {
        tcp_kbps / ctl_kbps
    } else {
        f64::NAN
    };
    let data: f64 = ctl
        .iter()
        .map(|f| match &f.report {
            AgentReport::PgmSender(Some(r)) => r.odata_packets as f64,
            _ => 0.0,
        })
        .sum();
    let feedback: f64 = ctl
        .iter()
        .flat_map(|f| &f.receivers)
        .map(|r| match &r.report {
            AgentReport::PgmReceiver(Some(r)) => r.naks_sent as f64 + r.acks_sent as f64,
            _ => 0.0,
        })
        .sum();
    let feedback_per_data = if data > 0.0 {
        feedback / data
    } else {
        f64::NAN
    };
    let settle_s = topo.step.and_then(|(step, until)| {
        let total: Vec<f64> = (0..s.times.len())
            .map(|i| {
                ctl.iter()
                    .map(|f| f.series_kbps.get(i).copied().unwrap_or(0.0))
                    .sum()
            })
            .collect();
        settle_time(&s.times, &total, s.sample_s, step, until)
    });
    Metrics {
        ctl_kbps,
        tcp_kbps,
        f,
        feedback_per_data,
        settle_s,
    }
}

/// Seconds after `step` until the moving average of `series` (sampled at `times`, interval
/// ends) first comes within [`SETTLE_BAND`] of the mean of the phase's second half
/// (`step + (until - step) / 2 .. until`): how long the controller takes to reach its new
/// level, to one sample interval (the start of the first sample inside the band). Requiring
/// it to *stay* inside measures noise instead: a window-based flow sharing a link with TCP
/// swings more than +-25% from sample to sample.
pub fn settle_time(
    times: &[f64],
    series: &[f64],
    sample_s: f64,
    step: f64,
    until: f64,
) -> Option<f64> {
    let k = ((SETTLE_SMOOTHING_S / sample_s.max(1e-9)).round() as usize).max(1);
    let phase: Vec<(f64, f64)> = times
        .iter()
        .zip(series)
        .filter(|(t, _)| **t > step && **t <= until)
        .map(|(t, x)| (*t, *x))
        .collect();
    let half = step + (until - step) / 2.0;
    let tail: Vec<f64> = phase
        .iter()
        .filter(|(t, _)| *t > half)
        .map(|(_, x)| *x)
        .collect();
    if tail.is_empty() {
        return None;
    }
    let target = tail.iter().sum::<f64>() / tail.len() as f64;
    if target <= 0.0 {
        return None;
    }
    // Moving average ending at each sample (shorter at the phase's start).
    let smooth: Vec<(f64, f64)> = (0..phase.len())
        .map(|i| {
            let w = &phase[i.saturating_sub(k - 1)..=i];
            (
                phase[i].0,
                w.iter().map(|(_, x)| x).sum::<f64>() / w.len() as f64,
            )
        })
        .collect();
    let inside = |x: f64| (x - target).abs() <= SETTLE_BAND * target;
    // Settled at the end of the interval before the first sample inside the band (0 when
    // the first sample after the step is already inside).
    smooth
        .iter()
        .position(|(_, x)| inside(*x))
        .map(|i| (smooth[i].0 - sample_s - step).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(f: impl Fn(f64) -> f64) -> (Vec<f64>, Vec<f64>) {
        let times: Vec<f64> = (1..=300).map(f64::from).collect();
        let xs = times.iter().map(|t| f(*t)).collect();
        (times, xs)
    }

    #[test]
    fn settles_when_the_rate_reaches_its_new_level() {
        // 500 before the step at 100 s; from 100 s a linear ramp down reaching 250 at
        // 120 s, then flat. The band is 250 +- 62.5; the 5-s average of the ramp reaches
        // 312.5 at 117 s, so the rate settled during the interval 116-117 s.
        let (t, x) = series(|t| {
            if t <= 100.0 {
                500.0
            } else if t <= 120.0 {
                500.0 - 12.5 * (t - 100.0)
            } else {
                250.0
            }
        });
        assert_eq!(settle_time(&t, &x, 1.0, 100.0, 300.0), Some(16.0));
    }

    #[test]
    fn a_rate_that_never_reaches_its_final_level_never_settles() {
        // 100 until 290 s, then 10000: the second half's mean (1090) is never within 25%:
        // far below before the jump, far above after it (5-s averages 2080, 4060, ...).
        let (t, x) = series(|t| if t <= 290.0 { 100.0 } else { 10000.0 });
        assert_eq!(settle_time(&t, &x, 1.0, 100.0, 300.0), None);
    }

    #[test]
    fn a_flat_rate_is_settled_at_once() {
        let (t, x) = series(|_| 400.0);
        assert_eq!(settle_time(&t, &x, 1.0, 100.0, 300.0), Some(0.0));
    }

    #[test]
    fn a_slow_climb_takes_as_long_as_it_climbs() {
        // From 0 at the step, +10 kbit/s per second up to 400 at 140 s. The 5-s average
        // first reaches 300 (the band's floor) at 132 s.
        let (t, x) = series(|t| (10.0 * (t - 100.0)).clamp(0.0, 400.0));
        assert_eq!(settle_time(&t, &x, 1.0, 100.0, 300.0), Some(31.0));
    }

    #[test]
    fn coarse_samples_use_one_sample() {
        // 10-s samples: no smoothing; 0 until 30 s, then 400.
        let times: Vec<f64> = (1..=100).map(|i| f64::from(i) * 10.0).collect();
        let x: Vec<f64> = times
            .iter()
            .map(|t| if *t <= 30.0 { 0.0 } else { 400.0 })
            .collect();
        assert_eq!(settle_time(&times, &x, 10.0, 0.0, 1000.0), Some(30.0));
    }
}
