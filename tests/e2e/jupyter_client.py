#!/usr/bin/python3
"""Drives a Jupyter (Notebook 6) through a base URL, as a browser would:
REST calls and the kernel's and terminals' WebSockets. Used by the notebook
tests (src/server/notebook_test.cc) and bench/notebook_bench.sh; needs only
Debian's python3-tornado, which Jupyter itself needs.

  jupyter_client.py BASE_URL 'HEADER: VALUE' ACTION [ARG...]

BASE_URL ends with '/': http://127.0.0.1:8470/notebooks/team-a/nb/.
Actions:
  exec CODE          start a kernel, run CODE, print its output
  exec-start CODE    start a kernel, return once it is busy with CODE
  terminal SECONDS   open a terminal and type into it for SECONDS
  wait-exec CODE T   retry exec until it works (at most T seconds); print
                     the seconds it took, then the output
  rtt N              N round trips of a trivial cell on one kernel; print
                     p50 and p99 in milliseconds
  hold N SECONDS     N kernel WebSockets (one kernel) held open, then each
                     runs one cell; print how many answered
  active K SECONDS   K kernels each running a trivial cell every second
"""
import json
import sys
import time
import uuid

from tornado import gen, httpclient, ioloop, websocket

base, header, action = sys.argv[1:4]
args = sys.argv[4:]
name, _, value = header.partition(": ")
H = {name: value} if value else {}
WS = "ws" + base[len("http"):]
http = httpclient.AsyncHTTPClient(max_clients=64)
opened = []  # Every WebSocket, closed before the end.


async def new_kernel():
    r = await http.fetch(base + "api/kernels", method="POST", body="{}", headers=H)
    return json.loads(r.body)["id"]


async def connect(kid):
    ws = await websocket.websocket_connect(
        httpclient.HTTPRequest(WS + "api/kernels/%s/channels" % kid, headers=H))
    opened.append(ws)
    return ws


def execute_request(code):
    mid = uuid.uuid4().hex
    return mid, json.dumps({
        "header": {"msg_id": mid, "username": "test", "session": uuid.uuid4().hex,
                   "msg_type": "execute_request", "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": False,
                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}})


async def run(ws, code, until_busy=False):
    """Runs code on the kernel behind ws; its output (or 'busy')."""
    mid, msg = execute_request(code)
    ws.write_message(msg)
    out = ""
    while True:
        raw = await ws.read_message()
        if raw is None:
            raise RuntimeError("the kernel's connection closed")
        m = json.loads(raw)
        if m["parent_header"].get("msg_id") != mid:
            continue
        state = m["content"].get("execution_state")
        if until_busy and state == "busy":
            return "busy\n"
        if m["msg_type"] == "stream":
            out += m["content"]["text"]
        if m["msg_type"] == "error":
            out += "error: " + m["content"]["ename"]
        if m["msg_type"] == "status" and state == "idle":
            return out


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


async def main():
    if action in ("exec", "exec-start"):
        ws = await connect(await new_kernel())
        print(await run(ws, args[0], until_busy=action == "exec-start"), end="")
    elif action == "wait-exec":
        start = time.time()
        deadline = start + float(args[1])
        while True:
            try:
                ws = await connect(await new_kernel())
                out = await run(ws, args[0])
                break
            except Exception:
                if time.time() > deadline:
                    raise
                await gen.sleep(0.1)
        print("%.3f" % (time.time() - start))
        print(out, end="")
    elif action == "terminal":
        r = await http.fetch(base + "api/terminals", method="POST", body="{}", headers=H)
        term = json.loads(r.body)["name"]
        ws = await websocket.websocket_connect(
            httpclient.HTTPRequest(WS + "terminals/websocket/" + term, headers=H))
        opened.append(ws)
        end = time.time() + float(args[0])
        while time.time() < end:
            ws.write_message(json.dumps(["stdin", "echo typing\r"]))
            await gen.sleep(0.5)
        print("typed")
    elif action == "rtt":
        ws = await connect(await new_kernel())
        await run(ws, "1")
        times = []
        for _ in range(int(args[0])):
            t = time.perf_counter()
            await run(ws, "1")
            times.append((time.perf_counter() - t) * 1000)
        print("p50 %.3f ms p99 %.3f ms n %d" % (percentile(times, 0.5), percentile(times, 0.99),
                                                len(times)))
    elif action == "hold":
        kid = await new_kernel()
        socks = [await connect(kid) for _ in range(int(args[0]))]
        print("held %d" % len(socks), flush=True)
        await gen.sleep(float(args[1]))
        answered = 0
        for ws in socks:
            if (await run(ws, "1")) is not None:
                answered += 1
        print("answered %d" % answered)
    elif action == "active":
        socks = [await connect(await new_kernel()) for _ in range(int(args[0]))]
        print("kernels %d" % len(socks), flush=True)
        end = time.time() + float(args[1])
        cells = 0
        while time.time() < end:
            t = time.time()
            await gen.multi([run(ws, "x = sum(range(1000))") for ws in socks])
            cells += len(socks)
            await gen.sleep(max(0, 1 - (time.time() - t)))
        print("cells %d" % cells)
    else:
        sys.exit("unknown action " + action)
    for ws in opened:
        ws.close()
    await gen.sleep(0.05)


ioloop.IOLoop.current().run_sync(main, timeout=600)
