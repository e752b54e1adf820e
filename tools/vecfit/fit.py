"""Fits the polynomial coefficients of backend/cpu/vec.go's float32 erf.

Run with Debian's /usr/bin/python3 (numpy, mpmath). Lawson's iteratively
reweighted least squares approximates the minimax fit of the relative
error; coefficients are then rounded to float32 and the float32 Horner
evaluation (one FMA per step) is checked against mpmath on a dense grid.
It prints Go constant lists; nothing here ships in the product.
"""
import sys
import numpy as np
import mpmath as mp

mp.mp.dps = 30


def f32(v):
    return float(np.float32(v))


def horner32(coefs, t):
    """float32 Horner with one rounding per FMA step (coefs high to low)."""
    t = np.float32(t)
    acc = np.float32(coefs[0])
    for c in coefs[1:]:
        acc = np.float32(np.float64(acc) * np.float64(t) + np.float64(np.float32(c)))
    return acc


def lawson(xs, basis, target, weight, iters=60):
    """Minimax-ish fit of sum c_k basis_k(x) ~ target(x), error weighted."""
    A = np.array([[b(x) for b in basis] for x in xs])
    y = np.array([target(x) for x in xs])
    w = np.array([weight(x) for x in xs])
    lw = np.ones(len(xs)) / len(xs)
    for _ in range(iters):
        sw = np.sqrt(lw) * w
        c, *_ = np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)
        err = np.abs((A @ c - y) * w)
        lw = lw * err
        lw /= lw.sum()
    return c, err.max()


def cheb(a, b, n):
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / n)


def fit_small(t, deg):
    # erf(x) = x * P(x^2) on [0, t]; relative error.
    xs = cheb(1e-4, t * t, 2000)
    tgt = lambda s: float(mp.erf(mp.sqrt(s)) / mp.sqrt(s))
    basis = [lambda s, k=k: s ** k for k in range(deg + 1)]
    c, e = lawson(xs, basis, tgt, lambda s: 1 / tgt(s))
    return c[::-1], e


def fit_q(t, hi, deg):
    # Q(x) = erfc(x) * exp(x^2) on [t, hi] as a polynomial in u = 1/x.
    xs = cheb(1 / hi, 1 / t, 2000)
    tgt = lambda u: float(mp.erfc(1 / mp.mpf(u)) * mp.exp(1 / mp.mpf(u) ** 2))
    basis = [lambda u, k=k: u ** k for k in range(deg + 1)]
    c, e = lawson(xs, basis, tgt, lambda u: 1 / tgt(u))
    return c[::-1], e


if __name__ == "__main__" and (len(sys.argv) < 2 or sys.argv[1] not in ("v2", "v3", "v4")):
    t = float(sys.argv[1]) if len(sys.argv) > 1 else 0.875
    for deg in range(4, 8):
        c, e = fit_small(t, deg)
        print("small deg", deg, "rel err %.3g" % e)
    for deg in range(6, 14):
        c, e = fit_q(t, 10.0, deg)
        print("Q deg", deg, "rel err %.3g" % e)


def hexes(name, coefs):
    out = []
    for i, c in enumerate(coefs):
        b = np.float32(c).view(np.uint32)
        out.append("%s%d 0x%08x // %r" % (name, i, int(b), float(np.float32(c))))
    return "\n".join(out)


def main_coefs(t=0.875, hi=10.5, dsmall=5, dq=11):
    c, e = fit_small(t, dsmall)
    print("// erf small: x*P(x^2), |x| < %g, deg %d, rel err %.3g" % (t, dsmall, e))
    print(hexes("erfP", c))
    c, e = fit_q(t, hi, dq)
    print("// erfc(x) = exp(-x^2) Q(1/x), %g <= x <= %g, deg %d, rel err %.3g" % (t, hi, dq, e))
    print(hexes("erfQ", c))


def fit_r(t, hi, deg, scale=1.0):
    # R(s) = erfc(x) exp(x^2) x with s = 1/x^2, x in [t, hi], times scale:
    # erfc(x) = exp(-x^2) R(1/x^2) / x.
    xs = cheb(1 / hi**2, 1 / t**2, 2000)
    def tgt(s):
        x = 1 / mp.sqrt(mp.mpf(s))
        return float(mp.erfc(x) * mp.exp(x * x) * x * scale)
    basis = [lambda s, k=k: s ** k for k in range(deg + 1)]
    c, e = lawson(xs, basis, tgt, lambda s: 1 / tgt(s))
    return c[::-1], e


def fit_ru(t, hi, deg, scale=1.0):
    # R(u) = erfc(x) exp(x^2) x with u = 1/x, x in [t, hi], times scale:
    # erfc(x) = exp(-x^2) R(1/x) / x.
    xs = cheb(1 / hi, 1 / t, 2000)
    def tgt(u):
        x = 1 / mp.mpf(u)
        return float(mp.erfc(x) * mp.exp(x * x) * x * scale)
    basis = [lambda u, k=k: u ** k for k in range(deg + 1)]
    c, e = lawson(xs, basis, tgt, lambda u: 1 / tgt(u))
    return c[::-1], e


