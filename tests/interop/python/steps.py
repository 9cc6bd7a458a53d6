#!/usr/bin/env python3
"""Runs tool-call steps through the official Python SDK client (mcp 2.x) and prints one JSON line
per step on stdout, for the Rust tests to judge (tests/e2e/tests/agent_tools.rs, elicitation.rs).

Steps (a JSON array in --steps):
  {"list": true}                                   -> {"tools": [tools/list entries as the SDK read them]}
  {"call": NAME, "arguments"?: {...}, "meta"?: {...}, "progress"?: true}
                                                   -> {"isError", "text", "structured"} (input rounds driven by the SDK)
                                                      (+ "meta": the result's _meta, when it has one)
                                                      (+ "progress": [{progress, total, message}] when asked)
  {"mrtr": NAME, "arguments"?: {...}}              -> drives the 2026-07-28 rounds by hand (see mrtr())
With --answer, the client declares elicitation and answers every question so:
  accept | accept-reject (accept with approve=false and a reason) | decline | cancel |
  accept-string (accept with approve="false": a malformed answer).
Every question asked is printed as {"elicited": message}. With --gate DIR, the client creates
DIR/asked when asked, and answers only once DIR/answer exists (the test decides when).
With --observe, the client opts in to every log level (logging/setLevel on 2025-11-25, the
per-request logLevel on 2026-07-28) and prints each log message its logging callback gets as
{"logged": params}, and each question in full as {"asked": params}: everything the agent reads.
It also declares sampling: each sampling/createMessage request is printed in full as
{"asked": params} and answered with the text SAMPLED (model "interop-python-steps").
The server is --url (Streamable HTTP), or --command with its --arg list (stdio: the client
launches it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def log(*a: Any) -> None:
    print(*a, file=sys.stderr, flush=True)


def emit(obj: Any) -> None:
    print(json.dumps(obj), flush=True)


def text_of(r: types.CallToolResult) -> str:
    return "\n".join(c.text for c in r.content if isinstance(c, types.TextContent))


SAMPLED = "a contact who pays by card"


def outcome(r: Any) -> dict[str, Any]:
    if isinstance(r, types.CallToolResult):
        out = {"isError": bool(r.is_error), "text": text_of(r), "structured": r.structured_content}
        if r.meta is not None:
            out["meta"] = r.model_dump(mode="json", by_alias=True, exclude_none=True).get("_meta")
        return out
    return {"other": r.model_dump(mode="json", by_alias=True, exclude_none=True)}


def answer_for(mode: str) -> types.ElicitResult:
    if mode == "accept":
        return types.ElicitResult(action="accept", content={"approve": True})
    if mode == "accept-reject":
        return types.ElicitResult(action="accept", content={"approve": False, "reason": "not this one"})
    if mode == "accept-string":
        return types.ElicitResult(action="accept", content={"approve": "false"})
    if mode == "decline":
        return types.ElicitResult(action="decline")
    return types.ElicitResult(action="cancel")


async def mrtr(c: Client, name: str, arguments: dict[str, Any], answer: types.ElicitResult) -> dict[str, Any]:
    """The 2026-07-28 rounds by hand: the question, then retries with the state as issued, altered,
    replayed, and for other arguments. Each retry's outcome is reported."""
    first = await c.session.call_tool(name, arguments, allow_input_required=True)
    if not isinstance(first, types.InputRequiredResult):
        return {"first": outcome(first)}
    state = first.request_state or ""
    responses = {"confirm": answer.model_dump(mode="json", by_alias=True, exclude_none=True)}
    keys = sorted((first.input_requests or {}).keys())

    async def retry(args: dict[str, Any], s: str | None, r: Any) -> dict[str, Any]:
        try:
            return outcome(await c.session.call_tool(name, args, input_responses=r, request_state=s,
                                                     allow_input_required=True))
        except Exception as e:  # noqa: BLE001 - a protocol error is an outcome here
            return {"exception": f"{type(e).__name__}: {e}"}

    flipped = state[:-1] + ("0" if state[-1:] != "0" else "1")
    other_args = dict(arguments, id="someone-else")
    return {
        "inputRequestKeys": keys,
        "tampered": await retry(arguments, flipped, responses),
        "otherArguments": await retry(other_args, state, responses),
        "noResponses": await retry(arguments, state, None),
        # The state was spent by the retry before: even the right answer is refused now.
        "replayed": await retry(arguments, state, responses),
        "fresh": await fresh(c, name, arguments, responses),
    }


