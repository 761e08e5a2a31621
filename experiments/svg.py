"""svg.py: line plots as small standalone SVG files (no plotting library on
the machine), for the experiments' curves."""
import math

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def _ticks(lo, hi, n=5):
    if hi <= lo:
        hi = lo + 1
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    t = math.ceil(lo / step) * step
    out = []
    while t <= hi + 1e-12 * abs(hi):
        out.append(t)
        t += step
    return out


def _fmt(v):
    return "%g" % float("%.3g" % v)


def plot(path, series, title, xlabel, ylabel, logy=False, width=720, height=420):
    """series: [(label, [x...], [y...])]; points with y <= 0 are left out on a
    log axis, non-finite ones always."""
    pts = []
    for label, xs, ys in series:
        keep = [(x, y) for x, y in zip(xs, ys) if math.isfinite(y) and (y > 0 or not logy)]
        pts.append((label, keep))
    allx = [x for _, p in pts for x, _ in p] or [0, 1]
    ally = [(math.log10(y) if logy else y) for _, p in pts for _, y in p] or [0, 1]
    x0, x1 = min(allx), max(allx)
    y0, y1 = min(ally), max(ally)
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y0, y1 = y0 - 0.5, y1 + 0.5
    pad = 0.04 * (y1 - y0)
    y0, y1 = y0 - pad, y1 + pad
    L, R, Tp, B = 70, 170, 40, 50
    W, H = width - L - R, height - Tp - B

    def sx(x):
        return L + (x - x0) / (x1 - x0) * W

    def sy(y):
        return Tp + H - (y - y0) / (y1 - y0) * H
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
         'font-size="12">' % (width, height),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="22" font-size="14">%s</text>' % (L, title),
         '<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>' % (L, Tp, W, H)]
    for t in _ticks(x0, x1):
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (sx(t), Tp, sx(t), Tp + H))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (sx(t), Tp + H + 16, _fmt(t)))
    if logy:
        yt = list(range(math.ceil(y0), math.floor(y1) + 1)) or [round(y0)]
    else:
        yt = _ticks(y0, y1)
    for t in yt:
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, sy(t), L + W, sy(t)))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (
            L - 6, sy(t) + 4, ("1e%d" % t) if logy else _fmt(t)))
    o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (L + W / 2, height - 10, xlabel))
    o.append('<text x="16" y="%.1f" transform="rotate(-90 16 %.1f)" text-anchor="middle">%s</text>' % (
        Tp + H / 2, Tp + H / 2, ylabel))
    for k, (label, p) in enumerate(pts):
        col = COLOURS[k % len(COLOURS)]
        if p:
            d = " ".join("%.1f,%.1f" % (sx(x), sy(math.log10(y) if logy else y)) for x, y in p)
            o.append('<polyline fill="none" stroke="%s" stroke-width="1.3" points="%s"/>' % (col, d))
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>' % (
            L + W + 10, Tp + 10 + 18 * k, L + W + 30, Tp + 10 + 18 * k, col))
        o.append('<text x="%d" y="%d">%s</text>' % (L + W + 36, Tp + 14 + 18 * k, label))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
