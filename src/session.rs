//! The page session id (SPEC §6): kept in `sessionStorage`, so a reload or a reconnect of the same
//! tab resumes the same session on the runtime.

const STORAGE_KEY: &str = "client-tools:session-id";
/// Agent call ids that were running when the page was unloaded (SPEC §5: at most once per id).
const RUNNING_CALLS_KEY: &str = "client-tools:running-calls";

fn storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.session_storage().ok().flatten())
}

/// The call ids the previous page of this session left running (read once, then cleared).
pub fn take_interrupted_calls() -> Vec<String> {
    let Some(storage) = storage() else {
        return Vec::new();
    };
    let stored = storage.get_item(RUNNING_CALLS_KEY).ok().flatten();
    let _ = storage.remove_item(RUNNING_CALLS_KEY);
    stored
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Remembers the running call ids while the page unloads.
pub fn store_running_calls(ids: &[String]) {
    if let (Some(storage), Ok(text)) = (storage(), serde_json::to_string(ids)) {
        let _ = storage.set_item(RUNNING_CALLS_KEY, &text);
    }
}

/// The stored session id, or a new random one (stored when storage is available).
pub fn session_id() -> String {
    let storage = storage();
    if let Some(existing) = storage
        .as_ref()
        .and_then(|s| s.get_item(STORAGE_KEY).ok().flatten())
    {
        if !existing.is_empty() {
            return existing;
        }
    }
    let id = random_id();
    if let Some(storage) = storage {
        let _ = storage.set_item(STORAGE_KEY, &id);
    }
    id
}

/// 128 random bits as hex, from `crypto.getRandomValues` (falls back to `Math.random`).
fn random_id() -> String {
    let mut bytes = [0u8; 16];
    let filled = web_sys::window()
        .and_then(|w| w.crypto().ok())
        .and_then(|c| c.get_random_values_with_u8_array(&mut bytes).ok())
        .is_some();
    if !filled {
        for byte in &mut bytes {
            *byte = (js_sys::Math::random() * 256.0) as u8;
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
