//! SPEC §5 rows and fault injection, end to end: for each fault, the single outcome the agent sees
//! and how many times the page's handler ran (counted in the page's sessionStorage).

use std::time::Duration;

use client_tools_bridge::{BridgeConfig, CallOptions, CallToolResult};
use client_tools_e2e::Stack;
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(20);

async fn call(stack: &Stack, name: &str, arguments: Value) -> CallToolResult {
    stack
        .page
        .call_tool((name, arguments), CallOptions::new().timeout(TIMEOUT))
        .await
        .into_result()
}

/// Handler runs per key, as the page counted them.
async fn runs(stack: &Stack, key: &str) -> u64 {
    let result = call(stack, "runs", json!({})).await;
    assert!(!result.is_error, "{}", result.text());
    result.structured_content.unwrap()[key]
        .as_u64()
        .unwrap_or(0)
}

fn text(result: &CallToolResult) -> &str {
    result.text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_rows_end_to_end() {
    let stack = Stack::start("faults.html", BridgeConfig::default()).await;

    // A handler registered after the call arrived, within the 2 s grace.
    assert_eq!(
        text(&call(&stack, "register_late", json!({"delayMs": 500})).await),
        "scheduled"
    );
    let late = call(&stack, "late_tool", json!({"x": 1})).await;
    assert!(!late.is_error, "{}", text(&late));
    assert_eq!(late.structured_content.unwrap()["late"], true);

    // Output schema violated.
    let result = call(&stack, "bad_output", json!({})).await;
    assert!(
        result.is_error && text(&result).contains("output schema"),
        "{}",
        text(&result)
    );
    assert!(text(&result).contains("/count"), "{}", text(&result));

    // Results that are not JSON, and throws that are not Errors.
    for (what, expected) in [
        ("cycle", "not JSON-serializable"),
        ("bigint", "not JSON-serializable"),
        ("function", "the value of \"callback\" is a function"),
    ] {
        let result = call(&stack, "returns", json!({"what": what})).await;
        assert!(
            result.is_error && text(&result).contains(expected),
            "{what}: {}",
            text(&result)
        );
    }
    let nothing = call(&stack, "returns", json!({"what": "nothing"})).await;
    assert!(
        !nothing.is_error && text(&nothing) == "null",
        "{}",
        text(&nothing)
    );
    for (what, expected) in [
        ("string", "plain string"),
        ("undefined", "the handler threw undefined"),
        ("object", "the handler threw {\"code\":42}"),
    ] {
        let result = call(&stack, "throws", json!({"what": what})).await;
        assert!(result.is_error, "{what}");
        assert_eq!(text(&result), expected);
    }

    // Confirmation through the `confirm` callback: approve, modify, modify-invalid, reject. The user
    // thinks for 500 ms, longer than the tool's 200 ms timeout: human time does not count.
    let approved = call(
        &stack,
        "guarded",
        json!({"decision": "approve", "thinkMs": 500}),
    )
    .await;
    assert!(!approved.is_error, "{}", text(&approved));
    let modified = call(&stack, "guarded", json!({"decision": "modify"})).await;
    assert!(!modified.is_error, "{}", text(&modified));
    assert_eq!(
        modified.structured_content.as_ref().unwrap()["input"]["note"],
        "edited"
    );
    assert_eq!(
        modified.meta.unwrap()["clienttools/modifiedInput"]["note"],
        "edited"
    );
    let invalid = call(&stack, "guarded", json!({"decision": "modify-invalid"})).await;
    assert!(
        invalid.is_error && text(&invalid).contains("/note"),
        "{}",
        text(&invalid)
    );
    let rejected = call(&stack, "guarded", json!({"decision": "reject"})).await;
    assert_eq!(text(&rejected), "rejected by the user: not this one");

    // Runtime cancellation: no result; the page's signal aborts and `toolcancel` fires.
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        "the agent changed its mind".to_owned()
    };
    let outcome = stack
        .page
        .call_tool(
            ("work", json!({"waitMs": 5000, "key": "cancelled"})),
            CallOptions::new().timeout(TIMEOUT).cancel(cancel),
        )
        .await
        .result();
    assert!(outcome.is_none());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let events = call(&stack, "events", json!({}))
        .await
        .structured_content
        .unwrap();
    let cancels: Vec<&Value> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "toolcancel" && e["toolName"] == "work")
        .collect();
    assert_eq!(cancels.len(), 1, "{events}");
    assert_eq!(cancels[0]["reason"], "the agent changed its mind");
    assert_eq!(runs(&stack, "cancelled").await, 1);

    // `ctx.reportProgress` reaches the runtime as `notifications/progress`.
    let before = stack.page.progress_notifications();
    let result = call(&stack, "progress", json!({"steps": 3, "stepMs": 50})).await;
    assert!(!result.is_error, "{}", text(&result));
    assert!(stack.page.progress_notifications() >= before + 3);

    // The wait for a human reports progress, and progress extends the runtime's deadline: the user
    // thinks 5 s under a 1 s call timeout (the bridge alone would give up after 3.5 s).
    let patient = stack
        .page
        .call_tool(
            ("guarded", json!({"decision": "approve", "thinkMs": 5000})),
            CallOptions::new().timeout(Duration::from_millis(1_000)),
        )
        .await
        .into_result();
    assert!(!patient.is_error, "{}", text(&patient));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_lists_on_the_page_and_on_the_bridge() {
    // The page allows only `runs` and `Secret Tool` (original names).
    let stack = Stack::start(
        "faults.html?allow=runs&allow=Secret%20Tool",
        BridgeConfig::default(),
    )
    .await;
    let listed: Vec<String> = stack.page.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(listed, ["runs", "secret_tool"]);
    let refused = call(&stack, "work", json!({"key": "forbidden"})).await;
    assert_eq!(text(&refused), "tool 'work' is not allowed");
    assert_eq!(runs(&stack, "forbidden").await, 0);
    drop(stack);

    // The bridge allows only `runs` and `work`: it filters the list and refuses the rest itself.
    let config = BridgeConfig {
        allow: vec!["runs".into(), "work".into()],
        ..BridgeConfig::default()
    };
    let stack = Stack::start("faults.html", config).await;
    let listed: Vec<String> = stack.page.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(listed, ["runs", "work"]);
    assert_eq!(
        text(&call(&stack, "secret_tool", json!({})).await),
        "tool 'secret_tool' is not allowed"
    );
    assert!(!call(&stack, "work", json!({})).await.is_error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_injection() {
    let mut stack = Stack::start("faults.html", BridgeConfig::default()).await;

    // Socket dropped mid-call: the page reconnects, the bridge re-sends the call with the same id,
    // the page joins the run in progress; one result, one run.
    let page = stack.page.clone();
    let pending = tokio::spawn(async move {
        page.call_tool(
            ("work", json!({"waitMs": 800, "key": "dropped"})),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result()
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    stack.page.drop_connection();
    let result = pending.await.unwrap();
    assert!(!result.is_error, "{}", text(&result));
    assert_eq!(result.structured_content.unwrap()["run"], 1);
    assert_eq!(runs(&stack, "dropped").await, 1);
    // The page saw it: `connectionchange` went reconnecting → connected.
    let events = call(&stack, "events", json!({}))
        .await
        .structured_content
        .unwrap();
    let states: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "connectionchange")
        .filter_map(|e| e["state"].as_str())
        .collect();
    let tail = &states[states.len().saturating_sub(2)..];
    assert_eq!(tail, ["reconnecting", "connected"], "{states:?}");

    // Dropped just before the result: the result waits in the page's backlog and arrives after the
    // reconnect; still one result, one run.
    let page = stack.page.clone();
    let pending = tokio::spawn(async move {
        page.call_tool(
            ("work", json!({"waitMs": 300, "key": "backlog"})),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result()
    });
    tokio::time::sleep(Duration::from_millis(290)).await;
    stack.page.drop_connection();
    let result = pending.await.unwrap();
    assert!(!result.is_error, "{}", text(&result));
    assert_eq!(runs(&stack, "backlog").await, 1);

    // The same call id twice while it runs (the runtime re-sends): answered once, run once.
    let page = stack.page.clone();
    let pending = tokio::spawn(async move {
        page.call_tool(
            ("work", json!({"waitMs": 500, "key": "twice"})),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result()
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    stack.page.resend_pending();
    stack.page.resend_pending();
    let result = pending.await.unwrap();
    assert!(!result.is_error, "{}", text(&result));
    assert_eq!(runs(&stack, "twice").await, 1);

    // A handler that never resolves: its timeout, one run.
    let result = call(&stack, "hang", json!({})).await;
    assert_eq!(text(&result), "timed out after 300 ms");
    assert_eq!(runs(&stack, "hang").await, 1);

    // Runtime cancel racing the result: whichever wins, at most one outcome and one run each.
    for i in 0..10 {
        let key = format!("race{i}");
        let cancel = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            "race".to_owned()
        };
        let outcome = stack
            .page
            .call_tool(
                ("work", json!({"waitMs": 100, "key": key})),
                CallOptions::new().timeout(TIMEOUT).cancel(cancel),
            )
            .await
            .result();
        if let Some(result) = outcome {
            assert!(!result.is_error, "{}", text(&result));
        }
        assert_eq!(runs(&stack, &key).await, 1);
    }

    // Page reloaded mid-call: the interrupted call is not run again by the new page; the agent gets
    // one error result saying so.
    let page = stack.page.clone();
    let pending = tokio::spawn(async move {
        page.call_tool(
            ("work", json!({"waitMs": 3000, "key": "reloaded"})),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result()
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        text(&call(&stack, "reload", json!({"delayMs": 50})).await),
        "reloading"
    );
    let result = pending.await.unwrap();
    assert!(result.is_error);
    assert!(
        text(&result).contains("was reloaded while call"),
        "{}",
        text(&result)
    );
    assert_eq!(runs(&stack, "reloaded").await, 1);

    // Bridge restarted mid-call: the old bridge's call ends with an error result once its page is
    // gone; the page reconnects to the new bridge and works; the handler ran once.
    let page = stack.page.clone();
    let pending = tokio::spawn(async move {
        page.call_tool(
            ("work", json!({"waitMs": 1000, "key": "restart"})),
            CallOptions::new().timeout(TIMEOUT),
        )
        .await
        .into_result()
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let id_before = stack.page.id().to_owned();
    stack.restart_bridge().await;
    // The page presented its resume secret to the new bridge: it owns the same session id.
    assert_eq!(stack.page.id(), id_before);
    let result = pending.await.unwrap();
    assert!(result.is_error, "{}", text(&result));
    assert!(
        text(&result).contains("disconnected before answering"),
        "{}",
        text(&result)
    );
    assert!(
        !call(&stack, "work", json!({"key": "after-restart"}))
            .await
            .is_error
    );
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(runs(&stack, "restart").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_page_makes_further_calls_fail_at_once_until_it_is_back() {
    let stack = Stack::start("faults.html", BridgeConfig::default()).await;
    // The page's thread is blocked for 5 s; the bridge waits 0.5 s + its 2.5 s slack, then gives up.
    let frozen = stack
        .page
        .call_tool(
            ("freeze", json!({"ms": 5000})),
            CallOptions::new().timeout(Duration::from_millis(500)),
        )
        .await
        .into_result();
    assert!(frozen.is_error);
    assert!(
        text(&frozen).contains("did not answer within 500 ms"),
        "{}",
        text(&frozen)
    );

    // Fail fast: no second wait while the page is silent (the message names the fail-fast path).
    let fast = call(&stack, "work", json!({"key": "while-frozen"})).await;
    assert!(
        text(&fast).contains("calls fail at once"),
        "{}",
        text(&fast)
    );

    // Once the page answers again (the probe ping), calls work.
    let mut attempts = 0;
    let back = loop {
        attempts += 1;
        assert!(attempts < 200, "the page never answered again");
        tokio::time::sleep(Duration::from_millis(200)).await;
        let result = call(&stack, "work", json!({"key": "after-freeze"})).await;
        if !result.is_error {
            break result;
        }
        assert!(
            text(&result).contains("calls fail at once"),
            "{}",
            text(&result)
        );
    };
    assert_eq!(back.structured_content.unwrap()["run"], 1);
    assert_eq!(runs(&stack, "while-frozen").await, 0);
}
