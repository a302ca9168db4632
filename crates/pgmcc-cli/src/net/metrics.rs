//! `--metrics ADDR`: the source's or the receiver's counters for Prometheus, as OpenMetrics
//! text at `http://ADDR/metrics` (prometheus-client encodes, hyper serves).
//!
//! Every scrape reads the latest status snapshot the runtime publishes (ten times a
//! second), so serving costs the transfer nothing between scrapes. Counters are the
//! process's: `pgmcc send --passes` adds each finished pass's counters to the next's, and a
//! `pgmcc recv --daemon` counts over all its transfers. The endpoint takes at most
//! [`MAX_CONNECTIONS`] connections at once, each for at most [`REQUEST_TIMEOUT`], one
//! request per connection; it has no authentication, so bind it to a loopback or
//! management address.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use pgmcc_net::{DeliveryStatus, ReceiverStatus, ReceiverStatusWatch, SenderStatus, StatusWatch};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

/// Connections served at once; more wait in the listen backlog.
pub(crate) const MAX_CONNECTIONS: usize = 16;
/// How long one connection may take, request and response.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The OpenMetrics text format's content type.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Listens on `addr` and serves `collector` at `/metrics` from a task of the current
/// runtime until the process ends. Returns the address bound (port 0 picks one).
pub(crate) async fn serve(addr: SocketAddr, collector: impl Collector) -> Result<SocketAddr> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(collector));
    let registry = Arc::new(registry);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("--metrics {addr}: cannot listen there"))?;
    let local = listener
        .local_addr()
        .with_context(|| format!("--metrics {addr}"))?;
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    tokio::spawn(async move {
        loop {
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, say: wait rather than spin.
                    tracing::debug!(error = %e, "metrics: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let registry = registry.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let response = respond(&registry, &req);
                    async move { Ok::<_, Infallible>(response) }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(REQUEST_TIMEOUT)
                    .keep_alive(false)
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                let _ = tokio::time::timeout(REQUEST_TIMEOUT, conn).await;
                drop(slot);
            });
        }
    });
    Ok(local)
}

/// `GET /metrics` (or `HEAD`): the exposition; anything else: 404 or 405, saying where.
fn respond<B>(registry: &Registry, req: &Request<B>) -> Response<Full<Bytes>> {
    let plain = |status: StatusCode, text: &'static str| {
        let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
        *r.status_mut() = status;
        r
    };
    if req.uri().path() != "/metrics" {
        return plain(
            StatusCode::NOT_FOUND,
            "pgmcc: the metrics are at /metrics\n",
        );
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "pgmcc: GET /metrics\n");
    }
    let mut body = String::new();
    if prometheus_client::encoding::text::encode(&mut body, registry).is_err() {
        return plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "pgmcc: encoding failed\n",
        );
    }
    let mut r = Response::new(Full::new(Bytes::from(body)));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(OPENMETRICS));
    r
}

/// A counter: its name (without `_total`), help, and where a status holds it.
type Counter<S> = (&'static str, &'static str, fn(&S) -> u64);

/// The source's counters, summed over passes.
const SEND_COUNTERS: &[Counter<SenderStatus>] = &[
    ("pgmcc_send_sessions", "Sessions (passes) started.", |_| 1),
    (
        "pgmcc_send_data_bytes",
        "Payload bytes sent as original data (ODATA).",
        |s| s.stats.odata_bytes,
    ),
    (
        "pgmcc_send_data_packets",
        "Original data packets sent (ODATA).",
        |s| s.stats.odata_packets,
    ),
    (
        "pgmcc_send_repair_bytes",
        "Payload bytes sent as repairs (RDATA).",
        |s| s.stats.rdata_bytes,
    ),
    (
        "pgmcc_send_repair_packets",
        "Repairs sent (RDATA: retransmissions and parity).",
        |s| s.stats.rdata_packets,
    ),
    (
        "pgmcc_send_parity_packets",
        "Parity packets sent, on demand and pro-active.",
        |s| s.stats.parity_packets + s.stats.proactive_parity_packets,
    ),
    (
        "pgmcc_send_wire_bytes",
        "Bytes of every datagram sent.",
        |s| s.stats.bytes_sent,
    ),
    (
        "pgmcc_send_spm_packets",
        "Source path messages sent (SPMs).",
        |s| s.stats.spm_packets,
    ),
    (
        "pgmcc_send_ncf_packets",
        "NAK confirmations sent (NCFs).",
        |s| s.stats.ncf_packets,
    ),
    (
        "pgmcc_send_naks_received",
        "NAK packets received for this session.",
        |s| s.stats.naks_received,
    ),
    (
        "pgmcc_send_nak_sqns_received",
        "Sequence numbers NAKed (each of a NAK list counts).",
        |s| s.stats.nak_sqns_received,
    ),
    ("pgmcc_send_acks_received", "pgmcc ACKs received.", |s| {
        s.stats.acks_received
    }),
    (
        "pgmcc_send_reports_received",
        "Delivery reports received, repeats included.",
        |s| s.stats.reports_received,
    ),
    (
        "pgmcc_send_send_errors",
        "Datagrams the network refused to take.",
        |s| s.send_errors,
    ),
    (
        "pgmcc_send_repairs_budget_limited",
        "Times a repair or NCF waited for the repair budget.",
        |s| s.stats.repairs_budget_limited,
    ),
];

