//! `client-tools/react` (issue 35, point 2) in a real Vite 8 + React 19 app under `<StrictMode>`,
//! the package installed from its npm tarball (`tests/react`), in Chromium and Firefox. An agent
//! calls the page's tools through the bridge while the test drives the page as a person would
//! (clicks), edits three of the app's components while the page runs (Vite's HMR, React's Fast
//! Refresh; one in a root without `<StrictMode>`) and unmounts a component while its call runs. A
//! second root's provider has its client from its first render. The app records every
//! `defineFunction`, `unregister` and warning of the clients, every event of the first and React's
//! console errors in `window.reactApp.log`. What is decided and why: docs/runtimes/react.md.
//!
//! The dev server runs on a copy of the app (its `node_modules` hard-linked, so its own dependency
//! cache), in this crate's `CARGO_TARGET_TMPDIR`: the edits are made there, never in the committed
//! source. Each component file is edited once: Vite 8.3.8's watcher was seen to miss a second
//! write of the same file under load. Needs the tarball (`cargo xtask pack`) and `npm ci` in `tests/react` after it (`cargo
//! xtask test` does both); `CLIENT_TOOLS_REACT_APP` may name another copy of that folder.

use std::path::{Path, PathBuf};
use std::time::Duration;

use client_tools_bridge::{BridgeConfig, CallOptions, PageSession};
use client_tools_e2e::npm_app::{check_installed, ViteDev};
use client_tools_e2e::webdriver::{BrowserKind, Driven};
use client_tools_e2e::{e2e_dir, eventually, BridgeOnly};
use fantoccini::Locator;
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(20);

/// What the agent reads when the component providing `slow_task` unmounts during its call.
const UNMOUNTED: &str = "the component that provides 'slow_task' unmounted during the call";

/// A copy of `tests/react` for one test, removed when dropped.
struct AppCopy {
    dir: PathBuf,
}

impl AppCopy {
    fn new(kind: BrowserKind) -> AppCopy {
        let app = std::env::var_os("CLIENT_TOOLS_REACT_APP")
            .map(PathBuf::from)
            .unwrap_or_else(|| e2e_dir().join("../react"));
        let app = app.canonicalize().unwrap_or(app);
        check_installed(
            &app,
            "vite",
            &[
                "client_tools_bg.wasm",
                "client_tools.js",
                "adapters/react.js",
            ],
        );
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("react-app-{}-{kind:?}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        copy_tree(&app, &dir, false);
        AppCopy { dir }
    }

    /// Rewrites one of the copy's files: each `(from, to)` replaces `from` everywhere in it.
    fn edit(&self, file: &str, replacements: &[(&str, &str)]) {
        let path = self.dir.join(file);
        let mut text = std::fs::read_to_string(&path).expect("read the file to edit");
        for (from, to) in replacements {
            assert!(text.contains(from), "no '{from}' in {}", path.display());
            text = text.replace(from, to);
        }
        std::fs::write(&path, text).expect("write the edited file");
    }
}

impl Drop for AppCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Copies the app's files and hard-links those of `node_modules` (copied where links cannot be
/// made), without its dependency cache (`node_modules/.vite`).
fn copy_tree(from: &Path, to: &Path, linked: bool) {
    std::fs::create_dir_all(to).expect("create a folder of the copy");
    for entry in std::fs::read_dir(from).expect("read a folder of the app") {
        let entry = entry.expect("an entry of the app's folder");
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().expect("the entry's type");
        let name = entry.file_name();
        if kind.is_symlink() {
            let link = std::fs::read_link(&source).expect("read a link");
            std::os::unix::fs::symlink(link, &target).expect("copy a link");
        } else if kind.is_dir() {
            if linked && name == ".vite" {
                continue;
            }
            copy_tree(&source, &target, linked || name == "node_modules");
        } else if !linked || std::fs::hard_link(&source, &target).is_err() {
            std::fs::copy(&source, &target).expect("copy a file of the app");
        }
    }
}

/// The app's copy, its dev server and the browser showing it (dropped in this order: the copy
/// last, once its dev server is stopped).
struct Run {
    driven: Driven,
    dev: ViteDev,
    app: AppCopy,
    kind: BrowserKind,
}

impl Run {
    /// The page's record: `window.reactApp` (`log`, `boot`, `probeMounts`, `readyMounts`,
    /// `failed`).
    async fn state(&self) -> Value {
        self.driven
            .eval(
                "const app = window.reactApp ?? {};
                 return { log: app.log ?? [], boot: app.boot ?? null,
                          probeMounts: app.probeMounts ?? 0, readyMounts: app.readyMounts ?? 0,
                          failed: app.failed ?? null };",
                vec![],
            )
            .await
    }

