#!/usr/bin/python3
"""Plots bench/scaling.sh's --tsv files: images/s against workers, one curve per link,
batch and strategy (and torch DDP's), one SVG per model. Standard library only.

    bench/scaling_plot.py OUT_PREFIX FILE.tsv [FILE.tsv ...]   # writes OUT_PREFIX_<model>.svg
    bench/scaling_plot.py --markdown FILE.tsv [...]             # the table, for docs/scaling.md

Figures are shown in one-core machines' time: measured images/s over the host's share of a
core (an emulated host at 0.25 core on 250 Mbit/s runs 4x slower than the one-core,
1 Gbit/s machine it stands for).
"""
import csv
import sys
from collections import defaultdict

W, H, L, R, T, B = 760, 460, 70, 250, 30, 50
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf", "#393b79", "#637939"]


def load(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            rows += [r for r in csv.DictReader(f, delimiter="\t")]
    return rows


def curves_of(rows, model):
    curves = defaultdict(dict)
    for r in rows:
        if r["model"] != model:
            continue
        w, cpus = int(r["workers"]), float(r["cpus"])
        tag = f'{r["link_gbps"]} Gbit/s, batch {r["batch"]}'
        ours = float(r["ours"] or 0) / cpus
        if ours > 0:
            curves[f'{r["strategy"]}, {tag}'][w] = ours
        peer = r["peer"]
        if peer not in ("", "NA", "0"):
            curves[f"torch DDP, {tag}"][w] = float(peer) / cpus
    return curves


def svg(model, curves):
    xs = sorted({w for c in curves.values() for w in c})
    ymax = max(v for c in curves.values() for v in c.values()) * 1.1
    px = lambda w: L + (W - L - R) * (xs.index(w) / max(1, len(xs) - 1))
    py = lambda v: H - B - (H - T - B) * v / ymax
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="18" font-size="13">{model.upper()}: images/s (one-core machines) against workers</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>']
    for w in xs:
        out.append(f'<text x="{px(w):.0f}" y="{H - B + 16}" text-anchor="middle">{w}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 12}" text-anchor="middle">workers</text>')
    for i in range(6):
        v = ymax * i / 5
        out.append(f'<text x="{L - 6}" y="{py(v) + 4:.0f}" text-anchor="end">{v:.0f}</text>')
        out.append(f'<line x1="{L}" y1="{py(v):.0f}" x2="{W - R}" y2="{py(v):.0f}" stroke="#eee"/>')
    for i, (name, pts) in enumerate(sorted(curves.items())):
        color = COLORS[i % len(COLORS)]
        dash = ' stroke-dasharray="5,3"' if name.startswith("torch") else ""
        path = " ".join(f"{px(w):.1f},{py(v):.1f}" for w, v in sorted(pts.items()))
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        for w, v in pts.items():
            out.append(f'<circle cx="{px(w):.1f}" cy="{py(v):.1f}" r="2.5" fill="{color}"/>')
        y = T + 14 * i
        out.append(f'<line x1="{W - R + 10}" y1="{y}" x2="{W - R + 30}" y2="{y}" stroke="{color}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{W - R + 34}" y="{y + 4}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def markdown(rows):
    print("| model | link | batch | strategy | workers | ps | core/host | ours | efficiency | bound | of bound "
          "| DDP | ours/DDP | target ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    order = {"allreduce": 0, "allreduce_bf16": 1, "ps1_async": 2, "ps1_sync": 3, "ps2_async": 4, "ps2_sync": 5}
    key = lambda r: (r["model"], float(r["link_gbps"]), int(r["batch"]), order.get(r["strategy"], 9), int(r["workers"]))
    for r in sorted(rows, key=key):
        ours, bound, single = float(r["ours"] or 0), float(r["bound"]), float(r["single"])
        w = int(r["workers"])
        peer = float(r["peer"]) if r["peer"] not in ("", "NA") else 0
        ratio = f"{ours / peer:.2f}" if peer > 0 else "NA"
        target = f"{min(1.3, 0.85 * bound / peer):.2f}" if peer > 0 and w >= 2 else "-"
        print(f'| {r["model"]} | {r["link_gbps"]} | {r["batch"]} | {r["strategy"]} | {w} | {r["ps"]} | {r["cpus"]} '
              f"| {ours:.0f} | {ours / (w * single):.2f} | {bound:.0f} | {ours / bound:.2f} | {peer:.0f} | {ratio} "
              f"| {target} |")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--markdown":
        markdown(load(sys.argv[2:]))
        return
    if len(sys.argv) < 3:
        sys.exit("usage: scaling_plot.py OUT_PREFIX FILE.tsv [FILE.tsv ...]")
    rows = load(sys.argv[2:])
    for model in sorted({r["model"] for r in rows}):
        curves = curves_of(rows, model)
        if curves:
            path = f"{sys.argv[1]}_{model}.svg"
            with open(path, "w") as f:
                f.write(svg(model, curves))
            print(f"scaling_plot: wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
