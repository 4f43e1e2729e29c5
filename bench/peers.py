"""`make bench-peers`: gpujit's cpu backend against Numba, Taichi and Warp on the CPU.

    build/peers-venv/bin/python bench/peers.py [runs]     (make bench-peers sets it up)

The same kernels as `make bench` (bench/kernels.lua): saxpy, mandelbrot, 3x3
convolution, n-body, naive matmul, at the same sizes, in float32, written once
per peer as its users write them (sizes passed as plain ints).  Every peer runs
in a process of its own (a worker: this file with --worker NAME, or
bench/peers_gpujit.lua), kept alive for the whole run; the driver asks the
workers in turn, so the rounds are interleaved: in round r every peer times
kernel k once (the order rotating between rounds) before anyone times k + 1.
Figures are medians over the rounds.  Before anything is timed, each worker runs
every kernel once and reports a checksum of the output, which must agree with
gpujit's.

Also: the time to the first kernel (a fresh process with an empty cache
directory: cold; a second fresh process with that directory: warm), and the
launch overhead (a kernel of one work item writing one element).

Threads: 2 for everyone (GPUJIT_THREADS, NUMBA_NUM_THREADS,
ti.init(cpu_max_num_threads)); Warp runs CPU kernels on one thread (its CPU
launches are serial), which the "threads used" column (CPU time / wall time
of mandelbrot) shows.

A peer that does not import or run is reported in the table, not left out.
"""
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

T_START = time.perf_counter()
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
THREADS = int(os.environ.get("PEERS_THREADS", "2"))
KERNELS = ["saxpy", "mandelbrot", "conv3x3", "nbody", "matmul"]
WHAT = {"saxpy": "16M floats", "mandelbrot": "1024², 256 it.", "conv3x3": "2048² floats",
        "nbody": "4096 bodies", "matmul": "512² floats"}
# Checksums must agree with gpujit's within these (relative): exact
# arithmetic for saxpy, conv3x3, matmul; float32 rounding for n-body; a few
# pixels on the set's edge for mandelbrot.
TOL = {"saxpy": 1e-9, "conv3x3": 1e-9, "matmul": 1e-9, "nbody": 1e-4, "mandelbrot": 1e-3}
REPS = {"saxpy": 1, "mandelbrot": 1, "conv3x3": 2, "nbody": 1, "matmul": 1, "launch": 2000}
# gpujit-i32: gpujit with sizes passed as int32_t cdata (as make bench
# does) instead of plain numbers; the ratios are against plain gpujit.
PEERS = ["gpujit", "gpujit-i32", "numba", "taichi", "warp"]


# --------------------------------------------------------------------------
# Workers: one peer each.  stdout carries the protocol (one JSON object per
# line); what the libraries print goes to stderr.

def _proto_out():
    fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(fd, "w", buffering=1)


def inputs(np):
    i = np.arange
    d = {}
    n = 2 ** 24
    d["x"] = (i(n) % 1000).astype(np.float32)
    d["y"] = (i(n) % 7).astype(np.float32)
    W = 2048
    d["cin"] = ((i(W * W) * 37) % 101).astype(np.float32)
    d["w"] = ((i(9) - 4) * 0.125).astype(np.float32)
    d["cout"] = np.zeros(W * W, np.float32)
    nb = 4096
    for name, s in (("px", 37), ("py", 91), ("pz", 53)):
        d[name] = (((i(nb) * s) % 1009) / 1009 - 0.5).astype(np.float32)
    d["m"] = (1 + i(nb) % 3).astype(np.float32)
    for name in ("ax", "ay", "az"):
        d[name] = np.zeros(nb, np.float32)
    N = 512
    d["A"] = ((i(N * N) % 17) - 8).astype(np.float32)
    d["B"] = ((i(N * N) % 13) - 6).astype(np.float32)
    d["C"] = np.zeros(N * N, np.float32)
    d["mout"] = np.zeros(1024 * 1024, np.int32)
    d["one"] = np.zeros(1, np.float32)
    return d


