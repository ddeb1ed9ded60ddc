//! `--burn-ns N` / `--burn-iters N` / `--burn-syscalls N` in a service's `args`: checked with the services' own
//! parser (`ping_common::cli`, one definition of their range), so a negative, absurd or
//! non-numeric cost is refused with its config location before anything runs, instead of
//! becoming a service that fails to start in every cell.

use std::ops::Range;

use clap::Parser;
use ping_common::cli::Args;

use super::Errs;

const FLAGS: [&str; 3] = ["--burn-ns", "--burn-iters", "--burn-syscalls"];

/// Every burn flag in `args` (reported at `span`, as `field`) parses as the services parse it.
pub(super) fn check(errs: &mut Errs, span: Range<usize>, field: &str, args: &[String]) {
    for (i, a) in args.iter().enumerate() {
        for flag in FLAGS {
            let given = if a == flag {
                match args.get(i + 1) {
                    Some(v) => v.as_str(),
                    None => {
                        errs.at(span.clone(), field, format!("{flag} needs a value"));
                        continue;
                    }
                }
            } else if let Some(v) = a.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
                v
            } else {
                continue;
            };
            if let Err(e) = Args::try_parse_from(["service".to_owned(), format!("{flag}={given}")])
            {
                errs.at(span.clone(), field, first_line(&e.to_string()));
            }
        }
    }
}

/// clap's message without its "error: " prefix and the usage lines after it.
fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or(message);
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
}
