#!/usr/bin/env python3
"""Kueue's baseline scheduler scenario, end to end through Allot's API.

Kueue's performance test (test/performance/scheduler, "baseline"): 5 cohorts
x 6 ClusterQueues (cpu: nominalQuota 20, borrowingLimit 100; preemption
reclaimWithinCohort Any, withinClusterQueue LowerPriority). Each
ClusterQueue receives 350 small workloads (1 cpu, runs 200 ms, priority 50,
one every 100 ms), 100 medium (5 cpu, 500 ms, priority 100, one every
500 ms) and 50 large (20 cpu, 1 s, priority 200, one every 1.2 s): 15,000 in
all. The work needs 66 s at full use of the 600 nominal cpus; Kueue reports
about 351 s of wall time.

Here the workloads run on `allot agent --simulate-nodes --simulate-exec`
nodes (their runtime is the annotation allot.dev/simulated-runtime), so
every admission also goes through placement, the agent's start and its
exit report. bench/kueue_baseline.sh starts the server and the agent; this
script applies the queues, submits on schedule from a pool of keep-alive
connections, waits until every workload finished, and prints wall time and
the time from creation to admission per class (the Admitted condition's
time; a preempted workload counts its last admission).

Usage: kueue_baseline.py --server URL --token TOKEN [--scale S]
  --scale divides the counts (0.1: a quick run with a tenth of the work).
"""
import argparse
import heapq
import http.client
import json
import statistics
import sys
import threading
import time
import urllib.parse
from datetime import datetime

CLASSES = [  # name, count, cpu, runtime, priority, interval (s)
    ("small", 350, 1, "200ms", 50, 0.1),
    ("medium", 100, 5, "500ms", 100, 0.5),
    ("large", 50, 20, "1s", 200, 1.2),
]
COHORTS, CQS = 5, 6
NS = "kueue-baseline"


def conn(url):
    u = urllib.parse.urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=120)


def call(c, token, method, path, body=None, ctype="application/json"):
    h = {"Authorization": "Bearer " + token}
    if body is not None:
        h["Content-Type"] = ctype
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    return r.status, data


def config():
    docs = [f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n",
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\n"
            "metadata: {name: default}\n"]
    for i in range(COHORTS):
        for j in range(CQS):
            cq = f"cq-{i}-{j}"
            docs.append(f"""apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: {cq}}}
spec:
  cohort: cohort-{i}
  namespaceSelector: {{}}
  preemption: {{reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{{name: cpu, nominalQuota: 20, borrowingLimit: 100}}]
""")
            docs.append(f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
                        f"metadata: {{name: lq-{i}-{j}, namespace: {NS}}}\n"
                        f"spec: {{clusterQueue: {cq}}}\n")
    return "---\n".join(docs)


def workload(name, lq, cpu, runtime, priority):
    return json.dumps({
        "apiVersion": "allot.dev/v1", "kind": "Workload",
        "metadata": {"name": name, "namespace": NS,
                     "annotations": {"allot.dev/simulated-runtime": runtime}},
        "spec": {"queueName": lq, "priority": priority,
                 "podSets": [{"name": "main", "count": 1,
                              "template": {"resources": {"requests": {"cpu": cpu}}}}]},
    })


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--clients", type=int, default=16)
    a = ap.parse_args()

    c = conn(a.server)
    st, body = call(c, a.token, "POST", "/api/v1/apply", config(), "application/yaml")
    if st != 200:
        sys.exit(f"apply failed: {st} {body[:300]}")

    # Every submission with its due time, in time order.
    due = []
    for i in range(COHORTS):
        for j in range(CQS):
            for cls, count, cpu, runtime, prio, every in CLASSES:
                for k in range(max(1, int(count * a.scale))):
                    name = f"{cls[0]}-{i}-{j}-{k}"
                    due.append((k * every, name, cls,
                                workload(name, f"lq-{i}-{j}", cpu, runtime, prio)))
    due.sort()
    total = len(due)
    lock = threading.Lock()
    nxt = [0]
    late = []
    errors = []
    start = time.monotonic()

    def worker():
        cc = conn(a.server)
        while True:
            with lock:
                if nxt[0] >= total:
                    return
                t, name, cls, body = due[nxt[0]]
                nxt[0] += 1
            wait = start + t - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            else:
                late.append(-wait)
            try:
                st, data = call(cc, a.token, "POST", "/api/v1/workloads", body)
            except Exception as e:  # noqa: BLE001 - reconnect and count it
                cc = conn(a.server)
                st, data = 0, str(e).encode()
            if st != 201:
                errors.append((name, st, data[:200]))

    threads = [threading.Thread(target=worker) for _ in range(a.clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    submitted = time.monotonic() - start
    print(f"submitted {total} workloads in {submitted:.1f} s "
          f"({len(errors)} errors; {len(late)} sent late, max {max(late, default=0) * 1000:.0f} ms)",
          flush=True)
    for e in errors[:5]:
        print("  error:", e)

    # Wait until every workload finished.
    while True:
        st, data = call(c, a.token, "GET", f"/api/v1/workloads?tenant={NS}")
        items = json.loads(data)["items"]
        done = [w for w in items if w["status"]["state"] in ("Succeeded", "Failed")]
        if len(done) >= total - len(errors):
            break
        time.sleep(0.5)
    wall = time.monotonic() - start

    def ms(iso):
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000

    waits = {cls: [] for cls, *_ in CLASSES}
    last_finish = 0
    first_create = min(ms(w["metadata"]["creationTimestamp"]) for w in items)
    failed = 0
    preempted = 0
    for w in items:
        cls = {"s": "small", "m": "medium", "l": "large"}[w["metadata"]["name"][0]]
        created = ms(w["metadata"]["creationTimestamp"])
        conds = {x["type"]: x for x in w["status"]["conditions"]}
        adm = conds.get("Admitted")
        if adm and adm["status"] == "True":
            waits[cls].append(adm["lastTransitionUnixMs"] - created)
        if "Preempted" in conds:
            preempted += 1
        if w["status"]["state"] == "Failed":
            failed += 1
        fin = conds.get("Finished")
        if fin:
            last_finish = max(last_finish, fin["lastTransitionUnixMs"])
    print(f"wall: {wall:.1f} s from the first submission until all finished "
          f"(server clock: {(last_finish - first_create) / 1000:.1f} s); "
          f"{failed} failed, {preempted} preempted at least once")
    for cls, *_ in CLASSES:
        v = waits[cls]
        if v:
            print(f"  {cls:6s} n={len(v):5d}  time to admission: mean {statistics.mean(v) / 1000:.2f} s, "
                  f"p50 {statistics.median(v) / 1000:.2f} s, max {max(v) / 1000:.2f} s")
    print(json.dumps({"workloads": total, "wallS": round(wall, 2),
                      "admissionMeanS": {k: round(statistics.mean(v) / 1000, 3)
                                         for k, v in waits.items() if v},
                      "failed": failed, "preempted": preempted}))


if __name__ == "__main__":
    main()
