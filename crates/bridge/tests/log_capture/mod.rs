//! What the bridge logs, captured for the tests that read it (`partial_results.rs`,
//! `trace_context.rs`): one global `tracing` subscriber writing to memory, shared by every test
//! of the binary (each looks for lines of its own: its session, its trace ids). One copy, so that
//! every such test reads the log alike.

use std::sync::{Arc, Mutex, OnceLock};

type Captured = Arc<Mutex<Vec<u8>>>;

static LOG: OnceLock<Captured> = OnceLock::new();

/// Starts capturing the log, events up to `level` (the first call's: a test binary captures at
/// one level); later calls do nothing.
pub fn capture(level: tracing::Level) {
    LOG.get_or_init(|| {
        let log = Captured::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || Writer(writer.clone()))
            .with_max_level(level)
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        log
    });
}

/// The captured lines that contain `text` (none before [`capture`]).
pub fn logged(text: &str) -> Vec<String> {
    let Some(log) = LOG.get() else {
        return Vec::new();
    };
    let log = log.lock().unwrap();
    String::from_utf8_lossy(&log)
        .lines()
        .filter(|line| line.contains(text))
        .map(str::to_owned)
        .collect()
}

struct Writer(Captured);

impl std::io::Write for Writer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