def numba_peer(first):
    import numpy as np
    from numba import njit, prange
    f32 = np.float32

    @njit(parallel=True, cache=True)
    def saxpy(y, x, a, n):
        for i in prange(n):
            y[i] = a * x[i] + y[i]

    if first:
        return lambda: _first_saxpy(np, lambda y, x, n: saxpy(y, x, f32(2.0), n))

    @njit(parallel=True, cache=True)
    def mandel(out, W, H, maxit):
        for py in prange(H):
            for px in range(W):
                cr = f32(-2.0) + f32(3.0) * f32(px) / f32(W)
                ci = f32(-1.5) + f32(3.0) * f32(py) / f32(H)
                zr, zi, it = f32(0.0), f32(0.0), 0
                while it < maxit and zr * zr + zi * zi <= f32(4.0):
                    t = zr * zr - zi * zi + cr
                    zi = f32(2.0) * zr * zi + ci
                    zr = t
                    it += 1
                out[py * W + px] = it

    @njit(parallel=True, cache=True)
    def conv3(out, src, wt, W, H):
        for y in prange(1, H - 1):
            for x in range(1, W - 1):
                s = f32(0.0)
                for dy in range(-1, 2):
                    for dx in range(-1, 2):
                        s += wt[(dy + 1) * 3 + dx + 1] * src[(y + dy) * W + x + dx]
                out[y * W + x] = s

    @njit(parallel=True, cache=True)
    def nbody(ax, ay, az, xs, ys, zs, ms, nb, eps):
        for i in prange(nb):
            xi, yi, zi = xs[i], ys[i], zs[i]
            sx, sy, sz = f32(0.0), f32(0.0), f32(0.0)
            for j in range(nb):
                dx, dy, dz = xs[j] - xi, ys[j] - yi, zs[j] - zi
                d2 = dx * dx + dy * dy + dz * dz + eps
                f = ms[j] / (d2 * np.sqrt(d2))
                sx += f * dx
                sy += f * dy
                sz += f * dz
            ax[i], ay[i], az[i] = sx, sy, sz

    @njit(parallel=True, cache=True)
    def matmul(C, A, B, N):
        for row in prange(N):
            for col in range(N):
                acc = f32(0.0)
                for k in range(N):
                    acc += A[row * N + k] * B[k * N + col]
                C[row * N + col] = acc

    @njit(parallel=True, cache=True)
    def one(a, n):
        for i in prange(n):
            a[i] = a[i] + 1

    d = inputs(np)
    return np, {
        "saxpy": lambda: saxpy(d["y"], d["x"], f32(2.0), 2 ** 24),
        "mandelbrot": lambda: mandel(d["mout"], 1024, 1024, 256),
        "conv3x3": lambda: conv3(d["cout"], d["cin"], d["w"], 2048, 2048),
        "nbody": lambda: nbody(d["ax"], d["ay"], d["az"], d["px"], d["py"], d["pz"], d["m"], 4096,
                               f32(0.01)),
        "matmul": lambda: matmul(d["C"], d["A"], d["B"], 512),
        "launch": lambda: one(d["one"], 1),
    }, d


