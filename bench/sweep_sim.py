#!/usr/bin/env python3
"""Simulates ASHA over the results of bench=sweep runs, to tell the rule from the orders.

docs/sweeps.md (Benchmark) quotes it. Two rules, 2 slots, each trial's segments costing
  cost(segment) = SEGMENT_S + per_step(config) * steps,  per_step from grid's `cpu_s`,
with CONTINUE_S instead of SEGMENT_S for a segment that a promoted trial trains on in its own
process (Ray's rule; a forked trial goes on inside the same training run):
- ray:   Ray Tune's AsyncHyperBandScheduler, as src/sweep/asha.cc (asha.rule: stopping): a trial is decided once,
         when it reaches a rung, against the results recorded there before it.
- paper: Li et al. 2018 (ASHA; asha.rule: promotion): a trial waits at its rung; a free slot promotes the best
         not yet promoted of the top floor(n / eta) at the highest rung that has one, else
         starts a new trial.
Accuracy at each rung comes from the run directories given (sweep_bench --keep DIR: its
asha-* trials; a grid run with training.eval_every = the grace period); a value none of them
measured is interpolated between the configuration's first rung and its end, by the median
fraction of that gain the measured configurations had made by the rung.

  python3 bench/sweep_sim.py --grid DIR/grid --runs DIR[,DIR2] [--segment-s 0.2] [--continue-s S]
                             [--orders 200] [--replay DIR/asha-promotion-1,...]
"""
import argparse
import glob
import heapq
import json
import os
import random
import statistics

RUNGS, MAX, ETA, SLOTS = [100, 300, 900], 2700, 3, 2


