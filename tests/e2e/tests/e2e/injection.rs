//! The injection corpus (`www/injection-corpus.json`, 64 payloads) against the built-in UI, in
//! Chromium and Firefox: every payload sits in every agent- or page-supplied string the dialog shows
//! (tool name, title, description, field titles and help, enum and `oneOf` labels, defaults, legends,
//! the proposed input, an edited value echoed by a field error, the reject reason). Zero scripts
//! run, zero markup is rendered: the UI holds only the elements it builds itself, no element carries
//! an event-handler attribute, and the payload shows as the literal text it is.

use std::time::Duration;

use client_tools_bridge::{BridgeConfig, CallOptions};
use client_tools_e2e::webdriver::{BrowserKind, Driven};
use client_tools_e2e::BridgeOnly;
use fantoccini::key::Key;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_renders_no_payload() {
    corpus_in(BrowserKind::Chromium).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn firefox_renders_no_payload() {
    corpus_in(BrowserKind::Firefox).await;
}

/// Looks at the open dialog for one payload; returns what is wrong, or `null` when all holds.
const INSPECT: &str = r#"
const [payload, step] = arguments;
const host = document.querySelector('client-tools-ui');
const root = host?.shadowRoot;
const dialog = root?.querySelector('dialog');
if (!dialog || !dialog.open) return 'waiting';
if (!root.querySelector('[data-ct="original-name"]')?.textContent.includes(payload)) return 'waiting';
// Only the elements the UI builds; nothing a payload could have made.
const allowed = new Set(['style', 'dialog', 'form', 'fieldset', 'legend', 'label', 'input',
  'select', 'option', 'textarea', 'button', 'div', 'span', 'p', 'h1', 'h2', 'h3', 'small', 'output',
  'ul', 'ol', 'li', 'strong', 'em', 'code', 'header', 'footer', 'section']);
const problems = [];
for (const el of root.querySelectorAll('*')) {
  const tag = el.tagName.toLowerCase();
  if (!allowed.has(tag)) problems.push('element <' + tag + '>');
  for (const attr of el.attributes) {
    if (attr.name.startsWith('on')) problems.push('attribute ' + attr.name + ' on <' + tag + '>');
    if (/^\s*(javascript|data):/i.test(attr.value) && attr.name !== 'value' && attr.name !== 'title'
        && attr.name !== 'aria-label' && attr.name !== 'placeholder')
      problems.push('url attribute ' + attr.name + '="' + attr.value + '"');
  }
}
if (root.querySelectorAll('style').length > 1) problems.push('more than one style element');
// The page around the UI gained nothing either.
for (const el of document.querySelectorAll('img, iframe, object, embed, svg, math, video, audio, marquee, details, h1, custom-el'))
  problems.push('page element <' + el.tagName.toLowerCase() + '>');
// The payload is shown as text: in the description and as the proposed input.
const text = dialog.textContent;
if (!root.querySelector('[data-ct="description"]').textContent.includes(payload)) problems.push('description not shown as text');
const field = root.querySelector('[data-path="/text"]');
if (!field || field.value !== payload) problems.push('input value not kept verbatim');
if (!text.includes(payload)) problems.push('payload not shown as text');
if (window.pwned !== 0) problems.push('script ran: pwned=' + window.pwned);
if (getComputedStyle(host).display === 'none') problems.push('the host was hidden');
if (step === 'error') {
  const strict = root.querySelector('[data-path="/strict"]');
  if (strict.getAttribute('aria-invalid') !== 'true') return 'waiting';
  // jsonschema quotes the value as JSON text: `"<payload>" does not match "^safe$"`.
  const errors = [...root.querySelectorAll('[data-ct="error"]')].map((e) => e.textContent).join(' ');
  if (!errors.includes(JSON.stringify(payload))) problems.push('error message not shown as text: ' + errors);
}
return problems.length ? problems.join('; ') : null;
"#;

async fn corpus_in(kind: BrowserKind) {
    let served = BridgeOnly::serving_package(BridgeConfig::default()).await;
    let driven = Driven::start(kind).await;
    driven
        .goto(&format!("{}/injection.html", served.base_url))
        .await;
    let page = served
        .bridge
        .wait_for_page(Duration::from_secs(60))
        .await
        .expect("the injection page connected");
    driven
        .until(
            "the corpus tools are defined",
            "return document.getElementById('status').textContent === 'ready'",
        )
        .await;
    let corpus = driven.eval("return window.corpus", vec![]).await;
    let names = driven.eval("return window.injectionTools", vec![]).await;
    let (Value::Array(corpus), Value::Array(names)) = (corpus, names) else {
        panic!("the page exposes its corpus and tool names");
    };
    assert!(corpus.len() >= 50, "at least 50 payloads");

    for (payload, name) in corpus.iter().zip(&names) {
        let payload_text = payload.as_str().unwrap();
        let arguments = json!({
            "text": payload, "choice": payload, "picked": "a",
            "nested": {"inner": payload}, "list": [payload, payload],
        });
        let call = {
            let page = page.clone();
            let name = name.as_str().unwrap().to_owned();
            tokio::spawn(async move {
                page.call_tool(
                    (&name, arguments),
                    CallOptions::new().timeout(Duration::from_secs(60)),
                )
                .await
                .into_result()
            })
        };
        assert_eq!(inspect(&driven, payload, "shown").await, Value::Null);

        // An edit the schema refuses: the error message quotes the payload back.
        driven
            .eval(
                "const root = document.querySelector('client-tools-ui').shadowRoot;
                 root.querySelector('[data-action=\"edit\"]').click();
                 const strict = root.querySelector('[data-path=\"/strict\"]');
                 strict.value = arguments[0];
                 strict.dispatchEvent(new Event('input', { bubbles: true }));
                 strict.dispatchEvent(new Event('change', { bubbles: true }));
                 root.querySelector('[data-action=\"approve\"]').click();",
                vec![payload.clone()],
            )
            .await;
        let verdict = inspect(&driven, payload, "error").await;
        assert_eq!(verdict, Value::Null, "payload {payload_text:?} in {kind:?}");

        // The reason travels back as text, too.
        driven
            .eval(
                "const root = document.querySelector('client-tools-ui').shadowRoot;
                 root.querySelector('[data-ct=\"reason\"]').value = arguments[0];
                 root.querySelector('[data-action=\"reject\"]').focus();",
                vec![payload.clone()],
            )
            .await;
        driven.press(&[Key::Enter]).await;
        let result = tokio::time::timeout(Duration::from_secs(30), call)
            .await
            .expect("the call ended")
            .expect("the call task");
        assert!(result.is_error);
        assert!(
            result.text().contains(payload_text),
            "the reason comes back verbatim: {result:?}"
        );
        let pwned = driven.eval("return window.pwned", vec![]).await;
        assert_eq!(pwned, json!(0), "payload {payload_text:?} ran in {kind:?}");
    }
    driven.quit().await;
}

/// Polls [`INSPECT`] until it stops saying `waiting`.
async fn inspect(driven: &Driven, payload: &Value, step: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let verdict = driven
            .eval(INSPECT, vec![payload.clone(), json!(step)])
            .await;
        if verdict != json!("waiting") {
            return verdict;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the dialog for {payload} never showed ({step}) in {:?}",
            driven.kind
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