/// A label value of a counter family, and where a status holds its count.
type Labelled<S> = (&'static str, fn(&S) -> u64);

/// The source's dropped datagrams and refused requests, by reason.
const SEND_DROPS: &[Labelled<SenderStatus>] = &[
    ("malformed", |s| s.stats.malformed),
    ("other_session", |s| s.stats.naks_foreign),
    ("ack_for_unsent_data", |s| s.stats.acks_rejected),
    ("ack_without_proof", |s| s.stats.acks_proof_failed),
    ("nak_outside_window", |s| s.stats.naks_outside_window),
    ("nak_over_source_share", |s| s.stats.nak_sqns_source_limited),
    ("unauthenticated", |s| {
        s.keyed.as_ref().map_or(0, unauthenticated)
    }),
    ("stale", |s| s.keyed.as_ref().map_or(0, |k| k.stale)),
    ("sealed_without_key", |s| s.sealed_without_key),
];

/// Keyed mode's refusals other than staleness: not sealed, another key, the wrong
/// direction, a forgery, a header that does not match its sealed copy.
fn unauthenticated(k: &pgmcc_net::KeyedStats) -> u64 {
    k.not_sealed + k.other_key + k.wrong_direction + k.forged + k.mismatched
}

/// What `pgmcc send --metrics` serves: the finished passes' counters plus the running
/// pass's, and the running (or last) pass's gauges.
#[derive(Debug, Default)]
pub(crate) struct SendMetrics {
    state: Mutex<SendState>,
}

#[derive(Debug, Default)]
struct SendState {
    /// [`SEND_COUNTERS`] then [`SEND_DROPS`], summed over finished passes.
    done: Vec<u64>,
    /// The running pass.
    current: Option<StatusWatch>,
    /// The last finished pass's status, for the gauges between passes and after the last.
    last: Option<SenderStatus>,
}

impl SendMetrics {
    /// A pass started; `watch` follows it.
    pub(crate) fn pass_started(&self, watch: StatusWatch) {
        if let Ok(mut s) = self.state.lock() {
            s.current = Some(watch);
        }
    }

    /// The running pass ended with `status`.
    pub(crate) fn pass_ended(&self, status: &SenderStatus) {
        if let Ok(mut s) = self.state.lock() {
            add_counts(&mut s.done, status);
            s.current = None;
            s.last = Some(status.clone());
        }
    }

    /// The counters now and the status the gauges read.
    fn snapshot(&self) -> (Vec<u64>, Option<SenderStatus>) {
        let Ok(s) = self.state.lock() else {
            return (Vec::new(), None);
        };
        let now = s.current.as_ref().map(StatusWatch::get);
        let mut values = s.done.clone();
        if let Some(st) = &now {
            add_counts(&mut values, st);
        }
        (values, now.or_else(|| s.last.clone()))
    }
}

/// Adds `s`'s counts, [`SEND_COUNTERS`] then [`SEND_DROPS`], to `into`.
fn add_counts(into: &mut Vec<u64>, s: &SenderStatus) {
    let counts = SEND_COUNTERS
        .iter()
        .map(|(_, _, f)| f(s))
        .chain(SEND_DROPS.iter().map(|(_, f)| f(s)));
    into.resize(SEND_COUNTERS.len() + SEND_DROPS.len(), 0);
    for (d, v) in into.iter_mut().zip(counts) {
        *d += v;
    }
}

impl Collector for SendMetrics {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (values, status) = self.snapshot();
        let get = |i: usize| values.get(i).copied().unwrap_or(0);
        for (i, (name, help, _)) in SEND_COUNTERS.iter().enumerate() {
            counter(&mut enc, name, help, get(i))?;
        }
        let drops = SEND_DROPS
            .iter()
            .enumerate()
            .map(|(i, (reason, _))| (*reason, get(SEND_COUNTERS.len() + i)));
        family(
            &mut enc,
            "pgmcc_send_dropped",
            "Datagrams dropped and requests refused, by reason.",
            "reason",
            drops,
        )?;
        let Some(st) = status else {
            return Ok(());
        };
        if let Some(w) = st.window {
            gauge(
                &mut enc,
                "pgmcc_send_window_packets",
                "The congestion window (or rate x RTT), in packets.",
                w,
            )?;
        }
        if let Some(a) = st.acker {
            let mut m = enc.encode_descriptor(
                "pgmcc_send_acker",
                "The receiver whose feedback paces the session.",
                None,
                MetricType::Info,
            )?;
            m.encode_info(&[("address", a.to_string())])?;
        }
        if let Some(r) = st.acker_rtt_secs {
            gauge(
                &mut enc,
                "pgmcc_send_acker_rtt_seconds",
                "The round-trip time to the acker the controller works with.",
                r,
            )?;
        }
        if let Some(p) = st.report_bar {
            gauge(
                &mut enc,
                "pgmcc_send_acker_loss_ratio",
                "The loss rate the acker last reported (0-1).",
                p,
            )?;
        }
        let mut outcomes = [0u64; 4];
        for r in &st.reports {
            let i = match r.status {
                DeliveryStatus::Complete => 0,
                DeliveryStatus::Partial => 1,
                DeliveryStatus::AwaitingPass => 2,
                // Failed, and any status a later version adds.
                _ => 3,
            };
            outcomes[i] += 1;
        }
        let mut m = enc.encode_descriptor(
            "pgmcc_send_receivers",
            "Receivers by the delivery report they sent for the running or last pass.",
            None,
            MetricType::Gauge,
        )?;
        for (outcome, n) in ["complete", "partial", "awaiting_pass", "failed"]
            .into_iter()
            .zip(outcomes)
        {
            ConstGauge::new(n as i64).encode(m.encode_family(&[("outcome", outcome)])?)?;
        }
        Ok(())
    }
}