def fit_rw(t, hi, deg, scale=1.0, form="R"):
    # Like fit_ru/fit_q but in w = u*A + B in [-1, 1] (u = 1/x), which keeps
    # the coefficients small so float32 Horner does not cancel. Returns the
    # coefficients (high to low), A, B and the fit's relative error.
    ulo, uhi = 1 / hi, 1 / t
    A = 2 / (uhi - ulo)
    B = -(uhi + ulo) / (uhi - ulo)
    A, B = f32(A), f32(B)
    xs = cheb(-1, 1, 2000)
    def tgt(w):
        u = (mp.mpf(w) - B) / A
        x = 1 / u
        v = mp.erfc(x) * mp.exp(x * x) * scale
        return float(v * x if form == "R" else v)
    basis = [lambda w, k=k: w ** k for k in range(deg + 1)]
    c, e = lawson(xs, basis, tgt, lambda w: 1 / tgt(w))
    return c[::-1], A, B, e


def fit_gmid(lo, hi, deg):
    # G(t) = erfc(t/sqrt2)/2 for t = |x| in [lo, hi] (gelu(x) = x G(|x|) for
    # x < 0) as a polynomial in w = A*t + B in [-1, 1].
    A = f32(2 / (hi - lo))
    B = f32(-(hi + lo) / (hi - lo))
    xs = cheb(-1, 1, 2000)
    tgt = lambda w: float(mp.erfc(((mp.mpf(w) - B) / A) / mp.sqrt(2)) / 2)
    basis = [lambda w, k=k: w ** k for k in range(deg + 1)]
    c, e = lawson(xs, basis, tgt, lambda w: 1 / tgt(w))
    return c[::-1], A, B, e


# --- Fits of the interleaved kernels (gelu, erf, the shared exp). Run
# `python3 tools/vecfit/fit.py v2` to print them as VCONST lines.

def f32hex(v):
    return "0x%08x" % int(np.float32(v).view(np.uint32))


def cheb11(n):
    return np.cos(np.pi * (np.arange(n) + 0.5) / n)


def lawson_pts(xs, ys, A, w, iters=120):
    """Lawson's weighted minimax on given points: coefficients (low to high)
    and the max weighted error."""
    lw = np.ones(len(xs)) / len(xs)
    for _ in range(iters):
        sw = np.sqrt(lw) * w
        c, *_ = np.linalg.lstsq(A * sw[:, None], ys * sw, rcond=None)
        err = np.abs((A @ c - ys) * w)
        lw = lw * err
        lw /= lw.sum()
    return c, err.max()


def fit_exp2(deg=4, half=0.35):
    # exp(r) = 1 + r + r^2 E(r) on |r| <= ln2/2 (a little margin): E of
    # degree deg, relative error of exp.
    r = cheb11(3000) * half
    ys = (np.exp(r) - 1 - r) / r**2
    c, e = lawson_pts(r, ys, np.vander(r, deg + 1, increasing=True), r**2 / np.exp(r))
    return c, e


def fit_gelu_small(t=0.70710677, deg=4):
    # gelu(x) = x/2 + s G(s), s = x^2/2 <= t^2/2: G(s) = erf(sqrt(s))/sqrt(2s).
    smax = t * t / 2
    s = (cheb11(3000) + 1) / 2 * smax
    ys = np.array([float(mp.erf(mp.sqrt(v)) / mp.sqrt(2 * v)) for v in s])
    return lawson_pts(s, ys, np.vander(s, deg + 1, increasing=True), 1 / ys)


def fit_gelu_n(lo=0.70710677, hi=14.5, K=3.0, deg=8):
    # N(a) = a exp(a^2/2) Q(a), Q(a) = erfc(a/sqrt2)/2, as a polynomial in
    # w = C - D/(a+K) (w in [-1, 1] over [lo, hi]; C, D rounded to float32
    # first), so that gelu(x) = x - exp(-x^2/2) N(|x|) for x > 0 and
    # -exp(-x^2/2) N(|x|) for x < 0.
    tlo, thi = (lo - K) / (lo + K), (hi - K) / (hi + K)
    al = 2 / (thi - tlo)
    be = -(thi + tlo) / (thi - tlo)
    C, D = f32(al + be), f32(2 * K * al)
    wlo, whi = C - D / (lo + K), C - D / (hi + K)
    w = (cheb11(3000) + 1) / 2 * (whi - wlo) + wlo
    a = D / (C - w) - K

    def N(v):
        v = mp.mpf(v)
        return float(v * mp.exp(v * v / 2) * mp.erfc(v / mp.sqrt(2)) / 2)
    ys = np.array([N(v) for v in a])
    c, e = lawson_pts(w, ys, np.vander(w, deg + 1, increasing=True), 1 / ys)
    return c, C, D, e


