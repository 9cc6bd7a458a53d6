#!/usr/bin/env python3
"""MCP interop scenarios against the page-tools server, using the official Python SDK (mcp 2.x).

stdout carries only `PASS <name>` lines (and `CLOSE_TAB` for the harness); everything else goes to stderr.
The last, `PASS close`, says the SDK logged no warning while it closed the session (over HTTP: its
DELETE, which it wants answered 200, 204 or 405, else it logs `Session termination failed`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2  # mcp 2.x ships on httpx2, not httpx
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged

CLIENT = "python"


class Fail(Exception):
    pass


def log(*a: Any) -> None:
    print(*a, file=sys.stderr, flush=True)


class Warnings(logging.Handler):
    """Every warning (or worse) the SDK logs (the `mcp` loggers), each also shown on stderr."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = f"{record.name}: {record.levelname} {record.getMessage()}"
        self.seen.append(line)
        log(f"  logged: {line}")


def check(cond: Any, msg: str) -> None:
    if not cond:
        raise Fail(msg)


def text_of(r: types.CallToolResult) -> str:
    return "\n".join(c.text for c in r.content if isinstance(c, types.TextContent))


def payload(r: types.CallToolResult) -> Any:
    """structuredContent, falling back to JSON in the first text block (servers may send either)."""
    if r.structured_content is not None:
        return r.structured_content
    try:
        return json.loads(text_of(r))
    except ValueError:
        return None


def cancel_count(r: types.CallToolResult) -> int:
    events = (payload(r) or {}).get("events") or []
    return sum(1 for e in events if e.get("type") == "toolcancel" and e.get("toolName") == "work")


async def s_list(c: Client) -> None:
    tools = {t.name: t for t in (await c.list_tools()).tools}
    t = tools.get("read_board_tasks")
    check(t, f"read_board_tasks missing from tools/list: {sorted(tools)}")
    meta = t.meta or {}
    check(meta.get("clienttools/originalName"), f"read_board_tasks._meta lacks clienttools/originalName: {meta}")
    log(f"  tools={sorted(tools)} _meta={meta}")


async def s_call_valid(c: Client) -> None:
    r = await c.call_tool("read_board_tasks", {"boardId": "main"})
    check(not r.is_error, f"read_board_tasks returned isError: {text_of(r)!r}")
    tasks = (r.structured_content or {}).get("tasks")
    check(isinstance(tasks, list), f"structuredContent.tasks is not an array: {r.structured_content!r}")
    log(f"  {len(tasks)} task(s)")


async def s_call_invalid(c: Client) -> None:
    r = await c.call_tool("read_board_tasks", {})
    check(r.is_error, f"expected isError for missing boardId, got {r!r}")
    check("boardId" in text_of(r), f"error text does not mention boardId: {text_of(r)!r}")


async def s_list_changed(c: Client, changed: dict[str, anyio.Event]) -> None:
    if c.protocol_version == "2026-07-28":
        # 2026-07-28 has no standing GET stream: list_changed is only delivered on an
        # explicit subscriptions/listen stream, which must be open before the change.
        async with c.listen(tools_list_changed=True) as sub:
            check(sub.honored.tools_list_changed, f"server did not honor toolsListChanged: {sub.honored}")
            await c.call_tool("add_tool", {})
            with anyio.fail_after(10):
                async for ev in sub:
                    if isinstance(ev, ToolsListChanged):
                        break
                else:
                    raise Fail("listen stream closed before tools list_changed")
    else:
        # Handshake era: the notification arrives unsolicited (GET SSE stream / stdio) via message_handler.
        changed["tools"] = anyio.Event()  # fresh: ignore any list_changed that arrived earlier
        await c.call_tool("add_tool", {})
        with anyio.fail_after(10):
            await changed["tools"].wait()
    # refresh: bypass the SDK response cache so we really re-fetch (eviction is async).
    names = [t.name for t in (await c.list_tools(cache_mode="refresh")).tools]
    check("extra_tool" in names, f"extra_tool not listed after list_changed: {names}")


async def s_cancel(c: Client) -> None:
    before = cancel_count(await c.call_tool("events", {}))
    # Cancelling the awaiting scope is the SDK's cancellation path: the dispatcher sends
    # notifications/cancelled (handshake era / stdio) or aborts the request's POST (2026-07-28 HTTP).
    with anyio.move_on_after(0.5):
        r = await c.call_tool("work", {"waitMs": 20000, "key": f"cancel-{CLIENT}"})
        raise Fail(f"work finished before it could be cancelled: {r!r}")
    with anyio.move_on_after(5):
        while True:
            n = cancel_count(await c.call_tool("events", {}))
            if n > before:
                log(f"  toolcancel events {before} -> {n}")
                return
            await anyio.sleep(0.25)
    raise Fail("no toolcancel event for work within 5 s after cancelling")


