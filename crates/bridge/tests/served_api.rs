//! `/api` for the page as a whole MCP server (SPEC §11, crate::routes::api_served), end to end on
//! a real bridge with a page on `/ws`: the lists, a resource read, a completion, a prompt whose
//! handler asks the caller (`input_required`, then the retry with `inputResponses` and
//! `requestState`), the page's errors and the bridge's refusals as `{"error"}` with their status,
//! the operator's policy (a blocked resource left out of the list and refused naming the rule), a
//! malformed body; the session answers on after each.

use std::sync::Arc;
use std::time::Duration;

use client_tools_bridge::{Bridge, BridgeConfig, Policy};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

mod page_socket;

const POLICY: &str = r#"
[[rule]]
id = "no-secrets"
resources = ["app://secrets/*"]
action = "block"
"#;

/// A page offering two resources, one prompt asking for context, and completions.
async fn page(address: std::net::SocketAddr) -> String {
    let (mut ws, id) = page_socket::connect_page(address).await;
    tokio::spawn(async move {
        let mut asking: Option<Value> = None;
        while let Some(Ok(message)) = ws.next().await {
            let Message::Text(text) = message else {
                continue;
            };
            let frame: Value = serde_json::from_str(text.as_str()).unwrap();
            let reply = match (frame["method"].as_str(), frame.get("id")) {
                (Some(method), Some(id)) => {
                    let params = &frame["params"];
                    let result = match method {
                        "initialize" => json!({
                            "protocolVersion": "2025-11-25",
                            "capabilities": {"tools": {},
                                "resources": {"subscribe": true, "listChanged": true},
                                "prompts": {"listChanged": true}, "completions": {}},
                            "serverInfo": {"name": "served-page", "version": "1"},
                        }),
                        "tools/list" => json!({"tools": []}),
                        "resources/list" => json!({"resources": [
                            {"uri": "app://notes/1", "name": "note"},
                            {"uri": "app://secrets/key", "name": "key"}]}),
                        "resources/templates/list" => json!({"resourceTemplates": [
                            {"uriTemplate": "app://notes/{id}", "name": "notes"}]}),
                        "prompts/list" => json!({"prompts": [{"name": "ask"}]}),
                        "resources/read" if params["uri"] == "app://notes/1" => json!({
                            "contents": [{"uri": "app://notes/1", "text": "first note"}]}),
                        "resources/read" => {
                            let uri = params["uri"].clone();
                            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32002,
                                "message": format!("Resource not found: {uri}"), "data": {"uri": uri}}})
                        }
                        "completion/complete" => {
                            let value = params["argument"]["value"].as_str().unwrap_or_default();
                            json!({"completion": {"values": [format!("{value}1"), format!("{value}2")]}})
                        }
                        "prompts/get" => {
                            asking = Some(id.clone());
                            let call = id.as_str().unwrap();
                            json!({"jsonrpc": "2.0", "id": "round-1", "method": "clienttools/input",
                                "params": {"_meta": {"clienttools/callId": call}, "inputRequests": {
                                    "context": {"method": "elicitation/create", "params": {
                                        "message": "Context?", "requestedSchema": {"type": "object",
                                        "properties": {"context": {"type": "string"}}}}}}}})
                        }
                        _ => json!({}),
                    };
                    match result.get("jsonrpc") {
                        Some(_) => result,
                        None => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    }
                }
                (None, Some(round)) if round == "round-1" => {
                    let answer = &frame["result"]["inputResponses"]["context"];
                    let text = match answer["action"].as_str() {
                        Some("accept") => answer["content"]["context"].as_str().unwrap_or("?"),
                        _ => "none",
                    };
                    json!({"jsonrpc": "2.0", "id": asking.take().unwrap(), "result": {
                        "messages": [{"role": "user", "content": {"type": "text",
                            "text": format!("context: {text}")}}]}})
                }
                _ => continue,
            };
            if ws
                .send(Message::Text(reply.to_string().into()))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    id
}

struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let bridge = Bridge::new(BridgeConfig {
            listen: address,
            policy: Arc::new(Policy::parse(POLICY).unwrap()),
            ..Default::default()
        });
        let server = bridge.clone();
        tokio::spawn(async move { server.serve(listener).await });
        let session = page(address).await;
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap();
        let base = format!("http://{address}/api/sessions/{session}");
        // A list not read yet is asked of the page.
        Self { http, base }
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}/{path}", self.base))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}/{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, json)
    }
}

