"""Write one episode of a scenario in the text format read by episode_main.c.

usage: python dump_episode.py SCENARIO SEED OUT [--cc ideal|newreno] [--loss P] [--duration S]
"""

from __future__ import annotations

import argparse

from mpsched.envs import scenarios
from mpsched.envs.episode import build_episode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("scenario")
    ap.add_argument("seed", type=int)
    ap.add_argument("out")
    ap.add_argument("--cc", choices=("ideal", "newreno"), help="override every path's congestion control")
    ap.add_argument("--loss", type=float, help="override every path's loss rate")
    ap.add_argument("--duration", type=float, help="override the duration [s]")
    args = ap.parse_args()
    d = scenarios.resolve(args.scenario).to_dict()
    for p in d["paths"]:
        if args.cc:
            p["cc"] = args.cc
        if args.loss is not None:
            p["loss"] = args.loss
    if args.duration:
        d["duration_s"] = args.duration
    ep = build_episode(scenarios.resolve(d), args.seed)
    c = ep.core_inputs()
    cc_code = {"ideal": 0, "newreno": 1}
    b = c["blocks"]
    with open(args.out, "w") as f:
        f.write(f"{c['mss_bytes']} {c['header_bytes']} {c['end_ns']} {c['seed']} {len(c['paths'])} {len(b['arrival_ns'])}\n")
        for p in c["paths"]:
            f.write(" ".join(str(x) for x in (
                p["fwd_delay_ns"], p["rev_delay_ns"], p["queue_bytes"], p["loss_threshold"], cc_code[p["cc"]],
                p["initial_cwnd_bytes"], p["min_rto_ns"], p["max_rto_ns"], p["bw_cycle_ns"], p["ring_capacity"],
                len(p["bw_start_ns"]),
            )) + "\n")
            f.write(" ".join(str(int(x)) for x in p["bw_start_ns"]) + "\n")
            f.write(" ".join(str(int(x)) for x in p["bw_rate_bps"]) + "\n")
        for row in zip(b["arrival_ns"], b["size_bytes"], b["deadline_ns"], b["priority"], b["weight"]):
            f.write(f"{int(row[0])} {int(row[1])} {int(row[2])} {int(row[3])} {float(row[4])!r}\n")


if __name__ == "__main__":
    main()
