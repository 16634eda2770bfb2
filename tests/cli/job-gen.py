#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Report files of a job with a GPU memory profile of known shape, as the
plugin writes them (gpumem-report/1 with a gpumem-profile/1 "profile",
doc/REPORT-JSON.md), for `gpumem job --report FILE --svg`.

  job-gen.py test DIR      job 77 for tests/cli/job-svg.sh: GPU 0's HBM
                           steps from 20% to 80% at 60 s; a GPU without GPM
                           with a 10 s hole; a MIG GPU; a GPU never sampled;
                           a skipped and a refused profile; a policy name
                           with markup; job 78 beside it (not to be drawn)
  job-gen.py example DIR   job 4711 for bench/job-example.svg: one node of
                           4 GPUs, one HBM-bound, one faulting on managed
                           memory, one compute-bound, one left idle
"""
import json
import math
import sys


def metric(unit, tl, src="gpm"):
    v = [x for x in tl if x is not None] or [0]
    m = sum(v) / len(v)
    o = {"unit": unit, "source": src, "mean": m, "max": max(v), "timeline": tl}
    if unit != "GiB":
        o.update(median=m, p95=sorted(v)[int(0.95 * (len(v) - 1))], above={})
    return o


def gpu(i, src, metrics, samples=120, note=None, step=1.0):
    return {"index": i, "uuid": "GPU-%d" % i, "name": "NVIDIA H100 80GB HBM3", "source": src,
            "note": note, "samples": samples, "timeline_step_s": step, "metrics": metrics}


def gpm(i, dram, sm, rx, tx, mem, step=1.0, samples=120):
    return gpu(i, "gpm", {
        "dram_bw_util": metric("%", dram), "sm_util": metric("%", sm),
        "sm_occupancy": metric("%", [s * 0.6 for s in sm]),
        "pcie_rx": metric("GB/s", rx), "pcie_tx": metric("GB/s", tx),
        "nvlink_rx": None, "nvlink_tx": None, "mem_used": metric("GiB", mem, "nvml-memory")},
        samples, None, step)


def prof(gpus, seconds=120.0):
    return {"schema": "gpumem-profile/1", "state": "ran", "reason": None, "interval_ms": 1000,
            "started": "2026-11-25T16:00:00Z", "seconds": seconds, "cpu_s": 0.1, "gpus": gpus}


def report(d, node, phase, time, profile, policy="stream.yaml", job=77, um="gpu"):
    r = {"schema": "gpumem-report/1", "job": job, "step": "epilog", "node": node, "user": "alice",
         "uid": 1000, "policy": policy, "phase": phase, "time": time, "gpus": "0,1",
         "status": "not_run" if phase == "job" else "ran", "reason": None, "exit_code": None,
         "verdict": "not_run" if phase == "job" else "pass", "drained": False,
         "effective": {"l2": {"persisting_limit": "25%"},
                       "mps": {"active_thread_percentage": None, "daemon": "none"},
                       "unified_memory": {"preferred_location": um, "accessed_by": [],
                                          "prefetch": "none"}},
         "check": None}
    if profile is not None:
        r["profile"] = profile
    hook = "prolog" if phase == "before" else "epilog"
    with open("%s/job%d.%s.%s.%s.json" % (d, job, hook, node, phase), "w") as f:
        json.dump(r, f)


def test(d):
    # GPU 0: HBM 20% for 60 s, then 80%; SM 50%; rx 0.2, tx 0.1 GB/s; memory 10 then 20 GiB.
    g0 = gpu(0, "gpm", {"dram_bw_util": metric("%", [20.0] * 60 + [80.0] * 60),
                        "sm_util": metric("%", [50.0] * 120),
                        "sm_occupancy": metric("%", [30.0] * 120),
                        "pcie_rx": metric("GB/s", [0.2] * 120),
                        "pcie_tx": metric("GB/s", [0.1] * 120),
                        "nvlink_rx": None, "nvlink_tx": None,
                        "mem_used": metric("GiB", [10.0] * 60 + [20.0] * 60, "nvml-memory")})
    # GPU 1: NVML's counters (no GPM), idle, no sample for 10 s in the middle, no tx figure.
    def hole(v):
        return [v] * 30 + [None] * 10 + [v] * 80
    g1 = gpu(1, "nvml", {"dram_bw_util": metric("%", hole(3.0), "nvml-utilization"),
                         "sm_util": metric("%", hole(4.0), "nvml-utilization"),
                         "sm_occupancy": None, "pcie_rx": metric("GB/s", hole(0.1), "nvml-pcie"),
                         "pcie_tx": None, "nvlink_rx": None, "nvlink_tx": None,
                         "mem_used": metric("GiB", hole(1.0), "nvml-memory")})
    # gpu02: a MIG GPU (no source; its note with markup and an escape) and a GPU never sampled.
    g2 = gpu(2, None, None, 0, "MIG <b>&\u001b[2J: per-instance sampling not supported")
    g3 = gpu(3, "gpm", {k: None for k in ("dram_bw_util", "sm_util", "sm_occupancy", "pcie_rx",
                                          "pcie_tx", "nvlink_rx", "nvlink_tx", "mem_used")}, 0)
    report(d, "gpu01", "before", "2026-11-25T15:59:00Z", None)
    report(d, "gpu01", "after", "2026-11-25T16:02:00Z", prof([g0, g1]), policy="e<vil>&\"'.yaml")
    report(d, "gpu02", "job", "2026-11-25T16:02:00Z", prof([g2, g3]))
    report(d, "gpu03", "after", "2026-11-25T16:02:00Z",
           {"state": "skipped", "reason": "no libnvidia-ml.so.1"})
    bad = prof([g0])
    bad["gpus"][0]["metrics"]["sm_util"]["timeline"][5] = 250
    report(d, "gpu04", "after", "2026-11-25T16:02:00Z", bad)
    report(d, "gpu01", "after", "2026-11-25T16:02:00Z", prof([g1]), job=78)   # not drawn


def example(d):
    # A 40-minute job, 120 points of 20 s: a load phase (host to GPU), then steady work.
    n, step = 120, 20.0
    wave = [math.sin(i / 5.0) for i in range(n)]
    load = [i < 12 for i in range(n)]
    gs = []
    # GPU 0: a stream-like kernel loop, HBM 85-92% of peak.
    gs.append(gpm(0, [5 if l else 88 + 3 * w for l, w in zip(load, wave)],
                  [3 if l else 62 + 4 * w for l, w in zip(load, wave)],
                  [18 if l else 0.1 for l in load], [0.2 if l else 0.05 for l in load],
                  [min(60, 5 * i) if i < 12 else 60 for i in range(n)], step))
    # GPU 1: managed memory read from the CPU's pages, fault by fault.
    gs.append(gpm(1, [9 + 2 * w for w in wave], [14 + 3 * w for w in wave],
                  [5.4 + 0.8 * w for w in wave], [3.1 + 0.5 * w for w in wave],
                  [12 + 6 * (i / n) for i in range(n)], step))
    # GPU 2: matrix multiplications, SM busy, HBM moderate.
    gs.append(gpm(2, [5 if l else 35 + 6 * w for l, w in zip(load, wave)],
                  [3 if l else 93 + 2 * w for l, w in zip(load, wave)],
                  [12 if l else 0.05 for l in load], [0.1] * n,
                  [min(40, 4 * i) if i < 12 else 40 for i in range(n)], step))
    # GPU 3: asked for, never used.
    gs.append(gpm(3, [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n, [0.5] * n, step))
    p = prof(gs, n * step)
    report(d, "gpu07", "after", "2026-11-25T16:41:00Z", p, policy="default", job=4711, um=None)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("test", "example"):
        sys.exit("usage: job-gen.py test|example DIR")
    (test if sys.argv[1] == "test" else example)(sys.argv[2])