async def s_tab_closed(c: Client) -> None:
    print("CLOSE_TAB", flush=True)
    line = await anyio.to_thread.run_sync(sys.stdin.readline)
    log(f"  harness said: {line.strip()!r}")
    last = "no call made"
    with anyio.move_on_after(10):
        while True:
            last = "(call still pending)"  # if the call itself hangs, say so rather than 'still succeeds'
            r = await c.call_tool("read_board_tasks", {"boardId": "main"})
            last = text_of(r)
            if r.is_error:
                low = last.lower()
                check("not connected" in low or "disconnected" in low, f"isError text lacks 'not connected'/'disconnected': {last!r}")
                return
            await anyio.sleep(0.5)
    raise Fail(f"read_board_tasks not isError 10 s after tab close; last reply: {last!r}")


async def refused(what: str, run: Any, *needles: str) -> str:
    """Runs `run()`, which must fail with an MCP error whose message holds every needle."""
    try:
        await run()
    except Exception as e:  # noqa: BLE001 - the SDK raises its MCPError
        message = str(e)
        low = message.lower()
        check(all(n.lower() in low for n in needles), f"{what}: error {message!r} lacks {needles}")
        log(f"  {what}: refused ({message})")
        return message
    raise Fail(f"{what}: answered instead of failing")


async def s_resources(c: Client, mode: str, updated: dict[str, Any]) -> None:
    listed = {r.uri: r for r in (await c.list_resources()).resources}
    check("board://tasks" in listed, f"board://tasks missing from resources/list: {sorted(listed)}")
    templates = [t.uri_template for t in (await c.list_resource_templates()).resource_templates]
    check("board://task/{id}" in templates, f"templates: {templates}")
    read = await c.read_resource("board://tasks")
    text = read.contents[0].text
    check(json.loads(text)[0]["id"] == "t1", f"board://tasks read: {text!r}")
    one = json.loads((await c.read_resource("board://task/t2")).contents[0].text)
    check(one["id"] == "t2", f"board://task/t2 read: {one}")
    done = await c.complete(types.ResourceTemplateReference(type="ref/resource", uri="board://task/{id}"), {"name": "id", "value": "t"})
    check(done.completion.values == ["t1", "t2"], f"completion: {done.completion}")
    # Hostile: out of the template's path, an unknown scheme, 10 MB, a read that throws.
    await refused("a '..' segment", lambda: c.read_resource("board://task/..%2F..%2Fsecret"), "..")
    await refused("an unknown scheme", lambda: c.read_resource("ftp://elsewhere/x"), "ftp://elsewhere/x")
    await refused("10 MB", lambda: c.read_resource("board://huge"), "limit")
    await refused("a read that throws", lambda: c.read_resource("board://broken"), "the disk is on fire")
    await refused("an unknown variable", lambda: c.complete(types.ResourceTemplateReference(type="ref/resource", uri="board://task/{id}"), {"name": "nope", "value": ""}), "nope")
    if mode != "legacy":
        return
    # Revision 2025-11-25: a subscription hears the page's change; a flood is bounded.
    await c.subscribe_resource("board://tasks")
    result = await c.call_tool("rename_task", {"title": "Ship it"})
    check(not result.is_error and (payload(result) or {}).get("watched") is True, f"rename_task: {text_of(result)}")
    with anyio.fail_after(10):
        await updated["event"].wait()
    check(updated["uri"] == "board://tasks", f"updated: {updated['uri']}")
    fresh = json.loads((await c.read_resource("board://tasks")).contents[0].text)
    check(fresh[1]["title"] == "Ship it", f"after the change: {fresh}")
    await c.unsubscribe_resource("board://tasks")
    for n in range(64):
        await c.subscribe_resource(f"board://task/flood{n}")
    await refused("the 65th subscription", lambda: c.subscribe_resource("board://task/flood64"), "64")
    for n in range(64):
        await c.unsubscribe_resource(f"board://task/flood{n}")


async def s_prompts(c: Client) -> None:
    prompts = {p.name: p for p in (await c.list_prompts()).prompts}
    check("summarize" in prompts, f"prompts/list: {sorted(prompts)}")
    got = await c.get_prompt("summarize", {"focus": "todo"})
    check(got.messages[0].content.text == "Summarize the board's todo tasks.", f"prompts/get: {got}")
    done = await c.complete(types.PromptReference(type="ref/prompt", name="summarize"), {"name": "focus", "value": "d"})
    check(done.completion.values == ["done"], f"completion: {done.completion}")
    await refused("a missing argument", lambda: c.get_prompt("summarize", {}), "focus")
    await refused("an extra argument", lambda: c.get_prompt("summarize", {"focus": "todo", "budget": "1"}), "budget")
    await refused("an unknown prompt", lambda: c.get_prompt("nope", {}), "nope")
    await refused("completing an unknown argument", lambda: c.complete(types.PromptReference(type="ref/prompt", name="summarize"), {"name": "budget", "value": ""}), "budget")