/// The receiver's counters.
const RECV_COUNTERS: &[Counter<ReceiverStatus>] = &[
    (
        "pgmcc_recv_data_packets",
        "Original data packets received (ODATA).",
        |s| s.stats.odata_packets,
    ),
    (
        "pgmcc_recv_repair_packets",
        "Repairs received (RDATA).",
        |s| s.stats.rdata_packets,
    ),
    (
        "pgmcc_recv_delivered_bytes",
        "Bytes delivered in order.",
        |s| s.stats.bytes_delivered,
    ),
    (
        "pgmcc_recv_delivered_messages",
        "Messages (APDUs) delivered.",
        |s| s.stats.apdus_delivered,
    ),
    (
        "pgmcc_recv_gaps_filled",
        "Missing packets later filled by a repair or parity.",
        |s| s.stats.gaps_filled,
    ),
    (
        "pgmcc_recv_lost_packets",
        "Sequence numbers lost for good (unrecoverable).",
        |s| s.stats.unrecoverable_sqns,
    ),
    (
        "pgmcc_recv_duplicate_packets",
        "Data packets received twice.",
        |s| s.stats.duplicates,
    ),
    ("pgmcc_recv_naks_sent", "NAK packets sent.", |s| {
        s.stats.naks_sent
    }),
    (
        "pgmcc_recv_nak_sqns_sent",
        "Sequence numbers NAKed (each of a NAK list counts).",
        |s| s.stats.nak_sqns_sent,
    ),
    (
        "pgmcc_recv_naks_suppressed",
        "NAKs not sent: an NCF or another receiver's NAK was heard first.",
        |s| s.stats.naks_suppressed,
    ),
    (
        "pgmcc_recv_naks_rate_limited",
        "NAKs held back by the session's NAK budget.",
        |s| s.stats.naks_rate_limited,
    ),
    (
        "pgmcc_recv_acks_sent",
        "pgmcc ACKs sent as the acker.",
        |s| s.stats.acks_sent,
    ),
    (
        "pgmcc_recv_send_errors",
        "Upstream datagrams the network refused to take.",
        |s| s.send_errors,
    ),
];

/// The receiver's dropped datagrams, by reason.
const RECV_DROPS: &[Labelled<ReceiverStatus>] = &[
    ("malformed", |s| s.stats.malformed),
    ("wrong_source", |s| s.stats.wrong_source),
    ("other_session", |s| s.stats.other_session),
    ("implausible", |s| {
        s.stats.implausible_spms + s.stats.implausible_data
    }),
    ("oversized", |s| s.stats.oversized),
    ("over_budget", |s| s.stats.over_budget),
    ("unauthenticated", |s| {
        s.keyed.as_ref().map_or(0, unauthenticated)
    }),
    ("stale", |s| s.keyed.as_ref().map_or(0, |k| k.stale)),
    ("sealed_without_key", |s| s.sealed_without_key),
];