def taichi_peer(first, cache_dir):
    import numpy as np
    import taichi as ti
    ti.init(arch=ti.cpu, cpu_max_num_threads=THREADS, fast_math=False, offline_cache=True,
            offline_cache_file_path=cache_dir, log_level=ti.WARN)
    nd = ti.types.ndarray()

    @ti.kernel
    def saxpy(y: nd, x: nd, a: ti.f32, n: ti.i32):
        for i in range(n):
            y[i] = a * x[i] + y[i]

    if first:
        return lambda: _first_saxpy(np, lambda y, x, n: saxpy(y, x, 2.0, n))

    @ti.kernel
    def mandel(out: nd, W: ti.i32, H: ti.i32, maxit: ti.i32):
        for py, px in ti.ndrange(H, W):
            cr = -2.0 + 3.0 * px / W
            ci = -1.5 + 3.0 * py / H
            zr, zi, it = 0.0, 0.0, 0
            while it < maxit and zr * zr + zi * zi <= 4.0:
                t = zr * zr - zi * zi + cr
                zi = 2.0 * zr * zi + ci
                zr = t
                it += 1
            out[py * W + px] = it

    @ti.kernel
    def conv3(out: nd, src: nd, wt: nd, W: ti.i32, H: ti.i32):
        for y, x in ti.ndrange((1, H - 1), (1, W - 1)):
            s = 0.0
            for dy in range(-1, 2):
                for dx in range(-1, 2):
                    s += wt[(dy + 1) * 3 + dx + 1] * src[(y + dy) * W + x + dx]
            out[y * W + x] = s

    @ti.kernel
    def nbody(ax: nd, ay: nd, az: nd, xs: nd, ys: nd, zs: nd, ms: nd, nb: ti.i32, eps: ti.f32):
        for i in range(nb):
            xi, yi, zi = xs[i], ys[i], zs[i]
            sx, sy, sz = 0.0, 0.0, 0.0
            for j in range(nb):
                dx, dy, dz = xs[j] - xi, ys[j] - yi, zs[j] - zi
                d2 = dx * dx + dy * dy + dz * dz + eps
                f = ms[j] / (d2 * ti.sqrt(d2))
                sx += f * dx
                sy += f * dy
                sz += f * dz
            ax[i], ay[i], az[i] = sx, sy, sz

    @ti.kernel
    def matmul(C: nd, A: nd, B: nd, N: ti.i32):
        for row, col in ti.ndrange(N, N):
            acc = 0.0
            for k in range(N):
                acc += A[row * N + k] * B[k * N + col]
            C[row * N + col] = acc

    @ti.kernel
    def one(a: nd, n: ti.i32):
        for i in range(n):
            a[i] = a[i] + 1

    d = inputs(np)
    return np, {
        "saxpy": lambda: saxpy(d["y"], d["x"], 2.0, 2 ** 24),
        "mandelbrot": lambda: mandel(d["mout"], 1024, 1024, 256),
        "conv3x3": lambda: conv3(d["cout"], d["cin"], d["w"], 2048, 2048),
        "nbody": lambda: nbody(d["ax"], d["ay"], d["az"], d["px"], d["py"], d["pz"], d["m"], 4096, 0.01),
        "matmul": lambda: matmul(d["C"], d["A"], d["B"], 512),
        "launch": lambda: one(d["one"], 1),
    }, d


def warp_peer(first, cache_dir):
    import numpy as np
    import warp as wp
    wp.config.kernel_cache_dir = cache_dir
    wp.config.quiet = True
    wp.init()
    # Each kernel its own module (compiled on its own, like the other
    # peers'); forward only (no adjoint code to compile).
    opts = {"enable_backward": False, "fast_math": False}
    kern = lambda f: wp.kernel(f, module="unique", module_options=opts)  # noqa: E731
    fa = wp.array(dtype=float)
    ia = wp.array(dtype=wp.int32)

    def saxpy(y: fa, x: fa, a: float, n: int):
        i = wp.tid()
        if i < n:
            y[i] = a * x[i] + y[i]
    saxpy = kern(saxpy)

    def arr(a):
        return wp.array(a, device="cpu")

    if first:
        def go(y, x, n):
            wy = arr(y)
            wp.launch(saxpy, dim=n, inputs=[wy, arr(x), 2.0, n], device="cpu")
            y[:] = wy.numpy()
        return lambda: _first_saxpy(np, go)

    def mandel(out: ia, W: int, H: int, maxit: int):
        py, px = wp.tid()
        cr = -2.0 + 3.0 * float(px) / float(W)
        ci = -1.5 + 3.0 * float(py) / float(H)
        zr = float(0.0)
        zi = float(0.0)
        it = int(0)
        while it < maxit and zr * zr + zi * zi <= 4.0:
            t = zr * zr - zi * zi + cr
            zi = 2.0 * zr * zi + ci
            zr = t
            it += 1
        out[py * W + px] = it
    mandel = kern(mandel)

    def conv3(out: fa, src: fa, wt: fa, W: int, H: int):
        y, x = wp.tid()
        if x >= 1 and y >= 1 and x < W - 1 and y < H - 1:
            s = float(0.0)
            for dy in range(-1, 2):
                for dx in range(-1, 2):
                    s += wt[(dy + 1) * 3 + dx + 1] * src[(y + dy) * W + x + dx]
            out[y * W + x] = s
    conv3 = kern(conv3)

    def nbody(ax: fa, ay: fa, az: fa, xs: fa, ys: fa, zs: fa, ms: fa, nb: int, eps: float):
        i = wp.tid()
        xi = xs[i]
        yi = ys[i]
        zi = zs[i]
        sx = float(0.0)
        sy = float(0.0)
        sz = float(0.0)
        for j in range(nb):
            dx = xs[j] - xi
            dy = ys[j] - yi
            dz = zs[j] - zi
            d2 = dx * dx + dy * dy + dz * dz + eps
            f = ms[j] / (d2 * wp.sqrt(d2))
            sx += f * dx
            sy += f * dy
            sz += f * dz
        ax[i] = sx
        ay[i] = sy
        az[i] = sz
    nbody = kern(nbody)

    def matmul(C: fa, A: fa, B: fa, N: int):
        row, col = wp.tid()
        acc = float(0.0)
        for k in range(N):
            acc += A[row * N + k] * B[k * N + col]
        C[row * N + col] = acc
    matmul = kern(matmul)

    def one(a: fa, n: int):
        i = wp.tid()
        if i < n:
            a[i] = a[i] + 1.0
    one = kern(one)

    d = {k: arr(v) for k, v in inputs(np).items()}
    L = lambda k, dim, args: wp.launch(k, dim=dim, inputs=args, device="cpu")  # noqa: E731
    return np, {
        "saxpy": lambda: L(saxpy, 2 ** 24, [d["y"], d["x"], 2.0, 2 ** 24]),
        "mandelbrot": lambda: L(mandel, (1024, 1024), [d["mout"], 1024, 1024, 256]),
        "conv3x3": lambda: L(conv3, (2048, 2048), [d["cout"], d["cin"], d["w"], 2048, 2048]),
        "nbody": lambda: L(nbody, 4096, [d["ax"], d["ay"], d["az"], d["px"], d["py"], d["pz"], d["m"],
                                         4096, 0.01]),
        "matmul": lambda: L(matmul, (512, 512), [d["C"], d["A"], d["B"], 512]),
        "launch": lambda: L(one, 1, [d["one"], 1]),
    }, _WarpView(d)


