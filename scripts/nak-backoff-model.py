#!/usr/bin/env python3
"""Monte Carlo of the receivers' NAK back-off timer alone (docs/core.md, "NAK timers").

Each lost sequence number is missed by n receivers, n ~ Binomial(N, p) (p = 1: a loss the
whole group shares). Each draws its back-off from the truncated exponential over the span
(pdf proportional to e^(lambda x) on [0, 1], lambda = ln(group size) + 1, RFC 5740 5.3) and
NAKs unless the NCF caused by the first NAK reaches it first, i.e. unless its draw is more
than DELTA (the suppression delay as a fraction of the span) after the first draw.

Prints, per group size, NAKs per lost sequence number and the share NAKed more than once,
with lambda from the group size and with lambda from the receivers that actually lose it
(N p). Usage: nak-backoff-model.py [--loss P] [--delta D ...] [--trials T] N ...
"""

import argparse
import math
import random


def draw(rng, lam):
    u = rng.random()
    return math.log1p(u * math.expm1(lam)) / lam


def losers(rng, n, p):
    if p >= 1.0:
        return n
    if n <= 2000:
        return sum(1 for _ in range(n) if rng.random() < p)
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    return max(0, round(rng.gauss(mean, sd)))


def run(rng, n, p, size, delta, trials):
    lam = math.log(max(size, 1.0)) + 1.0
    naks = more = lost = 0
    for _ in range(trials):
        k = losers(rng, n, p)
        if k == 0:
            continue
        xs = [draw(rng, lam) for _ in range(k)]
        first = min(xs)
        sent = sum(1 for x in xs if x < first + delta)
        naks += sent
        more += sent > 1
        lost += 1
    return naks / lost, 100.0 * more / lost


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("receivers", type=int, nargs="+", help="group sizes N")
    ap.add_argument("--loss", type=float, default=0.01, help="each receiver's loss p (1 = shared)")
    ap.add_argument("--delta", type=float, nargs="+", default=[0.2, 0.25],
                    help="suppression delay as a fraction of the back-off span")
    ap.add_argument("--trials", type=int, default=3000, help="lost sequence numbers per case")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    print("N  delta  NAKs/lost (lambda from N)  >1 NAK  |  NAKs/lost (lambda from N p)  >1 NAK")
    for n in a.receivers:
        for d in a.delta:
            full = run(rng, n, a.loss, n, d, a.trials)
            few = run(rng, n, a.loss, max(2.0, n * a.loss), d, a.trials)
            print(f"{n}  {d}  {full[0]:.2f}  {full[1]:.0f}%  |  {few[0]:.2f}  {few[1]:.0f}%")


if __name__ == "__main__":
    main()