async def main(a: argparse.Namespace) -> None:
    # mode: 'legacy' = initialize handshake (offers 2025-11-25); 'auto' = server/discover probe that
    # adopts 2026-07-28 if the server advertises it, else falls back to initialize.
    mode = {"2025-11-25": "legacy", "2026-07-28": "auto", None: "auto"}[a.protocol_version]
    changed = {"tools": anyio.Event()}
    updated: dict[str, Any] = {"event": anyio.Event(), "uri": None}
    warnings = Warnings()
    logging.getLogger("mcp").addHandler(warnings)

    async def on_message(msg: Any) -> None:
        if isinstance(msg, Exception):
            log(f"  transport error: {msg!r}")
        elif isinstance(msg, types.ToolListChangedNotification):
            log("  <- notifications/tools/list_changed")
            changed["tools"].set()
        elif isinstance(msg, types.ResourceUpdatedNotification):
            log(f"  <- notifications/resources/updated {msg.params.uri}")
            updated["uri"] = str(msg.params.uri)
            updated["event"].set()

    async with AsyncExitStack() as stack:
        if a.transport == "http":
            headers = {"Authorization": f"Bearer {a.token}"} if a.token else None
            # Custom headers need our own httpx2 client; timeouts mirror the SDK default (long SSE reads).
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))
            )
            server: Any = streamable_http_client(a.url, http_client=http)
        else:
            # Full env: the SDK otherwise passes only a minimal safe environment to the child.
            server = StdioServerParameters(command=a.command, args=a.arg, env=dict(os.environ))
        client = Client(
            server,
            mode=mode,
            message_handler=on_message,
            read_timeout_seconds=30,
            client_info=types.Implementation(name=f"interop-{CLIENT}", version="0.1.0"),
        )
        try:
            c = await stack.enter_async_context(client)
        except Exception as e:
            raise Fail(f"initialize: {type(e).__name__}: {e}") from e
        log(f"negotiated protocol version: {c.protocol_version} (mode={mode}, server={c.server_info})")
        if a.protocol_version:
            # 'auto' silently falls back to initialize when server/discover fails or lacks 2026-07-28.
            check(c.protocol_version == a.protocol_version,
                  f"initialize: asked for {a.protocol_version}, negotiated {c.protocol_version}")
        print("PASS initialize", flush=True)

        scenarios = [
            ("list", lambda: s_list(c)),
            ("call-valid", lambda: s_call_valid(c)),
            ("call-invalid", lambda: s_call_invalid(c)),
            ("list-changed", lambda: s_list_changed(c, changed)),
            ("cancel", lambda: s_cancel(c)),
            ("resources", lambda: s_resources(c, mode, updated)),
            ("prompts", lambda: s_prompts(c)),
            ("tab-closed", lambda: s_tab_closed(c)),
        ]
        for name, run in scenarios:
            if name in a.skip:
                log(f"SKIP {name}")
                continue
            try:
                await run()
            except Exception as e:
                raise Fail(f"{name}: {type(e).__name__}: {e}") from e
            print(f"PASS {name}", flush=True)
        # Leaving the block closes the client: over HTTP the SDK ends its session with a DELETE.
        before_close = len(warnings.seen)
    on_close = warnings.seen[before_close:]
    check(not on_close, f"close: the SDK logged {on_close}")
    print("PASS close", flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--transport", choices=["http", "stdio"], required=True)
    p.add_argument("--url")
    p.add_argument("--token")
    p.add_argument("--protocol-version", choices=["2025-11-25", "2026-07-28"])
    p.add_argument("--command")
    p.add_argument("--arg", action="append", default=[])
    p.add_argument("--skip", action="append", default=[], help="scenario to skip (repeatable or comma-separated)")
    a = p.parse_args()
    a.skip = {s for x in a.skip for s in x.split(",")}
    if (a.transport == "http") != bool(a.url) or (a.transport == "stdio") != bool(a.command):
        p.error("--transport http needs --url; --transport stdio needs --command")
    try:
        anyio.run(main, a)
    except BaseException as e:  # noqa: BLE001 - anyio task groups may wrap our Fail in an ExceptionGroup
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        log(f"FAIL {e}" if isinstance(e, Fail) else f"FAIL {type(e).__name__}: {e}")
        sys.exit(1)
