//! `--wait[=SECS]` for the commands that write (`import`, `put`,
//! `delete`, `delete-range`, `compact`, `checkpoint`, `options --reset`,
//! `keyspace create|drop`): wait for another process to close the database instead of
//! failing at once with exit 4.

use std::time::{Duration, Instant};

use clap::Args;

use crate::error::CliError;

/// How long a writer waits for the database lock: `None` for as long as
/// it takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wait(pub Option<Duration>);

/// The `--wait` flag, flattened into a writer's arguments.
#[derive(Debug, Clone, Args)]
pub struct WaitArg {
    /// If another process has the database open, wait until it closes it
    /// (at most SECS seconds, e.g. --wait=2.5; a bare --wait waits as long
    /// as it takes) instead of failing at once with exit 4
    #[arg(
        long,
        value_name = "SECS",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "forever",
        value_parser = parse_wait
    )]
    pub wait: Option<Wait>,
}

/// Parses `--wait`'s value: seconds (a decimal is fine), or `forever`.
pub fn parse_wait(s: &str) -> Result<Wait, String> {
    if s == "forever" {
        return Ok(Wait(None));
    }
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds (e.g. --wait=10)"))?;
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("`{s}` is not a number of seconds (e.g. --wait=10)"));
    }
    let limit = Duration::try_from_secs_f64(secs).map_err(|_| {
        format!(
            "`{s}` seconds is longer than kvctl can wait; a bare --wait waits as long as it takes"
        )
    })?;
    Ok(Wait(Some(limit)))
}

/// Pause between two tries (the engine itself retries a held lock for
/// 200 ms before it answers `Locked`).
const PAUSE: Duration = Duration::from_millis(20);

/// Calls `open` until it returns anything but [`siftdb::Error::Locked`],
/// or, with `wait` bounded, until that much time has passed; without
/// `wait`, calls it once. A lock still held at the end is exit 4, and the
/// hint says how long kvctl waited (or that `--wait` would have).
pub fn retry_locked<T>(
    wait: Option<Wait>,
    mut open: impl FnMut() -> siftdb::Result<T>,
) -> Result<T, CliError> {
    let start = Instant::now();
    loop {
        match open() {
            Err(e @ siftdb::Error::Locked(_)) => {
                let limit = match wait {
                    None => {
                        return Err(CliError::from(e).with_hint(
                            "another process has the database open; close it and retry, or \
                             pass --wait to wait for it",
                        ))
                    }
                    Some(Wait(limit)) => limit,
                };
                if let Some(limit) = limit {
                    if start.elapsed() >= limit {
                        return Err(CliError::from(e).with_hint(format!(
                            "another process kept the database open for the {:.1} s --wait \
                             allowed",
                            limit.as_secs_f64()
                        )));
                    }
                }
                std::thread::sleep(PAUSE);
            }
            other => return Ok(other?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_values_parse() {
        assert_eq!(parse_wait("forever"), Ok(Wait(None)));
        assert_eq!(
            parse_wait("2.5"),
            Ok(Wait(Some(Duration::from_millis(2500))))
        );
        assert_eq!(parse_wait("0"), Ok(Wait(Some(Duration::ZERO))));
        assert!(parse_wait("-1").is_err());
        assert!(parse_wait("inf").is_err());
        assert!(parse_wait("soon").is_err());
    }

    /// A finite number of seconds too large for a `Duration` (past about
    /// 1.8e19) is a usage error, not a panic (found by a new-user trial:
    /// `--wait=1e20` panicked in `Duration::from_secs_f64`).
    #[test]
    fn a_wait_too_long_for_a_duration_is_refused() {
        for s in ["1e20", "2e19", "99999999999999999999", "1e308"] {
            let e = parse_wait(s).unwrap_err();
            assert!(e.contains("bare --wait"), "{s}: {e}");
        }
        assert!(parse_wait("1.8e19").is_ok());
    }

    #[test]
    fn retries_only_a_held_lock_and_only_with_wait() {
        let locked = || siftdb::Error::Locked("db".into());
        let mut tries = 0;
        let e = retry_locked::<()>(None, || {
            tries += 1;
            Err(locked())
        })
        .unwrap_err();
        assert_eq!((tries, e.code), (1, crate::error::EXIT_IO));
        assert!(e.to_string().contains("pass --wait"), "{e}");

        let mut tries = 0;
        let got = retry_locked(Some(Wait(None)), || {
            tries += 1;
            if tries < 3 {
                Err(locked())
            } else {
                Ok(tries)
            }
        });
        assert_eq!(got.unwrap(), 3);

        let e = retry_locked::<()>(Some(Wait(Some(Duration::ZERO))), || Err(locked())).unwrap_err();
        assert!(
            e.to_string()
                .contains("kept the database open for the 0.0 s --wait allowed"),
            "{e}"
        );

        // Another error is not retried.
        let mut tries = 0;
        let e = retry_locked::<()>(Some(Wait(None)), || {
            tries += 1;
            Err(siftdb::Error::InvalidArgument("bad".into()))
        })
        .unwrap_err();
        assert_eq!((tries, e.code), (1, crate::error::EXIT_USAGE));
    }
}
