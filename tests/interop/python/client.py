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


async def main(a: argparse.Namespace) -> None:
    # mode: 'legacy' = initialize handshake (offers 2025-11-25); 'auto' = server/discover probe that
    # adopts 2026-07-28 if the server advertises it, else falls back to initialize.
    mode = {"2025-11-25": "legacy", "2026-07-28": "auto", None: "auto"}[a.protocol_version]
    changed = {"tools": anyio.Event()}
    warnings = Warnings()
    logging.getLogger("mcp").addHandler(warnings)

    async def on_message(msg: Any) -> None:
        if isinstance(msg, Exception):
            log(f"  transport error: {msg!r}")
        elif isinstance(msg, types.ToolListChangedNotification):
            log("  <- notifications/tools/list_changed")
            changed["tools"].set()

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
