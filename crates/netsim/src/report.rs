//! Plots (SVG, drawn with `plotters`) and one self-contained `report.html`.
//!
//! Plots follow the pgmcc paper's figures: a time-sequence plot per run (cumulative payload
//! bytes against time, NAKs marked, vertical lines at acker switches), throughput against
//! time, and the congestion windows (pgmcc W, TCP cwnd) against time.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::agents::report::AgentReport;
use crate::summary::Summary;

/// Colours for flows, in order.
const COLOURS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

type PlotResult = Result<(), Box<dyn std::error::Error>>;

fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

fn max_of<'a>(it: impl Iterator<Item = &'a f64>) -> f64 {
    it.fold(0.0f64, |m, &x| if x.is_finite() { m.max(x) } else { m })
}

/// Throughput of every flow (sender side) against time, with acker switches.
pub fn plot_throughput(s: &Summary, path: &Path) -> PlotResult {
    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let ymax = max_of(s.flows.iter().flat_map(|f| f.series_kbps.iter())).max(1.0) * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{}: throughput", s.scenario), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..s.duration_s, 0f64..ymax)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("kbit/s (per sample)")
        .draw()?;
    for (i, f) in s.flows.iter().enumerate() {
        let c = colour(i);
        chart
            .draw_series(LineSeries::new(
                s.times.iter().copied().zip(f.series_kbps.iter().copied()),
                c.stroke_width(2),
            ))?
            .label(format!("{} ({})", f.name, f.kind))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        for sw in &f.acker_switches {
            chart.draw_series(LineSeries::new(
                vec![(sw.t, 0.0), (sw.t, ymax)],
                BLACK.mix(0.6),
            ))?;
        }
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()?;
    root.present()?;
    Ok(())
}

/// Time-sequence plot: cumulative payload bytes against time, NAKs marked as diamonds,
/// acker switches as vertical lines (the paper's Fig. 3-7 style).
pub fn plot_sequence(s: &Summary, path: &Path) -> PlotResult {
    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let ymax = s
        .flows
        .iter()
        .flat_map(|f| f.sequence_bytes.iter())
        .map(|&b| b as f64)
        .fold(1.0f64, f64::max)
        * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{}: time-sequence (NAKs marked, acker switches as lines)",
                s.scenario
            ),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..s.duration_s, 0f64..ymax)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("payload bytes sent")
        .draw()?;
    for (i, f) in s.flows.iter().enumerate() {
        let c = colour(i);
        let pts: Vec<(f64, f64)> = s
            .times
            .iter()
            .copied()
            .zip(f.sequence_bytes.iter().map(|&b| b as f64))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?
            .label(f.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        let naks = pts
            .iter()
            .zip(&f.naks)
            .filter(|(_, &n)| n > 0)
            .map(|(&(t, y), _)| TriangleMarker::new((t, y), 4, c.filled()));
        chart.draw_series(naks)?;
        for sw in &f.acker_switches {
            chart.draw_series(LineSeries::new(
                vec![(sw.t, 0.0), (sw.t, ymax)],
                BLACK.mix(0.4),
            ))?;
        }
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

/// The congestion windows against time (pgmcc W, TCP cwnd in segments).
pub fn plot_window(s: &Summary, path: &Path) -> PlotResult {
    let root = SVGBackend::new(path, (900, 320)).into_drawing_area();
    root.fill(&WHITE)?;
    let ymax = max_of(s.flows.iter().flat_map(|f| f.window.iter())).max(1.0) * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{}: congestion window (packets)", s.scenario),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..s.duration_s, 0f64..ymax)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("packets")
        .draw()?;
    for (i, f) in s
        .flows
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.window.is_empty())
    {
        let c = colour(i);
        chart
            .draw_series(LineSeries::new(
                s.times.iter().copied().zip(f.window.iter().copied()),
                c.stroke_width(2),
            ))?
            .label(f.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart.configure_series_labels().border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Writes the plots and `report.html` (plots inlined: one file to open or mail).
pub fn write_report(s: &Summary, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let io = |e: Box<dyn std::error::Error>| std::io::Error::other(e.to_string());
    plot_sequence(s, &dir.join("sequence.svg")).map_err(io)?;
    plot_throughput(s, &dir.join("throughput.svg")).map_err(io)?;
    let has_window = s.flows.iter().any(|f| !f.window.is_empty());
    if has_window {
        plot_window(s, &dir.join("window.svg")).map_err(io)?;
    }
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{name}</title>\
         <style>body{{font-family:sans-serif;max-width:960px;margin:2em auto}}\
         table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}\
         th{{background:#f4f4f4}}td:first-child,th:first-child{{text-align:left}}</style></head><body>\
         <h1>{name}</h1><p>{desc}</p><p>seed {seed}, {dur:.0} s simulated, sample {sample} s, {ev} events</p>",
        name = esc(&s.scenario),
        desc = esc(&s.description),
        seed = s.seed,
        dur = s.duration_s,
        sample = s.sample_s,
        ev = s.events
    );
    h.push_str("<h2>Flows</h2><table><tr><th>flow</th><th>kind</th><th>mean kbit/s</th><th>bytes</th><th>acker switches</th><th>loss events</th><th>NAKs</th><th>receivers (mean kbit/s)</th></tr>");
    for f in &s.flows {
        // A PGM source's loss events and NAKs; "-" for TCP and for a source never started.
        let (loss_events, naks) = match &f.report {
            AgentReport::PgmSender(Some(r)) => (
                format!("{:.0}", r.loss_events as f64),
                format!("{:.0}", r.naks_received as f64),
            ),
            _ => ("-".to_string(), "-".to_string()),
        };
        let rx: Vec<String> = f
            .receivers
            .iter()
            .map(|r| format!("{} {:.0}", esc(&r.node), r.mean_kbps))
            .collect();
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&f.name),
            esc(&f.kind),
            f.mean_kbps,
            f.bytes,
            f.acker_switches.len(),
            loss_events,
            naks,
            rx.join(", ")
        );
    }
    h.push_str("</table>");
    for (title, file) in [
        ("Time-sequence", "sequence.svg"),
        ("Throughput", "throughput.svg"),
        ("pgmcc window", "window.svg"),
    ] {
        if file == "window.svg" && !has_window {
            continue;
        }
        let svg = std::fs::read_to_string(dir.join(file))?;
        let _ = write!(h, "<h2>{title}</h2>{svg}");
    }
    h.push_str("<h2>Links</h2><table><tr><th>link</th><th>utilisation</th><th>packets</th><th>queue drops</th><th>random losses</th></tr>");
    for l in &s.links {
        let _ = write!(
            h,
            "<tr><td>{} &rarr; {}</td><td>{:.1}%</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&l.from),
            esc(&l.to),
            l.utilisation * 100.0,
            l.packets,
            l.queue_drops,
            l.random_losses
        );
    }
    h.push_str("</table><p>Data: <code>summary.json</code>, <code>timeseries.csv</code> beside this file.</p></body></html>\n");
    std::fs::write(dir.join("report.html"), h)
}
