#!/usr/bin/env python3
"""Write the report test fixtures (compare.json, sweep.json, replay-min.json).

The fixtures follow docs/REPORT-JSON.md.  Their numbers are chosen by hand to
tell a coherent story (paged packs more sequences than max reservation,
oracle sits between them), shaped over time by simple closed-form curves so
that the files are reproducible: run this script to regenerate them.
"""
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))

MODEL = {"name": "llama-3-8b", "num_layers": 32, "num_kv_heads": 8,
         "head_dim": 128, "num_params": 8030261248}
GPU = {"name": "a100-80gb", "mem_bytes": 85899345920,
       "hbm_bytes_per_s": 2.039e12, "fp16_flops": 3.12e14}
ENGINE = {"tp": 1, "block_size": 16, "max_num_seqs": 256,
          "max_num_batched_tokens": 8192, "max_model_len": 8192,
          "gpu_memory_utilization": 0.9, "kv_cache_dtype": "auto",
          "preemption_mode": "recompute", "enable_prefix_caching": False,
          "kv_budget_bytes": 59055800320}
TRACE = {"path": "azure-2023/conv.csv", "format": "azure", "requests": 1200,
         "span_s": 600.0, "mean_rate": 2.0}

N = 121            # samples, one every 5 s of simulated time
Q = [i / 100 for i in range(101)]


def r3(x):
    return round(x, 3)


def ramp(t):
    """0 at t = 0 rising to 1 by t = 120 s, then steady with a slow wave."""
    return min(1.0, t / 120.0) * (0.9 + 0.1 * math.sin(t / 40.0))


def series(token, resv, ifrag, efrag, cached, running, waiting):
    ts = {"t_s": [], "running": [], "waiting": []}
    keys = ["token_states", "reservation", "internal_fragmentation",
            "external_fragmentation", "cached_idle", "free"]
    for k in keys:
        ts[k + "_pct"] = []
    for i in range(N):
        t = 5.0 * i
        a = ramp(t)
        parts = [r3(token * a), r3(resv * a), r3(ifrag * a), r3(efrag * a),
                 r3(cached * a)]
        parts.append(r3(100.0 - sum(parts)))
        ts["t_s"].append(t)
        for k, v in zip(keys, parts):
            ts[k + "_pct"].append(v)
        ts["running"].append(round(running * a))
        ts["waiting"].append(max(0, round(waiting * a * (0.5 + 0.5 * math.sin(t / 25.0)))))
    return ts


def cdf(q50, q99, qmax, zero_share=0.0):
    """Monotone quantile curve through p50, p99 and max."""
    out = []
    for q in Q:
        if q <= zero_share:
            v = 0.0
        elif q <= 0.5:
            v = q50 * (q - zero_share) / max(1e-9, 0.5 - zero_share)
        elif q <= 0.99:
            v = q50 + (q99 - q50) * ((q - 0.5) / 0.49) ** 2
        else:
            v = q99 + (qmax - q99) * (q - 0.99) / 0.01
        out.append(round(max(v, 0.0), 6))
    return out


