//! Socket state seen from outside the service, through iproute2's `ss`: listen backlogs and
//! TIME_WAIT sockets. Where `ss` is missing the checks that need it say so on stderr and skip.

use std::process::Command;

/// `ss <args>` output, or `None` (after a `SKIPPED` line on stderr) if `ss` cannot run here.
pub fn ss(bin: &str, args: &[&str]) -> Option<String> {
    match Command::new("ss").args(args).output() {
        Ok(out) if out.status.success() => Some(String::from_utf8_lossy(&out.stdout).into_owned()),
        Ok(out) => panic!(
            "ss {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => {
            eprintln!("SKIPPED (part of) a check of {bin}: `ss` (iproute2) cannot run here: {e}");
            None
        }
    }
}

/// The backlog (Send-Q) of every LISTEN socket on `port`, or `None` without `ss`.
pub fn listen_backlogs(bin: &str, port: u16) -> Option<Vec<u32>> {
    let out = ss(bin, &["-Hltn", &format!("sport = :{port}")])?;
    Some(
        out.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                // State Recv-Q Send-Q Local Peer; for LISTEN, Send-Q is the backlog.
                let cols: Vec<&str> = l.split_whitespace().collect();
                assert!(cols.len() >= 4 && cols[0] == "LISTEN", "ss line {l:?}");
                cols[2]
                    .parse()
                    .unwrap_or_else(|_| panic!("ss Send-Q in {l:?}"))
            })
            .collect(),
    )
}

/// TIME_WAIT sockets whose local port is `port`, or `None` without `ss`.
pub fn time_wait_count(bin: &str, port: u16) -> Option<usize> {
    let out = ss(
        bin,
        &["-Htan", "state", "time-wait", &format!("sport = :{port}")],
    )?;
    Some(out.lines().filter(|l| !l.trim().is_empty()).count())
}
