//! The request engine driven through [`PageSession`], as the bridge uses it: the session's one
//! timer, its callers' waiters and cancels, the connection's queue, against a [`FakePage`]. Time
//! is paused: deadlines and grace periods pass at once, exactly. (The engine's rules alone, with
//! time as a parameter, are tested in `request_engine.rs`.)

use std::sync::Arc;
use std::time::Duration;

use client_tools_core::limits::{HUMAN_WAIT_MAX_MS, MAX_FRAME_BYTES, MAX_FRAME_DEPTH};
use client_tools_core::protocol::{decode, method, CallToolResult, Message};
use futures_util::FutureExt;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{sleep, Instant};

use crate::limits::{Limits, RECONNECT_GRACE};
use crate::page::connection_queue::Outgoing;
use crate::sessions::call_options::CallOptions;
use crate::sessions::fake_page::{session, session_with, FakePage};
use crate::sessions::page_session::PageSession;

/// A call's timeout in these tests; the bridge waits 2.5 s more for the page's own outcome.
const TIMEOUT: Duration = Duration::from_secs(1);
const WAIT: Duration = Duration::from_millis(3_500);
/// A tool call running in the background, with how long it took.
fn spawn_call(
    session: &Arc<PageSession>,
    timeout: Duration,
) -> JoinHandle<(CallToolResult, Duration)> {
    let session = session.clone();
    tokio::spawn(async move {
        let started = Instant::now();
        let result = session
            .call_tool(
                ("echo", json!({"x": 1})),
                CallOptions::new().timeout(timeout),
            )
            .await
            .into_result();
        (result, started.elapsed())
    })
}

async fn call_now(session: &Arc<PageSession>) -> CallToolResult {
    session
        .call_tool(("echo", json!({})), CallOptions::new().timeout(TIMEOUT))
        .now_or_never()
        .expect("the call ends at once")
        .into_result()
}

/// One call that goes to the page and back.
async fn assert_calls_work(session: &Arc<PageSession>, page: &mut FakePage) {
    let call = spawn_call(session, TIMEOUT);
    let (id, _) = page.request(method::TOOLS_CALL).await;
    page.answer_call(&id, "fine");
    let (result, _) = call.await.unwrap();
    assert!(!result.is_error, "{}", result.text());
}

#[tokio::test(start_paused = true)]
async fn an_answer_before_the_deadline_is_the_result() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let call = spawn_call(&session, TIMEOUT);
    let (id, params) = page.request(method::TOOLS_CALL).await;
    assert_eq!(params["name"], "echo");
    assert_eq!(params["arguments"], json!({"x": 1}));
    assert_eq!(params["_meta"]["clienttools/timeoutMs"], 1_000);
    assert_eq!(params["_meta"]["progressToken"], json!(id.to_string()));
    assert_eq!(session.pending_calls(), 1);

    sleep(Duration::from_millis(900)).await;
    page.answer_call(&id, "hello");
    let (result, took) = call.await.unwrap();
    assert_eq!(result.text(), "hello");
    assert_eq!(took, Duration::from_millis(900));
    assert_eq!(session.pending_calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn silence_times_out_and_later_calls_fail_fast_until_the_page_answers_a_ping() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let call = spawn_call(&session, TIMEOUT);
    let (id, _) = page.request(method::TOOLS_CALL).await;
    let (result, took) = call.await.unwrap();
    assert_eq!(
        result.text(),
        "the page (session 's1') did not answer within 1000 ms"
    );
    assert_eq!(took, WAIT);
    // The page is told to stop.
    let cancelled = page.notification(method::CANCELLED).await;
    assert_eq!(cancelled["requestId"], json!(id.to_string()));
    assert_eq!(cancelled["reason"], "the runtime stopped waiting (timeout)");

    // Fail fast: no second wait, and the page is pinged instead of called.
    let fast = call_now(&session).await;
    assert!(
        fast.text().contains("calls fail at once"),
        "{}",
        fast.text()
    );
    let (ping, _) = page.request(method::PING).await;
    assert!(page.has_nothing_queued());
    assert_eq!(session.pending_calls(), 0);

    // The page answers the ping: calls reach it again.
    page.answer(&ping, json!({}));
    assert_calls_work(&session, &mut page).await;
}