    async fn log(&self) -> Vec<String> {
        log_of(&self.state().await)
    }

    /// Polls `script` until it returns `true` (30 s); on a timeout, says what the page recorded
    /// and what the dev server printed.
    async fn until(&self, what: &str, script: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while self.driven.eval(script, vec![]).await != json!(true) {
            if tokio::time::Instant::now() > deadline {
                panic!(
                    "timed out in {:?} waiting: {what}\nthe page: {:#}\nits HTML: {}\nthe dev \
                     server said:\n{}",
                    self.kind,
                    self.state().await,
                    self.driven
                        .eval("return document.body.innerHTML;", vec![])
                        .await,
                    self.dev.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Waits until the element `selector` shows `expected`.
    async fn shows(&self, selector: &str, expected: &str) {
        let script = format!(
            "return document.querySelector({selector})?.textContent === {expected};",
            selector = json!(selector),
            expected = json!(expected),
        );
        self.until(&format!("{selector} shows '{expected}'"), &script)
            .await;
    }

    /// Clicks the element `selector` (WebDriver: a real click).
    async fn click(&self, selector: &str) {
        self.driven
            .client
            .find(Locator::Css(selector))
            .await
            .unwrap_or_else(|e| panic!("no {selector} on the page ({:?}): {e}", self.kind))
            .click()
            .await
            .unwrap_or_else(|e| panic!("click {selector} ({:?}): {e}", self.kind));
    }
}

fn log_of(state: &Value) -> Vec<String> {
    state["log"]
        .as_array()
        .expect("the page's log")
        .iter()
        .map(|entry| entry.as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The `defineFunction` and `unregister` calls the hooks made, in order.
fn registrations(log: &[String]) -> Vec<&str> {
    log.iter()
        .map(String::as_str)
        .filter(|entry| entry.starts_with("defineFunction ") || entry.starts_with("unregister "))
        .collect()
}

/// The clients' `warning` events and what React logged as an error.
fn warnings(log: &[String]) -> Vec<&str> {
    log.iter()
        .map(String::as_str)
        .filter(|entry| {
            ["warning ", "ready warning ", "console.error "]
                .iter()
                .any(|start| entry.starts_with(start))
        })
        .collect()
}

/// What the second root's client recorded (`defineFunction`, `unregister`, `warning`).
fn ready_entries(log: &[String]) -> Vec<&str> {
    log.iter()
        .map(String::as_str)
        .filter(|entry| entry.starts_with("ready "))
        .collect()
}

fn count(log: &[String], entry: &str) -> usize {
    log.iter().filter(|e| *e == entry).count()
}

/// An edit of one of the app's components during the test: `replace` in `src/<component>.jsx`,
/// after which its tool `tool` answers `answer`; `remounted` when Fast Refresh remounts it.
struct Edit {
    component: &'static str,
    replace: &'static [(&'static str, &'static str)],
    tool: &'static str,
    answer: &'static str,
    remounted: bool,
}

/// An agent's call through the bridge: the result's text, and whether it is an error.
async fn call(page: &PageSession, name: &str, arguments: Value) -> (String, bool) {
    let result = page
        .call_tool((name, arguments), CallOptions::new().timeout(TIMEOUT))
        .await
        .into_result();
    (result.text().to_owned(), result.is_error)
}

async fn react_app_in(kind: BrowserKind) {
    let app = AppCopy::new(kind);
    let bridge = BridgeOnly::start(BridgeConfig::default()).await;
    let dev = ViteDev::start(&app.dir, None).await;
    let url = format!("{}/?bridge={}", dev.base_url, bridge.ws_url);
    let driven = Driven::start(kind).await;
    driven.goto(&url).await;
    let run = Run {
        driven,
        dev,
        app,
        kind,
    };
    run.until(
        "the app connected (useClientToolsState shows it)",
        "return !!window.reactApp?.failed ||
           document.querySelector('#connection')?.textContent === 'connected';",
    )
    .await;
    let state = run.state().await;
    assert!(
        state["failed"].is_null(),
        "the app at {url} failed in {kind:?}: {}\nthe dev server said:\n{}",
        state["failed"],
        run.dev.log()
    );
    let page = bridge
        .bridge
        .wait_for_page(Duration::from_secs(30))
        .await
        .expect("the page connected to the bridge");
    let listed = |page: &PageSession| {
        let mut names: Vec<String> = page.tools().into_iter().map(|t| t.name).collect();
        names.sort();
        names
    };
    eventually("the bridge lists the page's four tools", || {
        listed(&page) == ["greet", "read_counter", "say_goodbye", "slow_task"]
    })
    .await;

    // StrictMode mounted every component twice (the probe's effect ran twice), and each tool was
    // still defined once: no unregister, no `tool_replaced`.
    assert_eq!(
        state["probeMounts"],
        json!(2),
        "StrictMode is on in {kind:?}"
    );
    let log = log_of(&state);
    let mut mounted = registrations(&log);
    mounted.sort_unstable();
    assert_eq!(
        mounted,
        [
            "defineFunction greet",
            "defineFunction read_counter",
            "defineFunction say_goodbye",
            "defineFunction slow_task",
        ],
        "one registration per tool under StrictMode in {kind:?}: {log:#?}"
    );
    assert_eq!(warnings(&log), Vec::<&str>::new(), "{kind:?}");

    // A provider given its client before its first render (the second root): StrictMode's double
    // mount ran with the client there (the component's effect twice), and its tool was defined
    // once — not removed, no `tool_replaced`.
    // (The third root, without StrictMode, shares that client: its tool is defined once too.)
    run.until(
        "the second and third roots' tools are defined, the second's component mounted twice",
        "const log = window.reactApp.log;
         return window.reactApp.readyMounts === 2 &&
           log.includes('ready defineFunction ready_tool') &&
           log.includes('ready defineFunction plain_tool');",
    )
    .await;
    let log = run.log().await;
    let mut ready = ready_entries(&log);
    ready.sort_unstable();
    assert_eq!(
        ready,
        [
            "ready defineFunction plain_tool",
            "ready defineFunction ready_tool"
        ],
        "one registration from the first render under StrictMode in {kind:?}"
    );

    // The handler is the latest render's: three clicks later the tool answers 3, and the new
    // handler of each render was not a new registration.
    for _ in 0..3 {
        run.click("#increment").await;
    }
    run.shows("#count", "3").await;
    assert_eq!(
        call(&page, "read_counter", json!({})).await,
        ("count: 3".to_owned(), false),
        "{kind:?}"
    );
    let after = run.log().await;
    assert_eq!(
        registrations(&after),
        registrations(&log),
        "re-rendered without registering again in {kind:?}"
    );
    assert_eq!(
        count(&after, "toolschanged"),
        count(&log, "toolschanged"),
        "{kind:?}: {after:#?}"
    );

    // A schema changes: one re-registration (unregister, then define), no warning; agents get the
    // new schema and the handler still reads the latest count.
    let expected: Vec<String> = registrations(&after)
        .into_iter()
        .chain(["unregister read_counter", "defineFunction read_counter"])
        .map(str::to_owned)
        .collect();
    run.click("#label").await;
    run.until(
        "read_counter is defined again with its new schema",
        &format!(
            "return window.reactApp.log.filter((e) => /^(defineFunction|unregister) /.test(e))
               .length >= {};",
            expected.len()
        ),
    )
    .await;
    eventually("the bridge lists read_counter's new schema", || {
        page.tools().iter().any(|tool| {
            tool.name == "read_counter" && tool.input_schema["required"] == json!(["label"])
        })
    })
    .await;
    assert_eq!(
        call(&page, "read_counter", json!({ "label": "total" })).await,
        ("total: 3".to_owned(), false),
        "{kind:?}"
    );
    let log = run.log().await;
    assert_eq!(
        registrations(&log),
        expected,
        "exactly one re-registration in {kind:?}"
    );
    assert_eq!(warnings(&log), Vec::<&str>::new(), "{kind:?}");

    // The same declaration written with its keys (and its schema's) in the other order: the same
    // tool, not defined again.
    run.click("#reorder").await;
    run.shows("#reordered", "yes").await;
    assert_eq!(
        call(&page, "read_counter", json!({ "label": "total" })).await,
        ("total: 3".to_owned(), false),
        "{kind:?}"
    );
    let log = run.log().await;
    assert_eq!(
        registrations(&log),
        expected,
        "the reordered declaration registered again in {kind:?}"
    );

    // Two components are edited while the page runs. Vite's HMR and React's Fast Refresh swap
    // each in the same page load (the counter's state kept): Greeting rendered again in place (the
    // same element), Farewell, a hook added to it, remounted (a new element; the old component's
    // effects cleaned up, the new one's run). Each tool stays registered once, without a warning,
    // and answers with the new code.
    let boot = run.state().await["boot"].clone();
    let greeting_effects = |log: &[String]| {
        (
            count(log, "greeting effect set up"),
            count(log, "greeting effect cleaned up"),
        )
    };
    let (set_up, cleaned_up) = greeting_effects(&run.log().await);
    let edits = [
        Edit {
            component: "Greeting",
            replace: &[("v1", "v2")],
            tool: "greet",
            answer: "Hello, Ada (v2)",
            remounted: false,
        },
        Edit {
            component: "Farewell",
            replace: &[
                ("v1", "v2"),
                (
                    "import { useClientTool }",
                    "import { useState } from \"react\";\nimport { useClientTool }",
                ),
                (
                    "  return <p id=\"farewell\">",
                    "  const [id] = useState(\"farewell\");\n  return <p id={id}>",
                ),
            ],
            tool: "say_goodbye",
            answer: "Goodbye, Ada (v2)",
            remounted: true,
        },
    ];
    for Edit {
        component,
        replace,
        tool,
        answer,
        remounted,
    } in edits
    {
        let element = format!("#{}", component.to_lowercase());
        let seen = format!("return !!document.querySelector('{element}').seen;");
        run.driven
            .eval(
                &format!("document.querySelector('{element}').seen = true;"),
                vec![],
            )
            .await;
        run.app.edit(&format!("src/{component}.jsx"), replace);
        run.shows(&element, &format!("{} v2", component.to_lowercase()))
            .await;
        let state = run.state().await;
        assert_eq!(
            state["boot"], boot,
            "the edit reloaded the page in {kind:?}"
        );
        assert_eq!(
            run.driven.eval(&seen, vec![]).await,
            json!(!remounted),
            "{component} remounted: expected {remounted} in {kind:?}"
        );
        run.shows("#count", "3").await;
        assert_eq!(
            call(&page, tool, json!({ "name": "Ada" })).await,
            (answer.to_owned(), false),
            "{kind:?}"
        );
        let log = run.log().await;
        assert_eq!(
            registrations(&log),
            expected,
            "the edit of {component} registered nothing again in {kind:?}"
        );
        assert_eq!(warnings(&log), Vec::<&str>::new(), "{kind:?}");
        if component == "Greeting" {
            // Rendered in place under StrictMode: no effect ran (React 19.3.1 ignores a refreshed
            // component's effect dependencies, but StrictMode's second render in development
            // takes them into account again; the root without StrictMode, below, differs).
            assert_eq!(
                greeting_effects(&log),
                (set_up, cleaned_up),
                "Greeting's effects over its Fast Refresh in {kind:?}: {log:#?}"
            );
        }
    }

    // A component of the root without StrictMode is edited: rendered again in place, and there
    // Fast Refresh runs its effects again whatever their dependencies (cleaned up, set up: the
    // probe's and the hook's). The hook's setup, in the same commit, takes its tool back: nothing
    // registered again, and the tool answers with the new code.
    let plain_effects = |log: &[String]| {
        (
            count(log, "plain effect set up"),
            count(log, "plain effect cleaned up"),
        )
    };
    let log = run.log().await;
    let (set_up, cleaned_up) = plain_effects(&log);
    let ready_before: Vec<String> = ready_entries(&log).into_iter().map(str::to_owned).collect();
    run.driven
        .eval("document.querySelector('#plain').seen = true;", vec![])
        .await;
    run.app.edit("src/Plain.jsx", &[("v1", "v2")]);
    run.shows("#plain", "plain v2").await;
    assert_eq!(
        run.driven
            .eval("return !!document.querySelector('#plain').seen;", vec![])
            .await,
        json!(true),
        "Plain rendered again in place in {kind:?}"
    );
    assert_eq!(
        run.driven
            .eval(
                "return window.reactApp.ready.invoke('plain_tool', {})
                   .then((result) => result.content[0].text);",
                vec![]
            )
            .await,
        json!("plain v2"),
        "{kind:?}"
    );
    let log = run.log().await;
    assert_eq!(
        plain_effects(&log),
        (set_up + 1, cleaned_up + 1),
        "Plain's effects over its Fast Refresh in {kind:?}: {log:#?}"
    );
    assert_eq!(
        ready_entries(&log),
        ready_before,
        "the edit of Plain registered nothing again in {kind:?}"
    );
    assert_eq!(warnings(&log), Vec::<&str>::new(), "{kind:?}");

    // A component unmounts while its call runs (the handler awaits its signal): the call ends at
    // once with one error result, the handler's `ctx.signal` aborts with the same reason, and its
    // own late answer goes nowhere. `useClientToolsState` showed the call while it ran.
    let slow = tokio::spawn({
        let page = page.clone();
        async move { call(&page, "slow_task", json!({})).await }
    });
    run.shows("#running", "slow_task").await;
    run.click("#unmount-slow").await;
    let outcome = tokio::time::timeout(TIMEOUT, slow)
        .await
        .expect("the unmounted component's call ended")
        .expect("the call's task");
    assert_eq!(outcome, (UNMOUNTED.to_owned(), true), "{kind:?}");
    let aborted = format!("slow_task signal aborted: {UNMOUNTED}");
    run.until(
        "the handler saw its signal abort",
        &format!("return window.reactApp.log.includes({});", json!(aborted)),
    )
    .await;
    run.shows("#running", "").await;
    let log = run.log().await;
    let slow_events: Vec<&str> = log
        .iter()
        .map(String::as_str)
        .filter(|e| e.starts_with("tool") && e.contains(" slow_task"))
        .collect();
    assert_eq!(
        slow_events,
        ["toolactivated slow_task", "toolresult slow_task error"],
        "one outcome for the call in {kind:?}"
    );
    assert_eq!(
        registrations(&log).last(),
        Some(&"unregister slow_task"),
        "{kind:?}"
    );
    assert_eq!(count(&log, "unregister slow_task"), 1, "{kind:?}");
    eventually("the bridge no longer lists slow_task", || {
        listed(&page) == ["greet", "read_counter", "say_goodbye"]
    })
    .await;
    assert_eq!(warnings(&log), Vec::<&str>::new(), "{kind:?}");

    // The tool is renamed: the new name defined once and the old one removed once (after the
    // commit, as any tool nobody took back); agents see only the new one, which answers.
    let before: Vec<String> = registrations(&log).into_iter().map(str::to_owned).collect();
    run.click("#rename").await;
    run.until(
        "read_counter is gone and read_count defined",
        "const log = window.reactApp.log;
         return log.includes('defineFunction read_count') && log.includes('unregister read_counter');",
    )
    .await;
    eventually(
        "the bridge lists read_count instead of read_counter",
        || listed(&page) == ["greet", "read_count", "say_goodbye"],
    )
    .await;
    assert_eq!(
        call(&page, "read_count", json!({ "label": "total" })).await,
        ("total: 3".to_owned(), false),
        "{kind:?}"
    );
    let log = run.log().await;
    let renamed: Vec<String> = before
        .into_iter()
        .chain(["defineFunction read_count", "unregister read_counter"].map(str::to_owned))
        .collect();
    assert_eq!(registrations(&log), renamed, "one rename in {kind:?}");
    assert_eq!(warnings(&log), Vec::<&str>::new(), "{kind:?}");

    run.driven.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_mode_hmr_and_unmount_mid_call_in_chromium() {
    react_app_in(BrowserKind::Chromium).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_mode_hmr_and_unmount_mid_call_in_firefox() {
    react_app_in(BrowserKind::Firefox).await;
}
