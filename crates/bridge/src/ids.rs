//! Random ids and the wall clock, written once for every layer: hex digits, random hex from the
//! operating system (session secrets, node, task and nonce ids), and unix milliseconds (the
//! expiry of `requestState`s, the clock of tasks, when a page connected).

use std::time::SystemTime;

/// `bytes` in lowercase hex, two digits each.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `bytes` random bytes from the operating system, hex.
pub(crate) fn random_hex(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).expect("the operating system's random source");
    hex(&buffer)
}

/// `time` in milliseconds since the unix epoch (0 before it).
pub(crate) fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Now, in [`unix_ms`].
pub(crate) fn now_unix_ms() -> u64 {
    unix_ms(SystemTime::now())
}