class _WarpView:
    """The worker's arrays as numpy, read when a checksum is taken."""
    def __init__(self, d):
        self.d = d

    def __getitem__(self, k):
        return self.d[k].numpy()


def _first_saxpy(np, go):
    n = 1024
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    go(y, x, n)
    assert y[10] == 20.0, y[10]


def checksums(np, d):
    s = lambda *names: float(sum(np.sum(d[k], dtype=np.float64) for k in names))  # noqa: E731
    return {"saxpy": s("y"), "mandelbrot": s("mout"), "conv3x3": s("cout"),
            "nbody": s("ax", "ay", "az"), "matmul": s("C"), "launch": 0.0}


def worker(name, mode):
    out = _proto_out()
    cache_dir = os.environ.get("PEERS_CACHE_DIR") or tempfile.mkdtemp()
    t_import0 = T_START
    if name == "numba":
        os.environ.setdefault("NUMBA_CACHE_DIR", cache_dir)
        made = numba_peer(mode == "first")
    elif name == "taichi":
        made = taichi_peer(mode == "first", cache_dir)
    elif name == "warp":
        made = warp_peer(mode == "first", cache_dir)
    else:
        raise SystemExit("unknown peer " + name)
    if mode == "first":
        t1 = time.perf_counter()
        made()
        t2 = time.perf_counter()
        out.write(json.dumps({"import_s": t1 - t_import0, "first_s": t2 - t1}) + "\n")
        return
    np, cases, d = made
    for f in cases.values():
        f()
    sums = checksums(np, d)
    sums["threads"] = THREADS if name != "warp" else 1
    out.write(json.dumps(sums) + "\n")
    for line in sys.stdin:
        parts = line.split()
        if len(parts) != 3 or parts[0] != "time":
            break
        f, reps = cases[parts[1]], int(parts[2])
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(reps):
            f()
        w1, c1 = time.perf_counter(), time.process_time()
        out.write(json.dumps({"wall": (w1 - w0) / reps, "cpu": (c1 - c0) / reps}) + "\n")


# --------------------------------------------------------------------------
# The driver.

def peer_env(cache_dir):
    env = dict(os.environ)
    env.update({"GPUJIT_THREADS": str(THREADS), "NUMBA_NUM_THREADS": str(THREADS),
                "OMP_NUM_THREADS": str(THREADS), "OMP_WAIT_POLICY": "passive",
                "GPUJIT_CACHE_DIR": cache_dir, "PEERS_CACHE_DIR": cache_dir, "NUMBA_CACHE_DIR": cache_dir,
                "TI_LOG_LEVEL": "warn", "PYTHONUNBUFFERED": "1"})
    env.setdefault("LUA_PATH", "lua/?.lua;lua/?/init.lua;;")
    env.setdefault("LUA_CPATH", "build/?.so;;")
    return env