#[tokio::test(start_paused = true)]
async fn a_late_answer_ends_fail_fast() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let call = spawn_call(&session, TIMEOUT);
    let (late, _) = page.request(method::TOOLS_CALL).await;
    assert!(call.await.unwrap().0.is_error);
    page.notification(method::CANCELLED).await;
    assert!(call_now(&session)
        .await
        .text()
        .contains("calls fail at once"));
    page.request(method::PING).await;

    page.answer_call(&late, "too late");
    assert_calls_work(&session, &mut page).await;
}

#[tokio::test(start_paused = true)]
async fn a_reconnect_ends_fail_fast() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let call = spawn_call(&session, TIMEOUT);
    page.request(method::TOOLS_CALL).await;
    assert!(call.await.unwrap().0.is_error);
    page.disconnect();

    let mut page = FakePage::connect(&session);
    assert_calls_work(&session, &mut page).await;
}

#[tokio::test(start_paused = true)]
async fn progress_extends_the_deadline_but_never_beyond_the_hard_bound() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let call = spawn_call(&session, TIMEOUT);
    let (id, _) = page.request(method::TOOLS_CALL).await;
    // A report every 3 s keeps a call with a 3.5 s wait alive...
    let mut reports = 0;
    while !call.is_finished() {
        sleep(Duration::from_secs(3)).await;
        page.report_progress(&id, reports as f64);
        reports += 1;
    }
    // ...until the hard bound: the wait plus the longest a human may take (300 s).
    let (result, took) = call.await.unwrap();
    assert!(result.text().contains("did not answer within 1000 ms"));
    assert_eq!(took, WAIT + Duration::from_millis(HUMAN_WAIT_MAX_MS));
    assert_eq!(session.progress_notifications(), reports);
}

#[tokio::test(start_paused = true)]
async fn progress_reaches_the_observer_and_a_full_observer_misses_reports() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let (observer, mut reports) = mpsc::channel(2);
    let call = {
        let session = session.clone();
        tokio::spawn(async move {
            let never = std::future::pending::<String>();
            session
                .call_tool(
                    ("echo", json!({})),
                    CallOptions::new()
                        .timeout(TIMEOUT)
                        .cancel(never)
                        .progress(observer),
                )
                .await
                .result()
        })
    };
    let (id, _) = page.request(method::TOOLS_CALL).await;
    for step in 0..5 {
        page.report_progress(&id, step as f64);
    }
    page.answer_call(&id, "done");
    assert_eq!(call.await.unwrap().unwrap().text(), "done");
    let mut received = Vec::new();
    while let Ok(report) = reports.try_recv() {
        received.push(report.progress);
    }
    assert_eq!(received, [0.0, 1.0]);
    assert_eq!(session.progress_notifications(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_reconnect_within_the_grace_resends_the_same_frame() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let call = spawn_call(&session, Duration::from_secs(30));
    let sent = page.frame().await;
    page.disconnect();
    sleep(Duration::from_secs(2)).await;
    // A call made while the page is away waits for it too.
    let meanwhile = spawn_call(&session, Duration::from_secs(30));
    sleep(Duration::from_secs(2)).await;
    assert!(!call.is_finished() && !meanwhile.is_finished());

    let mut page = FakePage::connect(&session);
    let mut resent = vec![page.frame().await, page.frame().await];
    resent.sort_by_key(|frame| frame != &sent);
    assert_eq!(resent[0], sent, "the same frame, the same id");
    for frame in &resent {
        let Message::Request { id, .. } = decode(frame).unwrap() else {
            panic!("{frame}")
        };
        page.answer_call(&id, "after the reconnect");
    }
    assert_eq!(call.await.unwrap().0.text(), "after the reconnect");
    assert_eq!(meanwhile.await.unwrap().0.text(), "after the reconnect");
}

#[tokio::test(start_paused = true)]
async fn a_page_away_beyond_the_grace_fails_the_call_as_disconnected() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let call = spawn_call(&session, Duration::from_secs(30));
    page.request(method::TOOLS_CALL).await;
    page.disconnect();
    let (result, took) = call.await.unwrap();
    assert_eq!(
        result.text(),
        "the page (session 's1') disconnected before answering"
    );
    assert_eq!(took, RECONNECT_GRACE);
    // After the grace, a call fails at once; not fail-fast: the page did not miss a deadline.
    assert!(call_now(&session).await.text().contains("is not connected"));
    let mut page = FakePage::connect(&session);
    assert_calls_work(&session, &mut page).await;
}

