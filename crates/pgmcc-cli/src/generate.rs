//! `pgmcc generate`: the man pages and shell completion scripts, made from the command-line
//! definitions themselves (clap_mangen, clap_complete) so they never drift from `--help`.
//! `make install` runs it; it is hidden from `pgmcc --help`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap_complete::Shell;

/// `pgmcc generate man DIR` or `pgmcc generate completions DIR`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// Man pages into DIR: pgmcc.1, and pgmcc-COMMAND.1 for every command.
    Man {
        /// Directory to write them into (made if missing).
        dir: PathBuf,
    },
    /// Completion scripts into DIR: pgmcc.bash (bash), _pgmcc (zsh) and pgmcc.fish (fish).
    Completions {
        /// Directory to write them into (made if missing).
        dir: PathBuf,
    },
}

/// Writes what `args` asks for, from `cmd`, the whole command line's definition.
pub(crate) fn run(args: &Args, mut cmd: clap::Command) -> Result<ExitCode> {
    match &args.what {
        What::Man { dir } => {
            make_dir(dir)?;
            cmd.build();
            write_man(dir, "pgmcc", &cmd)?;
            // Every visible command but clap's own `help`, which the top page covers.
            let pages = cmd
                .get_subcommands()
                .filter(|s| !s.is_hide_set() && s.get_name() != "help");
            for sub in pages {
                let name = format!("pgmcc-{}", sub.get_name());
                let page = sub.clone().name(name.clone()).bin_name(name.clone());
                write_man(dir, &name, &page)?;
            }
        }
        What::Completions { dir } => {
            make_dir(dir)?;
            for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
                clap_complete::generate_to(shell, &mut cmd, "pgmcc", dir).with_context(|| {
                    format!("writing the {shell} completions into {}", dir.display())
                })?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn make_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// Renders `cmd`'s man page into DIR/NAME.1.
fn write_man(dir: &Path, name: &str, cmd: &clap::Command) -> Result<()> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut page)
        .with_context(|| format!("rendering the man page of {name}"))?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// `pgmcc --help` lists each command on one short line; the long text is under
    /// `pgmcc help COMMAND`.
    #[test]
    fn the_help_screen_has_one_short_line_per_command() {
        let help = crate::Cli::command().render_help().to_string();
        let commands: Vec<&str> = help
            .lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| !l.is_empty())
            .collect();
        assert!(commands.len() >= 9, "{help}");
        for l in commands {
            assert!(l.len() <= 100, "longer than 100 characters: {l}");
        }
    }

    #[test]
    fn man_pages_and_completions_cover_every_command() {
        let dir = tempfile::tempdir().unwrap();
        let man = dir.path().join("man");
        let cli = crate::Cli::command();
        let args = Args {
            what: What::Man { dir: man.clone() },
        };
        assert_eq!(run(&args, cli.clone()).unwrap(), ExitCode::SUCCESS);
        for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
            // (clap adds `help` only when the command is built.)
            let page =
                std::fs::read_to_string(man.join(format!("pgmcc-{}.1", sub.get_name()))).unwrap();
            assert!(page.starts_with(".ie") || page.contains(".TH"), "{page}");
            assert!(
                page.contains(&format!("pgmcc\\-{}", sub.get_name())),
                "{page}"
            );
        }
        let top = std::fs::read_to_string(man.join("pgmcc.1")).unwrap();
        assert!(top.contains("send") && top.contains("recv"), "{top}");
        assert!(!man.join("pgmcc-generate.1").exists(), "generate is hidden");
        assert!(!man.join("pgmcc-help.1").exists());

        let comp = dir.path().join("completions");
        let args = Args {
            what: What::Completions { dir: comp.clone() },
        };
        assert_eq!(run(&args, cli).unwrap(), ExitCode::SUCCESS);
        let bash = std::fs::read_to_string(comp.join("pgmcc.bash")).unwrap();
        assert!(
            bash.contains("--group") && bash.contains("send"),
            "bash completions"
        );
        assert!(comp.join("_pgmcc").exists() && comp.join("pgmcc.fish").exists());
    }
}
