#!/usr/bin/env python3
"""Vehicles on the road and V2V contacts over time, from a SUMO FCD trace.

Usage: contacts.py FCD.xml RANGE_M OUT.csv [EVERY_S]

Streams the trace with the standard library's iterparse (written apart from
murmur's reader, so the two can be compared: murmur sim's contacts_csv
gives the same counts at the same trace times) and writes, every EVERY_S
seconds of trace time (default 10), the time, the vehicles on the road and
the pairs within RANGE_M metres of each other.
"""
import math
import sys
import xml.etree.ElementTree as ET


def main():
    fcd, radius, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    every = float(sys.argv[4]) if len(sys.argv) > 4 else 10.0
    next_t = 0.0
    with open(out, "w") as f:
        f.write("trace_time_s,vehicles,v2v_links\n")
        for _, el in ET.iterparse(fcd, events=("end",)):
            if el.tag != "timestep":
                continue
            t = float(el.get("time"))
            if t + 1e-9 >= next_t:
                pts = [(float(v.get("x")), float(v.get("y"))) for v in el.iter("vehicle")]
                cells = {}
                for i, (x, y) in enumerate(pts):
                    cells.setdefault((math.floor(x / radius), math.floor(y / radius)), []).append(i)
                pairs = 0
                for i, (x, y) in enumerate(pts):
                    cx, cy = math.floor(x / radius), math.floor(y / radius)
                    for dx in (-1, 0, 1):
                        for dy in (-1, 0, 1):
                            for j in cells.get((cx + dx, cy + dy), []):
                                if j > i and (pts[j][0] - x) * (pts[j][0] - x) + (pts[j][1] - y) * (pts[j][1] - y) <= radius * radius:
                                    pairs += 1
                f.write(f"{t:g},{len(pts)},{pairs}\n")
                next_t = t + every
            el.clear()


if __name__ == "__main__":
    main()