#[tokio::test(start_paused = true)]
async fn a_session_no_page_ever_connected_to_fails_calls_at_once() {
    let session = session();
    assert!(call_now(&session).await.text().contains("is not connected"));
}

#[tokio::test(start_paused = true)]
async fn cancelling_tells_the_page_and_gives_no_result() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let call = {
        let session = session.clone();
        tokio::spawn(async move {
            let cancel = async {
                sleep(Duration::from_millis(300)).await;
                "the agent changed its mind".to_owned()
            };
            session
                .call_tool(
                    ("echo", json!({})),
                    CallOptions::new().timeout(TIMEOUT).cancel(cancel),
                )
                .await
                .result()
        })
    };
    let (id, _) = page.request(method::TOOLS_CALL).await;
    assert_eq!(call.await.unwrap(), None);
    let cancelled = page.notification(method::CANCELLED).await;
    assert_eq!(cancelled["requestId"], json!(id.to_string()));
    assert_eq!(cancelled["reason"], "the agent changed its mind");
    assert_eq!(session.pending_calls(), 0);
    // The page's late answer changes nothing.
    page.answer_call(&id, "ignored");
    assert_calls_work(&session, &mut page).await;
}

#[tokio::test(start_paused = true)]
async fn a_caller_that_stops_waiting_cancels_its_call() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let call = spawn_call(&session, TIMEOUT);
    let (id, _) = page.request(method::TOOLS_CALL).await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    let cancelled = page.notification(method::CANCELLED).await;
    assert_eq!(cancelled["requestId"], json!(id.to_string()));
    assert_eq!(session.pending_calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn one_call_over_the_pending_limit_fails_at_once() {
    let session = session_with(Limits {
        max_pending_per_session: 2,
        ..Limits::default()
    });
    let mut page = FakePage::connect(&session);
    let _first = spawn_call(&session, TIMEOUT);
    let (first, _) = page.request(method::TOOLS_CALL).await;
    let _second = spawn_call(&session, TIMEOUT);
    page.request(method::TOOLS_CALL).await;

    let refused = call_now(&session).await;
    assert_eq!(
        refused.text(),
        "too many calls waiting for this page (limit 2)"
    );
    assert!(page.has_nothing_queued());
    page.answer_call(&first, "one done");
    assert_calls_work(&session, &mut page).await;
}

#[tokio::test(start_paused = true)]
async fn a_frame_the_page_would_refuse_fails_that_call_alone() {
    let session = session();
    let mut page = FakePage::connect(&session);
    let huge = json!({"text": "a".repeat(MAX_FRAME_BYTES)});
    let deep = (0..MAX_FRAME_DEPTH).fold(json!(1), |inner, _| json!([inner]));
    for (arguments, limit) in [(huge, "bytes, over the limit"), (deep, "levels deep")] {
        let result = session
            .call_tool(("echo", arguments), CallOptions::new().timeout(TIMEOUT))
            .now_or_never()
            .expect("refused at once")
            .into_result();
        assert!(result.is_error);
        assert!(
            result
                .text()
                .starts_with("the call cannot be sent to the page: the frame would be"),
            "{}",
            result.text()
        );
        assert!(result.text().contains(limit), "{}", result.text());
    }
    assert!(page.has_nothing_queued());
    assert_eq!(session.pending_calls(), 0);
    // Healthy: no fail-fast, the next call goes through.
    assert_calls_work(&session, &mut page).await;
}

#[tokio::test(start_paused = true)]
async fn a_page_that_does_not_read_fails_calls_at_once_and_drops_notifications() {
    let session = session();
    let mut page = FakePage::connect_bounded(&session, 2, 1 << 20);
    let first = spawn_call(&session, TIMEOUT);
    let second = spawn_call(&session, TIMEOUT);
    tokio::task::yield_now().await;
    let refused = call_now(&session).await;
    assert!(
        refused
            .text()
            .starts_with("the page is not reading: 2 frames / "),
        "{}",
        refused.text()
    );
    session.notify_page(method::INITIALIZED, &json!({}));

    // The page catches up: what was queued arrives, the notification did not fit.
    for _ in 0..2 {
        let (id, _) = page.request(method::TOOLS_CALL).await;
        page.answer_call(&id, "read at last");
    }
    assert!(page.has_nothing_queued());
    assert!(!first.await.unwrap().0.is_error);
    assert!(!second.await.unwrap().0.is_error);
    assert_calls_work(&session, &mut page).await;
}

#[tokio::test(start_paused = true)]
async fn calls_that_do_not_fit_the_new_connection_fail() {
    let session = session();
    let page = FakePage::connect(&session);
    let calls: Vec<_> = (0..3)
        .map(|_| spawn_call(&session, Duration::from_secs(30)))
        .collect();
    tokio::task::yield_now().await;
    page.disconnect();
    let mut page = FakePage::connect_bounded(&session, 2, 1 << 20);
    for _ in 0..2 {
        let (id, _) = page.request(method::TOOLS_CALL).await;
        page.answer_call(&id, "resent");
    }
    let mut texts = Vec::new();
    for call in calls {
        texts.push(call.await.unwrap().0.text().to_owned());
    }
    let resent = texts.iter().filter(|text| *text == "resent").count();
    let refused = texts
        .iter()
        .filter(|text| text.starts_with("the page is not reading: 2 frames"))
        .count();
    assert_eq!((resent, refused), (2, 1), "{texts:?}");
}

#[tokio::test(start_paused = true)]
async fn a_probe_is_true_only_for_a_live_connection_that_answers() {
    let session = session();
    let within = Duration::from_secs(2);
    assert!(!session.is_answering(within).await, "nobody connected");

    let mut page = FakePage::connect(&session);
    let probe = {
        let session = session.clone();
        tokio::spawn(async move { session.is_answering(within).await })
    };
    let (id, _) = page.request(method::PING).await;
    page.answer(&id, json!({}));
    assert!(probe.await.unwrap());

    // Silence: no, after `within`; and no fail-fast for calls afterwards.
    let started = Instant::now();
    let probe = {
        let session = session.clone();
        tokio::spawn(async move { session.is_answering(within).await })
    };
    page.request(method::PING).await;
    assert!(!probe.await.unwrap());
    assert_eq!(started.elapsed(), within);
    assert!(page.has_nothing_queued(), "no cancellation for a ping");
    assert_calls_work(&session, &mut page).await;

    // The connection drops meanwhile: no at once, no reconnect grace.
    let started = Instant::now();
    let probe = {
        let session = session.clone();
        tokio::spawn(async move { session.is_answering(within).await })
    };
    page.request(method::PING).await;
    page.disconnect();
    assert!(!probe.await.unwrap());
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert!(!session.is_answering(within).await, "within the grace");
}

#[tokio::test(start_paused = true)]
async fn a_thousand_calls_in_flight_each_get_their_own_answer_through_reconnects() {
    let session = session();
    let limits = Limits::default();
    let connect = |session: &Arc<PageSession>| {
        FakePage::connect_bounded(
            session,
            limits.outgoing_queue_frames,
            limits.outgoing_queue_bytes,
        )
    };
    let mut page = connect(&session);
    let calls: Vec<_> = (0..1_000)
        .map(|_| spawn_call(&session, Duration::from_secs(30)))
        .collect();
    // Every call is sent; then each round the page answers half of what it received, and its
    // connection drops: the rest is sent again on the next connection.
    sleep(Duration::from_millis(1)).await;
    while session.pending_calls() > 0 {
        let mut received = Vec::new();
        while let Some(Some(Outgoing::Frame(frame))) = page.queue.recv().now_or_never() {
            if let Ok(Message::Request { id, .. }) = decode(&frame) {
                received.push(id);
            }
        }
        for id in &received[..received.len().div_ceil(2)] {
            page.answer_call(id, &id.to_string());
        }
        page.disconnect();
        sleep(Duration::from_secs(1)).await;
        page = connect(&session);
    }
    let mut answers = std::collections::HashSet::new();
    for call in calls {
        let (result, _) = call.await.unwrap();
        assert!(!result.is_error, "{}", result.text());
        answers.insert(result.text().to_owned());
    }
    assert_eq!(answers.len(), 1_000);
}