def policy(name, arrived, completed, rejected, unfinished, mem, conc, qd,
           ttft, tpot, e2e, rps, otps, pre, ts, cd, reasons=None):
    keys = ["token_states", "reservation", "internal_fragmentation",
            "external_fragmentation", "cached_idle", "free"]
    mem = list(mem) + [r3(100.0 - sum(mem))]
    # at the peak the used parts grow by 30 %, capped at 97 % of the budget
    used = sum(mem[:5])
    grow = min(1.3, 97.0 / used)
    peak = [r3(v * grow) for v in mem[:5]]
    p = {
        "policy": name,
        "accounting": {"arrived": arrived, "completed": completed,
                       "rejected": rejected, "unfinished": unfinished,
                       "rejected_by_reason": reasons or {}},
        "memory_pct": dict(zip(keys, mem)),
        "memory_peak_pct": dict(zip(keys, peak + [r3(100.0 - sum(peak))])),
        "concurrency": {"mean": conc[0], "p50": conc[1], "p99": conc[2], "max": conc[3]},
        "tokens_per_step": {"mean": round(conc[0] * 1.4, 1), "max": 8192},
        "waiting": {"mean": round(max(ts["waiting"]) * 0.4, 2), "max": max(ts["waiting"])},
        "queue_delay_s": dict(zip(["p50", "p90", "p99", "max"], qd)),
        "ttft_s": dict(zip(["p50", "p90", "p99", "max"], ttft)),
        "tpot_s": dict(zip(["p50", "p90", "p99", "max"], tpot)),
        "e2e_s": dict(zip(["p50", "p90", "p99", "max"], e2e)),
        "throughput": {"requests_per_s": rps, "output_tokens_per_s": otps},
        "goodput": {"requests_per_s": round(rps * 0.95, 3), "slo_ttft_s": 2.0,
                    "slo_tpot_s": 0.1, "fraction": 0.95},
        "preemptions": pre, "recomputed_tokens": pre * 700, "swapped_bytes": 0,
        "prefix_hit_tokens": 0, "prefix_hit_blocks": 0,
        "prefix_hit_rate": {"tokens": 0.0, "blocks": 0.0},
        "sim": {"sim_time_s": 605.2, "steps": 41230, "events": 9876, "wall_s": 0.031},
        "timeseries": ts,
        "cdf": cd,
    }
    return p


def compare():
    paged = policy(
        "paged", 1200, 1188, 0, 12, [68.4, 0.0, 1.6, 0.0, 4.2],
        (58.3, 60, 88, 94), [0.0, 0.02, 0.31, 0.9], [0.09, 0.21, 0.62, 1.4],
        [0.021, 0.027, 0.034, 0.051], [6.1, 12.4, 22.0, 31.5], 1.98, 412.7, 14,
        series(68.4, 0.0, 1.6, 0.0, 4.2, 60, 4),
        {"q": Q, "queue_delay_s": cdf(0.0, 0.31, 0.9, 0.6),
         "ttft_s": cdf(0.09, 0.62, 1.4), "tpot_s": cdf(0.021, 0.034, 0.051)})
    mx = policy(
        "max", 1200, 1061, 3, 136, [22.1, 58.2, 0.0, 9.3, 0.0],
        (11.8, 12, 13, 13), [8.2, 41.0, 77.5, 96.0], [8.4, 41.3, 78.0, 96.6],
        [0.012, 0.014, 0.016, 0.019], [14.0, 52.0, 90.1, 110.2], 1.74, 361.9, 0,
        series(22.1, 58.2, 0.0, 9.3, 0.0, 12, 140),
        {"q": Q, "queue_delay_s": cdf(8.2, 77.5, 96.0),
         "ttft_s": cdf(8.4, 78.0, 96.6), "tpot_s": cdf(0.012, 0.016, 0.019)},
        {"prompt_exceeds_max_model_len": 3})
    oracle = policy(
        "oracle", 1200, 1176, 0, 24, [51.0, 17.5, 0.0, 11.2, 0.0],
        (39.5, 41, 60, 66), [0.4, 2.1, 6.3, 11.8], [0.5, 2.3, 6.6, 12.1],
        [0.017, 0.022, 0.028, 0.04], [7.5, 15.8, 27.2, 38.0], 1.95, 405.2, 0,
        series(51.0, 17.5, 0.0, 11.2, 0.0, 41, 30),
        {"q": Q, "queue_delay_s": cdf(0.4, 6.3, 11.8, 0.2),
         "ttft_s": cdf(0.5, 6.6, 12.1), "tpot_s": cdf(0.017, 0.028, 0.04)})
    return {
        "kvsim_version": "0.1.0", "command": "compare",
        "model": MODEL, "gpu": GPU, "engine": ENGINE, "trace": TRACE,
        "policies": {"max": mx, "oracle": oracle, "paged": paged},
        "ratios": {
            "max": {"concurrency": 4.94, "throughput": 1.14, "waste": 0.03,
                    "p99_queue_delay": 0.004},
            "oracle": {"concurrency": 1.48, "throughput": 1.02, "waste": 0.14,
                       "p99_queue_delay": 0.049},
        },
    }


