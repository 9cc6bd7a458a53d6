//! What the numbers were measured on: they mean little without the machine.

use serde_json::{json, Value};

pub fn describe(browsers: &[(&str, String)]) -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory_gb = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|l| l.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
        .map(|kb| (kb / 1024.0 / 1024.0 * 10.0).round() / 10.0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let os = std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|l| l.trim_matches('"').to_owned())
        .unwrap_or_default();
    let browsers: serde_json::Map<String, Value> = browsers
        .iter()
        .map(|(name, version)| ((*name).to_owned(), Value::from(version.clone())))
        .collect();
    json!({
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "memoryGb": memory_gb,
        "os": os,
        "kernel": kernel.trim(),
        "browsers": browsers,
    })
}