async def fresh(c: Client, name: str, arguments: dict[str, Any], responses: Any) -> dict[str, Any]:
    first = await c.session.call_tool(name, arguments, allow_input_required=True)
    if not isinstance(first, types.InputRequiredResult):
        return {"first": outcome(first)}
    ok = outcome(await c.session.call_tool(name, arguments, input_responses=responses,
                                           request_state=first.request_state, allow_input_required=True))
    again = outcome(await c.session.call_tool(name, arguments, input_responses=responses,
                                              request_state=first.request_state, allow_input_required=True))
    return {"answered": ok, "replayed": again}


async def main(a: argparse.Namespace) -> None:
    mode = {"2025-11-25": "legacy", "2026-07-28": "auto"}[a.protocol_version]
    callback = None
    if a.answer:
        async def callback(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            emit({"elicited": getattr(params, "message", "")})
            if a.observe:
                emit({"asked": params.model_dump(mode="json", by_alias=True, exclude_none=True)})
            if a.gate:
                open(os.path.join(a.gate, "asked"), "w").close()
                with anyio.fail_after(60):
                    while not os.path.exists(os.path.join(a.gate, "answer")):
                        await anyio.sleep(0.05)
            return answer_for(a.answer)

    logged = None
    sampled = None
    if a.observe:
        async def logged(params: types.LoggingMessageNotificationParams) -> None:
            emit({"logged": params.model_dump(mode="json", by_alias=True, exclude_none=True)})

        async def sampled(_ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
            emit({"asked": params.model_dump(mode="json", by_alias=True, exclude_none=True)})
            return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=SAMPLED),
                                             model="interop-python-steps", stop_reason="endTurn")

    async with AsyncExitStack() as stack:
        if a.command:
            # Full env: the SDK otherwise passes only a minimal safe environment to the child.
            server: Any = StdioServerParameters(command=a.command, args=a.arg, env=dict(os.environ))
        else:
            headers = {"Authorization": f"Bearer {a.token}"} if a.token else None
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)))
            server = streamable_http_client(a.url, http_client=http)
        client = Client(
            server,
            mode=mode,
            elicitation_callback=callback,
            sampling_callback=sampled,
            logging_callback=logged,
            log_level="debug" if a.observe else None,
            read_timeout_seconds=60,
            client_info=types.Implementation(name="interop-python-steps", version="0.1.0"),
        )
        c = await stack.enter_async_context(client)
        if c.protocol_version != a.protocol_version:
            raise SystemExit(f"asked for {a.protocol_version}, negotiated {c.protocol_version}")
        log(f"negotiated {c.protocol_version}")
        if a.observe and c.protocol_version == "2025-11-25":
            await c.session.set_logging_level("debug")  # pyright: ignore[reportDeprecated]
        for step in json.loads(a.steps):
            if "list" in step:
                tools = (await c.list_tools(cache_mode="refresh")).tools
                emit({"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]})
            elif "call" in step:
                progress: list[dict[str, Any]] = []

                async def on_progress(value: float, total: float | None, message: str | None) -> None:
                    progress.append({"progress": value, "total": total, "message": message})

                try:
                    r = await c.call_tool(step["call"], step.get("arguments", {}), meta=step.get("meta"),
                                          progress_callback=on_progress if step.get("progress") else None)
                    out = outcome(r)
                    if step.get("progress"):
                        out["progress"] = progress
                    emit(out)
                except Exception as e:  # noqa: BLE001 - reported, judged by the Rust test
                    emit({"exception": f"{type(e).__name__}: {e}"})
            elif "mrtr" in step:
                emit(await mrtr(c, step["mrtr"], step.get("arguments", {}), answer_for(a.answer or "accept")))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--url")
    p.add_argument("--command")
    p.add_argument("--arg", action="append", default=[])
    p.add_argument("--observe", action="store_true")
    p.add_argument("--token")
    p.add_argument("--protocol-version", choices=["2025-11-25", "2026-07-28"], required=True)
    p.add_argument("--answer", choices=["accept", "accept-reject", "decline", "cancel", "accept-string"])
    p.add_argument("--gate")
    p.add_argument("--steps", required=True)
    args = p.parse_args()
    if bool(args.url) == bool(args.command):
        p.error("give --url (Streamable HTTP) or --command (stdio)")
    anyio.run(main, args)