/// What `pgmcc recv --metrics` serves: the receiver's counters (over every transfer of a
/// daemon) and how its transfers ended.
#[derive(Debug)]
pub(crate) struct RecvMetrics {
    watch: ReceiverStatusWatch,
    /// Transfers committed, and failed.
    ended: Mutex<[u64; 2]>,
}

impl RecvMetrics {
    pub(crate) fn new(watch: ReceiverStatusWatch) -> RecvMetrics {
        RecvMetrics {
            watch,
            ended: Mutex::new([0; 2]),
        }
    }

    /// A transfer ended: complete (its output committed) or not.
    pub(crate) fn transfer_ended(&self, complete: bool) {
        if let Ok(mut e) = self.ended.lock() {
            e[usize::from(!complete)] += 1;
        }
    }
}

impl Collector for RecvMetrics {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let st = self.watch.get();
        for (name, help, f) in RECV_COUNTERS {
            counter(&mut enc, name, help, f(&st))?;
        }
        let drops = RECV_DROPS.iter().map(|(r, f)| (*r, f(&st)));
        family(
            &mut enc,
            "pgmcc_recv_dropped",
            "Datagrams dropped, by reason.",
            "reason",
            drops,
        )?;
        let given_up = [
            ("trail", st.stats.given_up_trail),
            ("patience", st.stats.given_up_patience),
            ("overflow", st.stats.given_up_overflow),
        ];
        family(
            &mut enc,
            "pgmcc_recv_given_up",
            "Missing packets given up, by reason: the source's window moved past them, NAKed for their whole patience, or the receive window overflowed.",
            "reason",
            given_up.into_iter(),
        )?;
        let ended = self.ended.lock().map_or([0; 2], |e| *e);
        family(
            &mut enc,
            "pgmcc_recv_transfers",
            "Transfers ended: complete (output committed) or failed.",
            "outcome",
            [("complete", ended[0]), ("failed", ended[1])].into_iter(),
        )?;
        let g = ConstGauge::new(i64::try_from(st.sessions.len()).unwrap_or(i64::MAX));
        g.encode(enc.encode_descriptor(
            "pgmcc_recv_sessions",
            "Sessions tracked now.",
            None,
            g.metric_type(),
        )?)
    }
}

fn counter(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    v: u64,
) -> Result<(), std::fmt::Error> {
    let c = ConstCounter::new(v);
    c.encode(enc.encode_descriptor(name, help, None, c.metric_type())?)
}

fn gauge(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    v: f64,
) -> Result<(), std::fmt::Error> {
    let g = ConstGauge::new(v);
    g.encode(enc.encode_descriptor(name, help, None, g.metric_type())?)
}

/// A counter family with one label.
fn family<'a>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    label: &str,
    values: impl Iterator<Item = (&'a str, u64)>,
) -> Result<(), std::fmt::Error> {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (value, v) in values {
        ConstCounter::new(v).encode(m.encode_family(&[(label, value)])?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrape(c: impl Collector) -> String {
        let mut r = Registry::default();
        r.register_collector(Box::new(c));
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, &r).expect("encodes");
        s
    }

    fn sent(odata: u64) -> SenderStatus {
        let mut s = SenderStatus::default();
        s.stats.odata_packets = odata;
        s.stats.malformed = 2;
        s.window = Some(4.5);
        s.acker = Some("10.0.0.4".parse().expect("address"));
        s
    }

    #[test]
    fn counters_add_up_over_passes_and_gauges_follow_the_last() {
        let m = SendMetrics::default();
        m.pass_ended(&sent(100));
        let mut last = sent(50);
        last.window = Some(2.0);
        m.pass_ended(&last);
        let text = scrape(m);
        assert!(
            text.contains("pgmcc_send_data_packets_total 150\n"),
            "{text}"
        );
        assert!(text.contains("pgmcc_send_sessions_total 2\n"), "{text}");
        assert!(
            text.contains("pgmcc_send_dropped_total{reason=\"malformed\"} 4\n"),
            "{text}"
        );
        assert!(text.contains("pgmcc_send_window_packets 2.0\n"), "{text}");
        assert!(
            text.contains("pgmcc_send_acker_info{address=\"10.0.0.4\"} 1\n"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn only_get_metrics_is_served() {
        let r = Registry::default();
        let req = |m: Method, p: &str| {
            let mut q = Request::new(());
            *q.method_mut() = m;
            *q.uri_mut() = p.parse().expect("uri");
            q
        };
        assert_eq!(
            respond(&r, &req(Method::GET, "/metrics")).status(),
            StatusCode::OK
        );
        assert_eq!(
            respond(&r, &req(Method::GET, "/")).status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            respond(&r, &req(Method::POST, "/metrics")).status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
    }
}