def fit_erf_logerfc(lo=0.875, hi=3.95, deg=6):
    # erf(a) = 1 - exp(p(a)) on [lo, hi], p ~ log(erfc(a)); the error of p
    # weighted by erfc(a) (what it costs erf, absolutely).
    a = (cheb11(3000) + 1) / 2 * (hi - lo) + lo
    ys = np.array([float(mp.log(mp.erfc(v))) for v in a])
    w = np.array([float(mp.erfc(v)) for v in a])
    return lawson_pts(a, ys, np.vander(a, deg + 1, increasing=True), w)


def vconst(name, v, comment=""):
    return "// %s: %s%s\nVCONST(%s, $%s)" % (name, repr(float(np.float32(v))), comment, name, f32hex(v))


def main_v2():
    c, e = fit_exp2()
    print("// exp2: exp(r) = 1 + r + r^2 E(r), |r| <= 0.35, rel err %.2g" % e)
    for i in range(len(c) - 1, -1, -1):
        print(vconst("vexpE%d" % (i + 2), c[i]))
    c, e = fit_gelu_small()
    print("// gelu small: x/2 + s G(s), s = x^2/2, rel err %.2g" % e)
    for i in range(len(c) - 1, -1, -1):
        print(vconst("vgeluS%d" % i, c[i]))
    c, C, D, e = fit_gelu_n()
    print("// gelu N(w), w = C - D/(|x|+3), rel err %.2g; coefficients times 2^-64" % e)
    print(vconst("vgeluNC", C))
    print(vconst("vgeluND", D))
    for i in range(len(c) - 1, -1, -1):
        print(vconst("vgeluN%d" % i, c[i] * 2.0**-64))
    c, e = fit_erf_logerfc()
    print("// erf large: 1 - exp(p(a)), abs err of erf %.2g" % e)
    for i in range(len(c) - 1, -1, -1):
        print(vconst("verfL%d" % i, c[i]))


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "v2":
    main_v2()


def fit_gelu_nt(lo=0.70710677, hi=14.5, K=3.0, deg=8):
    # N(a) as a polynomial in t = (a-K)/(a+K) (t in about [-0.62, 0.66]):
    # t is computed to about an ulp, where C - D/(a+K) lost bits to
    # cancellation.
    tlo, thi = (lo - K) / (lo + K), (hi - K) / (hi + K)
    t = (cheb11(3000) + 1) / 2 * (thi - tlo) + tlo
    a = K * (1 + t) / (1 - t)

    def N(v):
        v = mp.mpf(v)
        return float(v * mp.exp(v * v / 2) * mp.erfc(v / mp.sqrt(2)) / 2)
    ys = np.array([N(v) for v in a])
    return lawson_pts(t, ys, np.vander(t, deg + 1, increasing=True), 1 / ys)


def main_v3(K=3.0, deg=8):
    c, e = fit_gelu_nt(K=K, deg=deg)
    print("// gelu N(t), t = (|x|-%g)/(|x|+%g), rel err %.2g; coefficients times 2^-64" % (K, K, e))
    for i in range(len(c) - 1, -1, -1):
        print(vconst("vgeluN%d" % i, c[i] * 2.0**-64))


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "v3":
    main_v3(float(sys.argv[2]), int(sys.argv[3]))


def fit_erf_log2erfc(lo=0.875, hi=3.95, deg=6):
    # erf(a) = 1 - 2^L2(a) on [lo, hi], L2 ~ log2(erfc(a)); the error of L2
    # weighted by erfc(a) ln2 (what it costs erf, absolutely).
    a = (cheb11(3000) + 1) / 2 * (hi - lo) + lo
    ys = np.array([float(mp.log(mp.erfc(v), 2)) for v in a])
    w = np.array([float(mp.erfc(v) * mp.log(2)) for v in a])
    return lawson_pts(a, ys, np.vander(a, deg + 1, increasing=True), w)


def fit_exp2f(deg=5, half=0.5):
    # 2^f = 1 + f P(f) on |f| <= 1/2, P of degree deg; relative error of 2^f.
    f = cheb11(3000) * half
    ys = (2.0**f - 1) / f
    return lawson_pts(f, ys, np.vander(f, deg + 1, increasing=True), f / 2.0**f)


def main_v4():
    c, e = fit_erf_log2erfc()
    print("// erf large: 1 - 2^L2(a), abs err of erf %.2g" % e)
    for i in range(len(c) - 1, -1, -1):
        print(vconst("verfL%d" % i, c[i]))
    c, e = fit_exp2f()
    print("// 2^f = 1 + f P(f), |f| <= 1/2, rel err %.2g" % e)
    for i in range(len(c) - 1, -1, -1):
        print(vconst("vexp2P%d" % i, c[i]))


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "v4":
    main_v4()
