//! The page session id (SPEC §6): kept in `sessionStorage`, so a reload or a reconnect of the same
//! tab resumes the same session on the runtime.

const STORAGE_KEY: &str = "client-tools:session-id";

/// The stored session id, or a new random one (stored when storage is available).
pub fn session_id() -> String {
    let storage = web_sys::window().and_then(|w| w.session_storage().ok().flatten());
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
