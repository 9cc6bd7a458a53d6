//! What a process costs, read from Linux `/proc`: resident memory (what "bytes per idle session"
//! divides) and CPU time (what a call costs, which — unlike calls/s — does not depend on what else
//! runs on the machine).

use std::time::Duration;

/// Resident memory of process `pid` in KiB (`VmRSS` of `/proc/<pid>/status`).
pub fn rss_kb(pid: u32) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|e| format!("reading {path}: {e}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse().ok())
        .ok_or_else(|| format!("no VmRSS line in {path}"))
}

/// User + system CPU time of process `pid`, all threads (`/proc/<pid>/stat`).
pub fn cpu_time(pid: u32) -> Result<Duration, String> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).map_err(|e| format!("reading {path}: {e}"))?;
    // The command name (field 2) may hold spaces and parentheses: count fields after its end.
    // After it come field 3 (state) …, field 14 (utime) and 15 (stime), in clock ticks.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |field: usize| fields.get(field - 3).and_then(|v| v.parse::<u64>().ok());
    let (Some(user), Some(system)) = (ticks(14), ticks(15)) else {
        return Err(format!("unexpected format of {path}"));
    };
    let per_second = clock_ticks_per_second();
    Ok(Duration::from_micros(
        (user + system) * 1_000_000 / per_second,
    ))
}

#[cfg(unix)]
fn clock_ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second().max(1)
}

#[cfg(not(unix))]
fn clock_ticks_per_second() -> u64 {
    100
}