def peer_cmd(name, mode):
    if name.startswith("gpujit"):
        return [os.environ.get("LUAJIT", "luajit"), os.path.join(HERE, "peers_gpujit.lua"), mode,
                "i32" if name == "gpujit-i32" else "numbers"]
    return [sys.executable, os.path.abspath(__file__), "--worker", name, mode]


def last_line(text):
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1][:160] if lines else "no output"


class Peer:
    def __init__(self, name, cache_dir):
        self.name = name
        self.proc = subprocess.Popen(peer_cmd(name, "serve"), cwd=ROOT, env=peer_env(cache_dir),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(os.path.join(cache_dir, "stderr.txt"), "w"), text=True)
        self.cache_dir = cache_dir

    def read(self):
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            with open(os.path.join(self.cache_dir, "stderr.txt")) as f:
                raise RuntimeError("exited with status %s: %s" % (self.proc.returncode, last_line(f.read())))
        return json.loads(line)

    def time(self, kernel, reps):
        self.proc.stdin.write("time %s %d\n" % (kernel, reps))
        self.proc.stdin.flush()
        return self.read()

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(timeout=120)


def first_kernel(name):
    """(cold, warm) time to the first kernel, each a fresh process."""
    d = tempfile.mkdtemp(prefix="peers-first-")
    try:
        res = []
        for _ in ("cold", "warm"):
            p = subprocess.run(peer_cmd(name, "first"), cwd=ROOT, env=peer_env(d), capture_output=True,
                               text=True, timeout=600)
            if p.returncode != 0:
                raise RuntimeError("first kernel: status %d: %s" % (p.returncode, last_line(p.stderr)))
            r = json.loads(p.stdout.strip().splitlines()[-1])
            res.append(r["import_s"] + r["first_s"])
        return res
    finally:
        shutil.rmtree(d, ignore_errors=True)


def versions():
    v = {}
    for mod, dist in (("numba", "numba"), ("taichi", "taichi"), ("warp", "warp-lang"), ("numpy", "numpy")):
        try:
            from importlib.metadata import version
            v[mod] = version(dist)
        except Exception as e:  # not installed: pip's last line, from make bench-peers
            v[mod] = None
            v[mod + "_why"] = type(e).__name__
            log = os.path.join(os.environ.get("PEERS_VENV", "build/peers-venv"), "pip-%s.log" % dist)
            try:
                with open(os.path.join(ROOT, log)) as f:
                    v[mod + "_why"] = "pip install %s: %s" % (dist, last_line(f.read()))
            except OSError:
                pass
    return v


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name"):
                    model = ln.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    return model, os.cpu_count(), load