def sweep():
    rows, cap = [], []
    for pol, base_conc, base_rps, extra in (("paged", 58.0, 1.98, 0.0),
                                            ("vattention", 55.0, 1.96, 0.12)):
        for bs in (1, 2, 4, 8, 16, 32, 64, 128, 256):
            # half a block per sequence wasted at the tail, ~60 sequences of
            # ~1000 tokens; vattention also loses part of its last page
            ifrag = round(100.0 * 58 * (bs - 1) / 2 / 58000 + 8 * extra, 3)
            slow = 1.0 + 0.35 / bs + ifrag / 100.0 + extra
            rows.append({
                "policy": pol, "block_size": bs,
                "internal_fragmentation_pct": ifrag,
                "metadata_bytes_max": int(4 * 58000 / bs),
                "prefix_hit_rate_tokens": round(0.42 * (1 - math.log2(bs) / 10), 4),
                "concurrency_mean": round(base_conc * (1 - ifrag / 100), 2),
                "concurrency_p99": round(base_conc * 1.5 * (1 - ifrag / 100)),
                "queue_delay_p99_s": round(0.31 * slow ** 3, 4),
                "ttft_p50_s": round(0.09 * slow, 4), "ttft_p99_s": round(0.62 * slow ** 2, 4),
                "tpot_p50_s": round(0.021 * slow, 5), "tpot_p99_s": round(0.034 * slow, 5),
                "requests_per_s": round(base_rps / slow, 4),
                "output_tokens_per_s": round(412.7 * base_rps / 1.98 / slow, 2),
                "preemptions": int(14 * slow),
                "kernel_cost_us": round(38.0 * (1 + 2.0 / bs), 2),
                # paged reads through a block table (1 + 1 / b, plus the
                # partly read last block); vattention reads contiguously
                "kernel_relative_cost": (round(1 + 1.0 / bs + bs / 2300.0, 4)
                                         if pol == "paged" else 1.0),
                "waste_pct": round(ifrag + 0.3, 3),
            })
        for bs in (16, 32):
            cap.append({"policy": pol, "block_size": bs,
                        "max_rate": round(base_rps * (1.6 if bs == 16 else 1.55), 3),
                        "tolerance": 0.05, "slo_ttft_s": 2.0, "slo_tpot_s": 0.1})
    cap.append({"policy": "max", "block_size": 16, "max_rate": 0.41,
                "tolerance": 0.05, "slo_ttft_s": 2.0, "slo_tpot_s": 0.1})
    cap.append({"policy": "max", "block_size": 32, "max_rate": 0.41,
                "tolerance": 0.05, "slo_ttft_s": 2.0, "slo_tpot_s": 0.1})
    return {
        "kvsim_version": "0.1.0", "command": "sweep",
        "model": MODEL, "gpu": GPU, "engine": ENGINE, "trace": TRACE,
        "rows": rows, "capacity": cap,
        "recommendations": [
            {"objective": "throughput", "block_size": 16, "policy": "paged",
             "reason": "highest requests/s with p99 TTFT and TPOT within the SLOs"},
            {"objective": "waste", "block_size": 1, "policy": "paged",
             "reason": "no partly filled blocks at block size 1"},
            {"objective": "prefix_hits", "block_size": 1, "policy": "paged",
             "reason": "finest blocks share the most prefix tokens"},
        ],
    }


def replay_min():
    """A replay with one policy and only the keys the report requires."""
    return {
        "command": "replay",
        "policies": {"paged": {
            "accounting": {"arrived": 10, "completed": 9, "rejected": 0, "unfinished": 1},
            "memory_pct": {"token_states": 40.0, "reservation": 0.0,
                           "internal_fragmentation": 2.5, "external_fragmentation": 0.0,
                           "cached_idle": 7.5, "free": 50.0},
        }},
    }


for name, doc in (("compare.json", compare()), ("sweep.json", sweep()),
                  ("replay-min.json", replay_min())):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
