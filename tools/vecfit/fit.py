"""Fits the polynomial coefficients of backend/cpu/internal/vec's float32 erf.

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


if __name__ == "__main__" and (len(sys.argv) < 2 or sys.argv[1] != "consts"):
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


# --- Fits of the avx2 gelu and erf kernels (backend/cpu/internal/vec/vec_amd64.s). Run
# `/usr/bin/python3 tools/vecfit/fit.py consts` to print their constants as
# the VCONST lines there (the erf small-branch verfP* are main_coefs' erfP).

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


def fit_exp_e(deg=4, half=0.35):
    # exp(r) = 1 + r + r^2 E(r) on |r| <= ln2/2 (a little margin): E of
    # degree deg, relative error of exp.
    r = cheb11(3000) * half
    ys = (np.exp(r) - 1 - r) / r**2
    return lawson_pts(r, ys, np.vander(r, deg + 1, increasing=True), r**2 / np.exp(r))


def fit_gelu_small(t=0.70710677, deg=4):
    # gelu(x) = x/2 + s G(s), s = x^2/2 <= t^2/2: G(s) = erf(sqrt(s))/sqrt(2s).
    smax = t * t / 2
    s = (cheb11(3000) + 1) / 2 * smax
    ys = np.array([float(mp.erf(mp.sqrt(v)) / mp.sqrt(2 * v)) for v in s])
    return lawson_pts(s, ys, np.vander(s, deg + 1, increasing=True), 1 / ys)


def fit_gelu_nt(lo=0.70710677, hi=14.5, K=1.5, deg=10):
    # N(a) = a exp(a^2/2) Q(a), Q(a) = erfc(a/sqrt2)/2, as a polynomial in
    # t = (a-K)/(a+K), so that gelu(x) = x - exp(-x^2/2) N(|x|) for x > 0
    # and -exp(-x^2/2) N(|x|) for x < 0. With K = 1.5, a - K is exact for a
    # in [0.5, 3] and t is within about an ulp where N varies fastest; a
    # variable C - D/(a+K) in [-1, 1] lost bits to cancellation (4 ulp).
    tlo, thi = (lo - K) / (lo + K), (hi - K) / (hi + K)
    t = (cheb11(3000) + 1) / 2 * (thi - tlo) + tlo
    a = K * (1 + t) / (1 - t)

    def N(v):
        v = mp.mpf(v)
        return float(v * mp.exp(v * v / 2) * mp.erfc(v / mp.sqrt(2)) / 2)
    ys = np.array([N(v) for v in a])
    return lawson_pts(t, ys, np.vander(t, deg + 1, increasing=True), 1 / ys)


def fit_erf_log2erfc(lo=0.875, hi=3.95, deg=6):
    # erf(a) = 1 - 2^L(a) on [lo, hi], L ~ log2(erfc(a)); the error of L
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


def vconst(name, v):
    return "// %s: %r\nVCONST(%s, $%s)" % (name, float(np.float32(v)), name, f32hex(v))


def main_consts():
    fits = [
        ("vexpE", 2, 1.0, fit_exp_e(), "exp(r) = 1 + r + r^2 E(r), rel err"),
        ("vgeluS", 0, 1.0, fit_gelu_small(), "gelu small G(s), rel err"),
        ("vgeluN", 0, 2.0**-64, fit_gelu_nt(), "gelu N(t) times 2^-64, rel err"),
        ("verfL", 0, 1.0, fit_erf_log2erfc(), "erf L ~ log2 erfc, abs err of erf"),
        ("vexp2P", 0, 1.0, fit_exp2f(), "2^f = 1 + f P(f), rel err"),
    ]
    for name, first, scale, (c, e), what in fits:
        print("// %s %.2g" % (what, e))
        for i in range(len(c) - 1, -1, -1):
            print(vconst("%s%d" % (name, i + first), c[i] * scale))


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "consts":
    main_consts()
