//! Parsing of the units scenario files use: durations, rates, queue sizes.

use pgmcc::Duration;

use crate::link::QueueLimit;

fn split_number(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let num: f64 = num.replace('_', "").parse().ok()?;
    (num.is_finite() && num >= 0.0).then(|| (num, unit.trim().to_ascii_lowercase()))
}

/// `"50ms"`, `"1.5s"`, `"300s"`, `"2min"`, `"250us"`.
pub fn duration(s: &str) -> Result<Duration, String> {
    let (n, unit) =
        split_number(s).ok_or_else(|| format!("`{s}` is not a duration (e.g. 50ms, 3s, 2min)"))?;
    let secs = match unit.as_str() {
        "s" | "sec" | "secs" => n,
        "ms" => n / 1e3,
        "us" | "µs" => n / 1e6,
        "ns" => n / 1e9,
        "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "`{s}`: unknown time unit `{unit}` (use ns, us, ms, s, min, h)"
            ))
        }
    };
    if secs > 1e9 {
        return Err(format!("`{s}` is too long"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `"500kbit"`, `"2Mbit"`, `"2 Mbit/s"`, `"1Gbit"`, `"64000bps"`.
pub fn rate(s: &str) -> Result<u64, String> {
    let (n, unit) =
        split_number(s).ok_or_else(|| format!("`{s}` is not a rate (e.g. 500kbit, 2Mbit)"))?;
    let unit = unit.trim_end_matches("/s").trim_end_matches("ps");
    let mult = match unit {
        "" | "b" | "bit" => 1.0,
        "k" | "kb" | "kbit" => 1e3,
        "m" | "mb" | "mbit" => 1e6,
        "g" | "gb" | "gbit" => 1e9,
        _ => {
            return Err(format!(
                "`{s}`: unknown rate unit (use bit, kbit, Mbit, Gbit)"
            ))
        }
    };
    let bps = n * mult;
    if !(1.0..=1e13).contains(&bps) {
        return Err(format!("`{s}` is out of range (1 bit/s .. 10 Tbit/s)"));
    }
    Ok(bps as u64)
}

/// `"30p"`, `"30 packets"`, `"20KB"`, `"45000B"`.
pub fn queue(s: &str) -> Result<QueueLimit, String> {
    let (n, unit) =
        split_number(s).ok_or_else(|| format!("`{s}` is not a queue size (e.g. 30p, 20KB)"))?;
    if n.fract() != 0.0 {
        return Err(format!("`{s}`: queue sizes are whole numbers"));
    }
    let n = n as usize;
    Ok(match unit.as_str() {
        "p" | "pkt" | "pkts" | "packet" | "packets" | "slots" => QueueLimit::Packets(n),
        "b" | "bytes" => QueueLimit::Bytes(n),
        "kb" => QueueLimit::Bytes(n * 1000),
        "kib" => QueueLimit::Bytes(n * 1024),
        "mb" => QueueLimit::Bytes(n * 1_000_000),
        _ => {
            return Err(format!(
                "`{s}`: unknown queue unit (use p for packets, B, KB, MB)"
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_spellings() {
        assert_eq!(duration("50ms"), Ok(Duration::from_millis(50)));
        assert_eq!(duration("2min"), Ok(Duration::from_secs(120)));
        assert_eq!(rate("500kbit"), Ok(500_000));
        assert_eq!(rate("2 Mbit/s"), Ok(2_000_000));
        assert_eq!(rate("64000bps"), Ok(64_000));
        assert_eq!(queue("30p"), Ok(QueueLimit::Packets(30)));
        assert_eq!(queue("20KB"), Ok(QueueLimit::Bytes(20_000)));
        assert!(duration("5 parsecs").is_err());
        assert!(rate("fast").is_err());
        assert!(queue("1.5p").is_err());
    }
}
