//! What `pgmcc send` shows while a pass runs: the bar, the progress lines and what they
//! say about the session, and the warning when no receiver acts as acker.

use indicatif::ProgressBar;

use super::report::LineProgress;

/// What a pass shows while it runs: the bar, the progress lines, and the warning that no
/// receiver acts as acker (once).
pub(super) struct Shown {
    /// The bar (hidden with `--quiet` or off a terminal).
    pub(super) pb: ProgressBar,
    /// The progress lines (off a terminal).
    pub(super) lines: LineProgress,
    /// The input's size, when known.
    pub(super) len: Option<u64>,
    /// Congestion control runs: its acker is to be elected.
    pub(super) cc_on: bool,
    /// The acker warning was given.
    pub(super) warned: bool,
}

impl Shown {
    /// The bar and the progress line, `total` bytes read so far ([`show_progress`]).
    pub(super) fn progress(&mut self, st: &pgmcc_net::SenderStatus, total: u64) {
        show_progress(st, total, self.len, &self.pb, &mut self.lines);
    }

    /// The acker warning, when due ([`warn_if_no_acker`]).
    pub(super) fn acker(&mut self, st: &pgmcc_net::SenderStatus) {
        warn_if_no_acker(st, self.cc_on, &mut self.warned, &self.pb);
    }
}

/// The bar and the progress line: what has left as ODATA (of `total` read so far, of `len`
/// if known), not what was read, since the source queues what it is given; and the status.
fn show_progress(
    st: &pgmcc_net::SenderStatus,
    total: u64,
    len: Option<u64>,
    pb: &ProgressBar,
    lines: &mut LineProgress,
) {
    let left = st.stats.odata_bytes.min(total);
    pb.set_position(left);
    lines.tick(left, len);
    pb.set_message(sender_message(st));
}

/// pgmcc needs a receiver that answers its election with ACKs; OpenPGM receivers never do
/// (their PGMCC is broken, docs/interop.md), and the session then crawls at one packet per
/// stall timeout. Say so once instead of looking hung.
fn warn_if_no_acker(
    st: &pgmcc_net::SenderStatus,
    cc_on: bool,
    warned: &mut bool,
    pb: &ProgressBar,
) {
    if cc_on
        && !*warned
        && st.elapsed_secs > 5.0
        && st.acker.is_none()
        && st.stats.acks_received == 0
    {
        *warned = true;
        pb.suspend(|| {
            eprintln!("pgmcc send: warning: no receiver has answered pgmcc's acker election in 5 s; receivers without pgmcc (OpenPGM's, for one) never ACK, so the session crawls. For them use --peer openpgm --rate-max RATE, or add one pgmcc receiver to the group to act as acker.");
        });
    }
}

/// The progress line: acker, its loss, the window, NAKs and repairs so far.
fn sender_message(st: &pgmcc_net::SenderStatus) -> String {
    let mut m = String::new();
    if let Some(a) = st.acker {
        m.push_str(&format!("acker {a}"));
        if let Some(n) = st.acker_reached {
            // What the acker confirmed, against what left.
            m.push_str(&format!(" at {n}/{} packets", st.stats.odata_packets));
        }
        if let Some(l) = st.report_bar {
            m.push_str(&format!(" loss {:.2}%", l * 100.0));
        }
    }
    if let Some(w) = st.window {
        m.push_str(&format!(" window {w:.1}"));
    }
    m.push_str(&format!(
        " NAKs {} repairs {}",
        st.stats.naks_received, st.stats.rdata_packets
    ));
    m
}