def fmt_ms(s):
    if s >= 1e-3:
        return "%.2f ms" % (s * 1e3)
    return "%.1f µs" % (s * 1e6) if s >= 1e-6 else "%.0f ns" % (s * 1e9)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("BENCH_RUNS", "7"))
    only = os.environ.get("PEERS", "")
    names = [p for p in PEERS if not only or p in only.split(",")]
    no_first = {"gpujit-i32"}     # the same first kernel as gpujit's
    vers = versions()
    status, peers, sums = {}, {}, {}
    caches = []
    for name in names:
        mod = {"numba": "numba", "taichi": "taichi", "warp": "warp"}.get(name)
        if mod and not vers.get(mod):
            status[name] = "not installed: %s" % vers.get(mod + "_why", "?")
            continue
        d = tempfile.mkdtemp(prefix="peers-%s-" % name)
        caches.append(d)
        try:
            p = Peer(name, d)
            sums[name] = p.read()
            peers[name] = p
            status[name] = "ok"
        except Exception as e:
            status[name] = "does not run: %s" % e
        print("peers: %s: %s" % (name, status[name]), flush=True)
    ref = sums.get("gpujit")
    for name in list(peers):
        if ref is None or name == "gpujit":
            continue
        for k in KERNELS:
            a, b = sums[name][k], ref[k]
            if abs(a - b) > TOL[k] * (1 + abs(b)):
                status[name] = "wrong %s: checksum %.9g, gpujit %.9g" % (k, a, b)
                print("peers: %s: %s" % (name, status[name]), flush=True)
                peers.pop(name).close()
                break
    times = {n: {k: [] for k in KERNELS + ["launch"]} for n in peers}
    cpu = {n: [] for n in peers}
    order = list(peers)
    for r in range(runs):
        rot = order[r % len(order):] + order[:r % len(order)] if order else []
        for k in KERNELS + ["launch"]:
            for n in rot:
                t = peers[n].time(k, REPS[k])
                times[n][k].append(t["wall"])
                if k == "mandelbrot":
                    cpu[n].append(t["cpu"] / t["wall"])
        print("peers: round %d/%d done" % (r + 1, runs), flush=True)
    for p in peers.values():
        p.close()
    first = {}
    for n in peers:
        if n in no_first:
            continue
        try:
            first[n] = first_kernel(n)
        except Exception as e:
            first[n] = str(e)
    for d in caches:
        shutil.rmtree(d, ignore_errors=True)

    model, ncpu, load0 = machine()
    med = {n: {k: statistics.median(v) for k, v in times[n].items()} for n in peers}
    lines = []
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or "?"
    lines.append("%s, %s (%d cores), %d threads each, %d rounds, commit %s, load average %s at the end; "
                 "Python %s, numba %s, taichi %s, warp-lang %s, numpy %s." % (
                     date, model, ncpu, THREADS, runs, commit, load0, platform.python_version(),
                     vers.get("numba"), vers.get("taichi"), vers.get("warp"), vers.get("numpy")))
    lines.append("")
    head = "| kernel | size |" + "".join(" %s |" % n for n in names)
    lines.append(head)
    lines.append("|---|---|" + "---|" * len(names))
    for k in KERNELS + ["launch"]:
        row = "| %s | %s |" % (k if k != "launch" else "launch overhead",
                               WHAT.get(k, "1 work item, 1 element"))
        for n in names:
            if n not in med:
                row += " — |"
                continue
            cell = fmt_ms(med[n][k])
            if n != "gpujit" and "gpujit" in med:
                cell += " (%.2f×)" % (med[n][k] / med["gpujit"][k])
            row += " %s |" % cell
        lines.append(row)
    for label, idx in (("first kernel, cold", 0), ("first kernel, warm", 1)):
        row = "| %s | saxpy, 1024 |" % label
        for n in names:
            f = first.get(n)
            row += (" %s |" % fmt_ms(f[idx])) if isinstance(f, list) else " — |"
        lines.append(row)
    row = "| threads used | CPU/wall, mandelbrot |"
    for n in names:
        row += (" %.1f |" % statistics.median(cpu[n])) if cpu.get(n) else " — |"
    lines.append(row)
    row = "| status | |"
    for n in names:
        s = status.get(n, "?")
        if isinstance(first.get(n), str):
            s += "; " + first[n]
        row += " %s |" % s.replace("|", "/")
    lines.append(row)
    lines.append("")
    lines.append("Medians of wall-clock time; (×): the peer's time over gpujit's (> 1: gpujit is faster); "
                 "gpujit: sizes as plain Lua numbers, gpujit-i32: as int32_t cdata (as make bench). "
                 "First kernel: import and init of the library plus the first launch of saxpy "
                 "(compile included) in a fresh process, the interpreter's own start not counted; "
                 "cold: empty cache directory, warm: a second process with that directory.")
    table = "\n".join(lines)
    print()
    print(table)
    if os.environ.get("PEERS_WRITE") != "0":
        write_results(table)


BEGIN, END = "<!-- make bench-peers: begin -->", "<!-- make bench-peers: end -->"


def write_results(table):
    for path, intro in ((os.path.join(HERE, "RESULTS.md"), "## Peers\n\n`make bench-peers` "
                         "(bench/peers.py, bench/README.md): gpujit's cpu backend against Numba, Taichi "
                         "and Warp on the CPU, same kernels, sizes and threads.\n\n"),
                        (os.path.join(ROOT, "README.md"), None)):
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        block = BEGIN + "\n" + table + "\n" + END
        if BEGIN in text and END in text:
            a, b = text.index(BEGIN), text.index(END) + len(END)
            text = text[:a] + block + text[b:]
        elif intro is not None:
            text = text.rstrip("\n") + "\n\n" + intro + block + "\n"
        else:
            continue
        with open(path, "w") as f:
            f.write(text)
        print("peers: wrote %s" % os.path.relpath(path, ROOT))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "serve")
    else:
        main()