def trial_params(sweep_dir):
    out = {}
    with open(os.path.join(sweep_dir, "sweep.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            if j["event"] == "trial":
                out[j["trial"]] = tuple(j["params"][k] for k in j["order"])
    return out


def measured_accuracy(run_dirs):
    acc = {}
    for d in run_dirs:
        for sweep in [d] + sorted(glob.glob(os.path.join(d, "*"))):
            if not os.path.isfile(os.path.join(sweep, "sweep.jsonl")):
                continue
            for i, p in trial_params(sweep).items():
                f = os.path.join(sweep, "trials", f"trial-{i:04d}", "metrics.jsonl")
                if not os.path.isfile(f):
                    continue
                with open(f) as lines:
                    for line in lines:
                        j = json.loads(line)
                        if j["step"] in RUNGS + [MAX]:
                            acc.setdefault(p, {})[j["step"]] = j["accuracy"]
    return acc


def fill_in(acc):
    """Interpolates the rung values no run measured; returns how many."""
    frac = {r: [] for r in RUNGS[1:]}
    for m in acc.values():
        if RUNGS[0] in m and MAX in m and m[MAX] - m[RUNGS[0]] > 0.01:
            for r in RUNGS[1:]:
                if r in m:
                    frac[r].append((m[r] - m[RUNGS[0]]) / (m[MAX] - m[RUNGS[0]]))
    frac = {r: statistics.median(v) for r, v in frac.items()}
    filled = 0
    for m in acc.values():
        for r in RUNGS[1:]:
            if r not in m:
                m[r] = m[RUNGS[0]] + frac[r] * (m[MAX] - m[RUNGS[0]])
                filled += 1
    return filled


def percentile(values, q):  # numpy's linear interpolation, as Asha::percentile
    v = sorted(values)
    pos = q / 100 * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] * (1 - (pos - lo)) + v[hi] * (pos - lo)


def next_stop(step):
    return next((r for r in RUNGS if r > step), MAX)


class Sim:
    def __init__(self, acc, cost, segment_s, continue_s):
        self.acc, self.cost, self.segment_s, self.continue_s = acc, cost, segment_s, continue_s
        self.per_step = {c: (cost[c] - segment_s) / MAX for c in acc}

    def _start(self, now, config, step, in_process=False):
        end = next_stop(step)
        d = (self.continue_s if in_process else self.segment_s) + self.per_step[config] * (end - step)
        self.total += d
        self.seq += 1
        heapq.heappush(self.events, (now + d, self.seq, config, end))

    def ray(self, order):
        self.total, self.seq, self.events = 0.0, 0, []
        queue, rec, best, full = list(order), {r: [] for r in RUNGS}, -1.0, 0
        for _ in range(SLOTS):
            if queue:
                self._start(0, queue.pop(0), 0)
        while self.events:
            now, _, c, step = heapq.heappop(self.events)
            v = self.acc[c][step]
            if step == MAX:
                best, full = max(best, v), full + 1
            else:
                cut = percentile(rec[step], (1 - 1 / ETA) * 100) if rec[step] else None
                rec[step].append(v)
                if cut is None or v >= cut:
                    self._start(now, c, step, in_process=True)  # goes on in its slot
                    continue
                best = max(best, v)
            if queue:
                self._start(now, queue.pop(0), 0)
        return self.total, best, full

    def paper(self, order):
        self.total, self.seq, self.events = 0.0, 0, []
        queue, rec, promoted, full = list(order), {r: {} for r in RUNGS}, {r: set() for r in RUNGS}, 0

        def job(now):
            for r in reversed(RUNGS):
                top = sorted(rec[r], key=lambda c: -rec[r][c])[: len(rec[r]) // ETA]
                for c in top:
                    if c not in promoted[r]:
                        promoted[r].add(c)
                        self._start(now, c, r)
                        return True
            if queue:
                self._start(now, queue.pop(0), 0)
                return True
            return False

        for _ in range(SLOTS):
            job(0)
        while self.events:
            now, _, c, step = heapq.heappop(self.events)
            if step == MAX:
                full += 1
            else:
                rec[step][c] = self.acc[c][step]
            while len(self.events) < SLOTS and job(now):
                pass
        last = {}
        for r in RUNGS:
            last.update(rec[r])
        for c in promoted[RUNGS[-1]]:
            last[c] = self.acc[c][MAX]
        return self.total, max(last.values()), full


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grid", required=True, help="the bench's grid sweep directory (per-trial cpu_s)")
    ap.add_argument("--runs", required=True, help="comma-separated run directories with rung results")
    ap.add_argument("--segment-s", type=float, default=0.2, help="fixed CPU seconds of a segment")
    ap.add_argument("--continue-s", type=float, default=None,
                    help="fixed CPU seconds of a segment a promoted trial trains on in its process (Ray's rule); "
                         "default: --segment-s")
    ap.add_argument("--orders", type=int, default=200)
    ap.add_argument("--replay", default="", help="comma-separated ASHA sweep directories whose order to replay")
    a = ap.parse_args()

    acc = measured_accuracy(a.runs.split(","))
    gp = trial_params(a.grid)
    cost = {}
    with open(os.path.join(a.grid, "sweep.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            if j["event"] == "end":
                cost[gp[j["trial"]]] = j["cpu_s"]
    acc = {c: m for c, m in acc.items() if c in cost and RUNGS[0] in m and MAX in m}
    filled = fill_in(acc)
    print(f"configurations {len(acc)}, rung values interpolated {filled} of {len(acc) * (len(RUNGS) - 1)}")
    grid_cpu = sum(cost[c] for c in acc)
    grid_best = max(m[MAX] for m in acc.values())
    sim = Sim(acc, cost, a.segment_s, a.segment_s if a.continue_s is None else a.continue_s)
    configs = sorted(acc)
    for name, rule in (("ray", sim.ray), ("paper", sim.paper)):
        rows = []
        for seed in range(a.orders):
            order = configs[:]
            random.Random(seed).shuffle(order)
            total, best, full = rule(order)
            rows.append((total / grid_cpu, grid_best - best, full))
        ratios = sorted(r for r, _, _ in rows)
        n = len(rows)
        print(f"{name}: ratio median {statistics.median(ratios):.3f} (p10 {ratios[n // 10]:.3f}, "
              f"p90 {ratios[9 * n // 10]:.3f}); trials to the end, median {statistics.median(f for *_, f in rows)}; "
              f"best within 0.005 in {sum(d <= 0.005 for _, d, _ in rows)}/{n}; "
              f"target met in {sum(r <= 1 / 3 and d <= 0.005 for r, d, _ in rows)}/{n}")
    for d in filter(None, a.replay.split(",")):
        p = trial_params(d)
        order = [p[i] for i in sorted(p)]
        for name, rule in (("ray", sim.ray), ("paper", sim.paper)):
            total, best, full = rule(order)
            print(f"{d} order, {name}: ratio {total / grid_cpu:.3f}, best {best:.4f}, trials to the end {full}")


if __name__ == "__main__":
    main()
