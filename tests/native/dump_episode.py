"""Write one episode of a scenario in the text format read by episode_main.c.

usage: python dump_episode.py SCENARIO SEED OUT [--cc NAME] [--loss P] [--duration S] [--drop-expired]
                              [--stream-sequence] [--cubic-arithmetic NAME]
"""

from __future__ import annotations

import argparse

from mpsched.envs import scenarios
from mpsched.envs.episode import build_episode
from mpsched.envs.scenario import set_path_cc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("scenario")
    ap.add_argument("seed", type=int)
    ap.add_argument("out")
    ap.add_argument("--cc", choices=("ideal", "newreno", "cubic", "lia", "olia", "balia", "wvegas", "ccp"),
                    help="override every path's congestion control")
    ap.add_argument("--loss", type=float, help="override every path's loss rate")
    ap.add_argument("--duration", type=float, help="override the duration [s]")
    ap.add_argument("--drop-expired", action="store_true", help="cancel blocks once their deadline has passed")
    ap.add_argument("--stream-sequence", action="store_true",
                    help="in-order receiver with sequence positions in the application's byte order")
    ap.add_argument("--cubic-arithmetic", choices=("rfc9438", "segments"), help="override the transport's")
    args = ap.parse_args()
    d = scenarios.resolve(args.scenario).to_dict()
    if args.cubic_arithmetic:
        d["transport"] = {**d["transport"], "cubic_arithmetic": args.cubic_arithmetic}
    for p in d["paths"]:
        if args.cc:
            set_path_cc(p, args.cc)
        if args.loss is not None:
            p["loss"] = args.loss
    if args.duration:
        d["duration_s"] = args.duration
    if args.stream_sequence:
        d["receiver"] = {**d["receiver"], "sequence": "stream"}
    ep = build_episode(scenarios.resolve(d), args.seed)
    c = ep.core_inputs(drop_expired=args.drop_expired)
    codes = {"ideal": 0, "newreno": 1, "cubic": 2, "lia": 3, "olia": 4, "balia": 5, "wvegas": 6, "ccp": 7,
             "iid": 0, "gilbert_elliott": 1, "block": 0, "in_order": 1, "immediate": 0, "prr": 1,
             "rfc9438": 0, "segments": 1}
    b = c["blocks"]
    with open(args.out, "w") as f:
        f.write(" ".join(str(x) for x in (
            c["mss_bytes"], c["header_bytes"], c["end_ns"], c["seed"], codes[c["receiver"]], c["rbuf_bytes"],
            int(c["sequence"] == "stream"), int(c["drop_expired"]), len(c["links"]), len(c["paths"]), len(c["cross"]),
            len(b["arrival_ns"]),
        )) + "\n")
        for link in c["links"]:
            f.write(f"{link['queue_bytes']} {link['bw_cycle_ns']} {len(link['bw_start_ns'])}\n")
            f.write(" ".join(str(int(x)) for x in link["bw_start_ns"]) + "\n")
            f.write(" ".join(str(int(x)) for x in link["bw_rate_bps"]) + "\n")
        for p in c["paths"] + c["cross"]:
            f.write(" ".join(str(x) for x in (
                p["link"], p["fwd_delay_ns"], p["rev_delay_ns"], codes[p["loss_model"]], p["loss_threshold"],
                p["ge_p_threshold"], p["ge_r_threshold"], p["ge_bad_loss_threshold"], codes[p["cc"]],
                p["initial_cwnd_bytes"], p["min_rto_ns"], p["max_rto_ns"], p["ring_capacity"],
                p.get("start_ns", 0), p.get("stop_ns", 1 << 62), codes[p.get("fast_recovery", "immediate")],
                p.get("fwd_jitter_ns", 0), p.get("rev_jitter_ns", 0), len(p.get("delay_start_ns", ())),
                len(p.get("down_start_ns", ())), int(bool(p.get("backup", False))), p.get("ack_loss_threshold", 0),
                p.get("rev_rate_bps", 0), p.get("ack_bytes", 0), p.get("rev_queue_bytes", 1 << 62),
                p.get("ccp_gain_milli", 2000), p.get("ccp_storage_bytes", 0),
                codes[p.get("cubic_arithmetic", "rfc9438")],
            )) + "\n")
            for key in ("delay_start_ns", "fwd_delay_step_ns", "rev_delay_step_ns", "down_start_ns", "down_end_ns"):
                f.write(" ".join(str(int(x)) for x in p.get(key, ())) + "\n")
        for row in zip(b["arrival_ns"], b["size_bytes"], b["deadline_ns"], b["priority"], b["weight"]):
            f.write(f"{int(row[0])} {int(row[1])} {int(row[2])} {int(row[3])} {float(row[4])!r}\n")


if __name__ == "__main__":
    main()