#[tokio::test]
async fn lists_reads_and_completions_as_json() {
    let api = Api::start().await;
    let (status, prompts) = api.get("prompts").await;
    assert_eq!(
        (status, &prompts["prompts"]),
        (200, &json!([{"name": "ask"}]))
    );
    let (_, resources) = api.get("resources").await;
    assert_eq!(
        resources["resources"],
        json!([{"uri": "app://notes/1", "name": "note"}]),
        "the blocked resource is left out"
    );
    let (_, templates) = api.get("resources/templates").await;
    assert_eq!(
        templates["resourceTemplates"][0]["uriTemplate"],
        "app://notes/{id}"
    );

    let (status, read) = api
        .post("resources/read", json!({"uri": "app://notes/1"}))
        .await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(read["contents"][0]["text"], "first note");
    assert_eq!(read["resultType"], "complete");

    let (status, completed) = api
        .post(
            "complete",
            json!({"ref": {"type": "ref/resource", "uri": "app://notes/{id}"},
                   "argument": {"name": "id", "value": "4"}}),
        )
        .await;
    assert_eq!(status, 200, "{completed}");
    assert_eq!(completed["completion"]["values"], json!(["41", "42"]));
}

#[tokio::test]
async fn errors_are_json_rpc_errors_with_the_status_of_whose_fault_they_are() {
    let api = Api::start().await;
    let (status, missing) = api
        .post("resources/read", json!({"uri": "app://notes/9"}))
        .await;
    assert_eq!(status, 400, "{missing}");
    assert_eq!(missing["error"]["code"], -32002);
    assert_eq!(missing["error"]["data"]["uri"], "app://notes/9");

    let (status, blocked) = api
        .post("resources/read", json!({"uri": "app://secrets/key"}))
        .await;
    assert_eq!(status, 400, "{blocked}");
    assert_eq!(blocked["error"]["code"], -32602);
    assert!(
        blocked["error"]["message"]
            .as_str()
            .unwrap()
            .contains("rule 'no-secrets'"),
        "{blocked}"
    );
    assert_eq!(
        blocked["error"]["data"]["clienttools/policy"][0]["rule"],
        "no-secrets"
    );

    let (status, hostile) = api
        .post(
            "resources/read",
            json!({"uri": "app://notes/../secrets/key"}),
        )
        .await;
    assert_eq!(
        (status, hostile["error"]["code"].clone()),
        (400, json!(-32602))
    );

    let (status, bad_ref) = api
        .post(
            "complete",
            json!({"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "a", "value": ""}}),
        )
        .await;
    assert_eq!(
        (status, bad_ref["error"]["code"].clone()),
        (400, json!(-32602))
    );

    let (status, malformed) = api.post("prompts/get", json!({"nom": "ask"})).await;
    assert_eq!(status, 422, "{malformed}");
    assert!(
        malformed
            .as_str()
            .unwrap()
            .contains("the body must be {\"name\": string"),
        "{malformed}"
    );
    let (status, unknown) = api
        .post(
            "complete",
            json!({"ref": {"type": "ref/prompt", "name": "ask"},
                   "argument": {"name": "a", "value": ""}, "extra": 1}),
        )
        .await;
    assert_eq!(status, 422, "{unknown}");

    // The session is unharmed.
    let (status, read) = api
        .post("resources/read", json!({"uri": "app://notes/1"}))
        .await;
    assert_eq!(
        (status, read["contents"][0]["text"].clone()),
        (200, json!("first note"))
    );
}

#[tokio::test]
async fn a_prompt_asking_the_caller_answers_input_required_and_the_retry_resumes_it() {
    let api = Api::start().await;
    let asked = json!({"name": "ask", "capabilities": {"elicitation": {}}});
    let (status, round) = api.post("prompts/get", asked).await;
    assert_eq!(status, 200, "{round}");
    assert_eq!(round["resultType"], "input_required", "{round}");
    assert_eq!(
        round["inputRequests"]["context"]["method"],
        "elicitation/create"
    );
    let retry = json!({"name": "ask", "capabilities": {"elicitation": {}},
        "requestState": round["requestState"],
        "inputResponses": {"context": {"action": "accept", "content": {"context": "api"}}}});
    let (status, got) = api.post("prompts/get", retry.clone()).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["messages"][0]["content"]["text"], "context: api");
    assert_eq!(got["resultType"], "complete");
    // The state is spent.
    let (status, again) = api.post("prompts/get", retry).await;
    assert_eq!(
        (status, again["error"]["code"].clone()),
        (400, json!(-32602)),
        "{again}"
    );
    // A tampered state.
    let tampered = json!({"name": "ask", "requestState": "r1.forged", "inputResponses": {}});
    let (status, refused) = api.post("prompts/get", tampered).await;
    assert_eq!(
        (status, refused["error"]["code"].clone()),
        (400, json!(-32602)),
        "{refused}"
    );
}
