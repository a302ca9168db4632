//! `pgmcc fairness`: plan a few small generated scenarios, run their job file under GNU
//! `parallel` (as `make fairness` does), and merge the results into a doc section.

use std::path::Path;
use std::process::Command;

mod common;

fn pgmcc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pgmcc"))
}

fn have_parallel() -> bool {
    Command::new("parallel")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_job_file_runs_under_parallel_and_merges_into_the_doc() {
    if !have_parallel() {
        common::skip(
            "a_job_file_runs_under_parallel_and_merges_into_the_doc",
            "GNU parallel is not installed; scripts/install-deps installs it",
        );
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("f");
    let doc = dir.path().join("fairness.md");
    std::fs::write(&doc, "# Title\n\nKept text.\n").expect("doc");
    // Two cheap scenarios from the development range: at most 2 Mbit/s, one receiver.
    let plan = pgmcc()
        .args([
            "fairness", "plan", "--first", "1", "--count", "2", "--seeds", "1",
        ])
        .args(["--max-rate", "2", "--max-receivers", "1", "--out"])
        .arg(&out)
        .output()
        .expect("plan");
    assert!(
        plan.status.success(),
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );
    let jobs = std::fs::read_to_string(out.join("jobs.txt")).expect("jobs.txt");
    assert_eq!(jobs.lines().count(), 4, "{jobs}");
    assert_eq!(
        std::fs::read_dir(out.join("scenarios"))
            .expect("scenarios")
            .count(),
        4
    );
    // Before any run: the report names what is missing and exits 1.
    let early = pgmcc()
        .args(["fairness", "report", "--no-doc"])
        .arg(&out)
        .output()
        .expect("report");
    assert_eq!(early.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&early.stderr).contains("4 runs have no result"));

    let par = Command::new("parallel")
        .args(["-j", "2", "--halt", "now,fail=1", "--arg-file"])
        .arg(out.join("jobs.txt"))
        .output()
        .expect("parallel");
    assert!(
        par.status.success(),
        "{}",
        String::from_utf8_lossy(&par.stderr)
    );

    let report = || {
        pgmcc()
            .args(["fairness", "report"])
            .arg(&out)
            .arg("--doc")
            .arg(&doc)
            .output()
            .expect("report")
    };
    let rep = report();
    let stdout = String::from_utf8_lossy(&rep.stdout);
    assert!(
        rep.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    assert!(stdout.contains("scenarios: 2;"), "{stdout}");
    let text = std::fs::read_to_string(&doc).expect("doc");
    assert!(text.starts_with("# Title\n\nKept text.\n"));
    assert!(text.contains("<!-- fairness:begin"));
    // One table row per scenario, each with a finite share ratio.
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(" Mbit/s"))
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    for r in rows {
        let share: f64 = r
            .split('|')
            .nth(4)
            .and_then(|c| c.trim().trim_end_matches(" *").parse().ok())
            .expect(r);
        assert!(share.is_finite() && share > 0.0, "{r}");
    }
    // A second report replaces the section instead of adding one.
    let again = report();
    assert!(again.status.success());
    let text2 = std::fs::read_to_string(&doc).expect("doc");
    assert_eq!(text2.matches("<!-- fairness:begin").count(), 1);
    assert_eq!(text, text2);
    assert!(Path::new(&out.join("fairness.csv")).exists());
}
