//! The steps a command announces, timed: each step's time is printed when the next one starts, and
//! the whole list at the end (issue 25: a first run and `.ci/run` reported step by step, so the long
//! steps have names and numbers).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The steps so far: what each said and when it started.
static STEPS: Mutex<Vec<(String, Instant)>> = Mutex::new(Vec::new());

/// Prints a step the way every command announces what it does, after the time the previous one took.
pub fn step(message: &str) {
    let now = Instant::now();
    let mut steps = STEPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, started)) = steps.last() {
        eprintln!("    ({})", duration(now - *started));
    }
    eprintln!("\n==> {message}");
    steps.push((message.to_owned(), now));
}

/// Prints every step with its time and the total, slowest first after the list in order.
pub fn print_summary() {
    let now = Instant::now();
    let steps = STEPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let Some((_, first)) = steps.first() else {
        return;
    };
    let mut timed: Vec<(&str, Duration)> = steps
        .iter()
        .enumerate()
        .map(|(i, (message, started))| {
            let ended = steps.get(i + 1).map_or(now, |(_, next)| *next);
            (first_line(message), ended - *started)
        })
        .collect();
    eprintln!("\n==> Time per step (total {})", duration(now - *first));
    for (message, took) in &timed {
        eprintln!("    {:>9}  {message}", duration(*took));
    }
    timed.sort_by_key(|(_, took)| std::cmp::Reverse(*took));
    let slowest: Vec<String> = timed
        .iter()
        .take(3)
        .map(|(message, took)| format!("{} ({message})", duration(*took)))
        .collect();
    eprintln!("    slowest: {}", slowest.join("; "));
}

fn first_line(message: &str) -> &str {
    let line = message.lines().next().unwrap_or(message);
    line.char_indices()
        .nth(90)
        .map_or(line, |(cut, _)| &line[..cut])
}

fn duration(took: Duration) -> String {
    let seconds = took.as_secs_f64();
    if seconds < 60.0 {
        format!("{seconds:.1} s")
    } else {
        format!("{}m{:02}s", (seconds / 60.0) as u64, seconds as u64 % 60)
    }
}
