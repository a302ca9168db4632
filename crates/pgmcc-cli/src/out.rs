//! Standard output for the commands whose output is the product (`decode`, `sim`): a reader
//! that goes away early (`pgmcc decode cap.pcap | head`) ends the command quietly with
//! status 0, as it would end `cat`, instead of a panic from `println!`.

use std::io::{ErrorKind, Write};

/// Writes `args` to standard output; on a closed pipe exits 0, on any other write error
/// exits 2 with a message.
pub(crate) fn write(args: std::fmt::Arguments<'_>) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|()| o.flush()) {
        if e.kind() == ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("pgmcc: error: writing to standard output: {e}");
        std::process::exit(2);
    }
}

/// `println!` through [`write`].
macro_rules! outln {
    ($($t:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($t)*)))
    };
}

/// `print!` through [`write`].
macro_rules! out {
    ($($t:tt)*) => {
        $crate::out::write(format_args!($($t)*))
    };
}

pub(crate) use {out, outln};
