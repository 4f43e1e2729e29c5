"""The autodiff rows of `make bench-peers`: gpujit's gpu.grad against JAX's
jax.grad and Warp's wp.Tape, on the CPU, in float64.

    build/peers-venv/bin/python bench/peers_ad.py [runs]   (make bench-peers runs it)

The shapes of bench/autodiff.lua (bench/ad_kernels.lua), n = PEERS_AD_N work
items (262144): saxpy, a dense 8->1 layer with tanh, a 3x3 convolution over a
square image of about n pixels, the MLP's softmax cross-entropy layer (8
hidden -> 4 classes per sample).  Each is timed forward (the kernel / the
jitted function) and gradient (the forward pass and the reverse, with respect
to every float input, the outputs' adjoints 1):

- gpujit: gpu.grad(k) launched after the seed is copied into the output's
  adjoint (bench/peers_ad_gpujit.lua);
- JAX: jax.jit(jax.grad(sum of the outputs, argnums=every array)), float64
  (jax_enable_x64), the function written with jax.numpy as its users would
  (a matmul, slices for the convolution), results waited for;
- Warp: the kernel (float64 arrays with requires_grad) recorded on a
  wp.Tape, then tape.backward(grads={output: ones}); CPU launches are serial.

Every peer is a worker process of its own (bench/peers.py's protocol); the
driver interleaves them (in each round, each case and kind, every peer once,
the order rotating).  Before timing, each worker reports float64 weighted
sums of one forward output and of one gradient from zeroed adjoints, which
must agree with gpujit's (relative 1e-8), else the peer is reported wrong.
A peer that does not install, import or run is reported in the table.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import peers as P

HERE = P.HERE
ROOT = P.ROOT
N = int(os.environ.get("PEERS_AD_N", "262144"))
CASES = ["saxpy", "mlp", "conv3x3", "softmax_ce"]
KINDS = ["fwd", "grad"]
REPS = {"saxpy": 20, "mlp": 2, "conv3x3": 2, "softmax_ce": 1}
NAMES = ["gpujit", "jax", "warp"]
DIST = {"jax": "jax[cpu]", "warp": "warp-lang"}


def data(np):
    """bench/ad_kernels.lua's AD.data(n), as numpy arrays."""
    i = np.arange
    S = int(N ** 0.5)
    return {"S": S, "x": (i(N * 8) % 17) * 0.01, "w": 0.1 * i(8), "w9": 0.1 * i(9) - 0.3,
            "w2": np.sin(i(32)) * 0.5, "b2": np.zeros(4), "label": (i(N) % 4).astype(np.int32)}


def wsum(np, a):
    a = np.asarray(a, dtype=np.float64).ravel()
    return float(np.sum(a * (np.arange(a.size) % 7 + 1)))


def jax_peer():
    import numpy as np
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    d = data(np)
    S = d["S"]

    def saxpy(x, y):
        return 2.0 * x + y

    def mlp(w, x):
        return jnp.tanh(x.reshape(N, 8) @ w)

    def conv3x3(inp, wt):
        img = inp.reshape(S, S)
        out = 0.0
        for dy in range(3):
            for dx in range(3):
                out = out + wt[dy * 3 + dx] * img[dy:dy + S - 2, dx:dx + S - 2]
        return out.ravel()

    def softmax_ce(h, w2, b2, label):
        z = h.reshape(N, 8) @ w2.reshape(4, 8).T + b2
        m = jnp.max(z, axis=1)
        zl = jnp.take_along_axis(z, label[:, None], axis=1)[:, 0]
        return jnp.log(jnp.sum(jnp.exp(z - m[:, None]), axis=1)) + m - zl

    x = jnp.asarray(d["x"])
    args = {"saxpy": (saxpy, (x[:N], jnp.zeros(N)), ("gx", "gy")),
            "mlp": (mlp, (jnp.asarray(d["w"]), x), ("gw", "gx")),
            "conv3x3": (conv3x3, (x[:S * S], jnp.asarray(d["w9"])), ("gx", "g9")),
            "softmax_ce": (softmax_ce, (x, jnp.asarray(d["w2"]), jnp.asarray(d["b2"]),
                                        jnp.asarray(d["label"])), ("gx", "gw2", "gb2"))}
    sums, run = {}, {}
    for name, (f, a, gnames) in args.items():
        fwd = jax.jit(f)
        grad = jax.jit(jax.grad(lambda *v, f=f: jnp.sum(f(*v)), argnums=tuple(range(len(gnames)))))
        sums[name + ".out"] = wsum(np, fwd(*a).block_until_ready())
        for g, arr in zip(gnames, grad(*a)):
            sums[name + "." + g] = wsum(np, arr)
        run[name] = {"fwd": lambda fwd=fwd, a=a: fwd(*a).block_until_ready(),
                     "grad": lambda grad=grad, a=a: [r.block_until_ready() for r in grad(*a)]}
    return sums, run


def warp_peer():
    import numpy as np
    import warp as wp
    wp.config.quiet = True
    wp.config.kernel_cache_dir = os.environ.get("PEERS_CACHE_DIR") or tempfile.mkdtemp()
    wp.init()
    f64 = wp.float64
    da = wp.array(dtype=wp.float64)
    ia = wp.array(dtype=wp.int32)
    opts = {"fast_math": False}

    def kern(f):
        return wp.kernel(f, module="unique", module_options=opts)

    def saxpy(a: wp.float64, x: da, y: da, out: da):
        i = wp.tid()
        out[i] = a * x[i] + y[i]

    def mlp(w: da, x: da, y: da):
        i = wp.tid()
        s = f64(0.0)
        for j in range(8):
            s += w[j] * x[i * 8 + j]
        y[i] = wp.tanh(s)

    def conv3x3(inp: da, wt: da, out: da, W: int):
        py, px = wp.tid()
        s = f64(0.0)
        for dy in range(3):
            for dx in range(3):
                s += wt[dy * 3 + dx] * inp[(py + dy) * W + px + dx]
        out[py * (W - 2) + px] = s

    def softmax_ce(h: da, w2: da, b2: da, label: ia, loss: da):
        s = wp.tid()
        m = f64(-1e300)
        for c in range(4):
            z = b2[c]
            for j in range(8):
                z += w2[c * 8 + j] * h[s * 8 + j]
            m = wp.max(m, z)
        se = f64(0.0)
        zl = f64(0.0)
        for c in range(4):
            z = b2[c]
            for j in range(8):
                z += w2[c * 8 + j] * h[s * 8 + j]
            se += wp.exp(z - m)
            if c == label[s]:
                zl = z
        loss[s] = wp.log(se) + m - zl

    d = data(np)
    S = d["S"]

    def arr(a, grad=True):
        return wp.array(np.asarray(a, dtype=np.float64), dtype=f64, device="cpu", requires_grad=grad)

    x, xs = arr(d["x"]), arr(d["x"][:S * S])
    x1, y1 = arr(d["x"][:N]), arr(np.zeros(N))
    w, w9, w2, b2 = arr(d["w"]), arr(d["w9"]), arr(d["w2"]), arr(d["b2"])
    label = wp.array(d["label"], dtype=wp.int32, device="cpu")
    outs = {"saxpy": arr(np.zeros(N)), "mlp": arr(np.zeros(N)), "conv3x3": arr(np.zeros((S - 2) ** 2)),
            "softmax_ce": arr(np.zeros(N))}
    seeds = {k: arr(np.ones(v.shape[0]), False) for k, v in outs.items()}
    cases = {"saxpy": (kern(saxpy), N, [f64(2.0), x1, y1], {"gx": x1, "gy": y1}),
             "mlp": (kern(mlp), N, [w, x], {"gw": w, "gx": x}),
             "conv3x3": (kern(conv3x3), (S - 2, S - 2), [xs, w9], {"gx": xs, "g9": w9}),
             "softmax_ce": (kern(softmax_ce), N, [x, w2, b2, label], {"gx": x, "gw2": w2, "gb2": b2})}
    extra = {"conv3x3": [S]}
    sums, run = {}, {}
    for name, (k, dim, a, grads) in cases.items():
        out = outs[name]
        tail = extra.get(name, [])

        def fwd(k=k, dim=dim, ins=a + [out] + tail):
            wp.launch(k, dim=dim, inputs=ins, device="cpu")
            wp.synchronize_device("cpu")

        def grad(fwd=fwd, out=out, seed=seeds[name]):
            tape = wp.Tape()
            with tape:
                fwd()
            tape.backward(grads={out: seed})
            wp.synchronize_device("cpu")
            return tape

        fwd()
        sums[name + ".out"] = wsum(np, out.numpy())
        for g in grads.values():
            g.grad.zero_()
        grad()
        for gname, g in grads.items():
            sums[name + "." + gname] = wsum(np, g.grad.numpy())
        run[name] = {"fwd": fwd, "grad": grad}
    return sums, run


def worker(name):
    out = P._proto_out()
    sums, run = {"jax": jax_peer, "warp": warp_peer}[name]()
    out.write(json.dumps(sums) + "\n")
    for line in sys.stdin:
        parts = line.split()
        if len(parts) != 4 or parts[0] != "time":
            break
        f, reps = run[parts[1]][parts[2]], int(parts[3])
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(reps):
            f()
        w1, c1 = time.perf_counter(), time.process_time()
        out.write(json.dumps({"wall": (w1 - w0) / reps, "cpu": (c1 - c0) / reps}) + "\n")


class Peer(P.Peer):
    def __init__(self, name, cache_dir):   # pylint: disable=super-init-not-called
        self.name = name
        if name == "gpujit":
            cmd = [os.environ.get("LUAJIT", "luajit"), os.path.join(HERE, "peers_ad_gpujit.lua"), str(N)]
        else:
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", name]
        self.cache_dir = cache_dir
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=P.peer_env(cache_dir), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=open(os.path.join(cache_dir, "stderr.txt"), "w"), text=True)


def version(dist):
    """The installed version, or why not (pip's last line, from make bench-peers)."""
    try:
        from importlib.metadata import version as v
        return v(dist.split("[")[0]), None
    except Exception as e:
        why = type(e).__name__
        log = os.path.join(os.environ.get("PEERS_VENV", "build/peers-venv"), "pip-%s.log" % dist)
        try:
            with open(os.path.join(ROOT, log)) as f:
                why = "pip install %s: %s" % (dist, P.last_line(f.read()))
        except OSError:
            pass
        return None, why


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("BENCH_RUNS", "7"))
    status, peers, sums, vers = {}, {}, {}, {}
    caches = []
    for name in NAMES:
        if name in DIST:
            vers[name], why = version(DIST[name])
            if vers[name] is None:
                status[name] = "not installed: %s" % why
                print("peers-ad: %s: %s" % (name, status[name]), flush=True)
                continue
        d = tempfile.mkdtemp(prefix="peers-ad-%s-" % name)
        caches.append(d)
        try:
            p = Peer(name, d)
            sums[name] = p.read()
            peers[name] = p
            status[name] = "ok"
        except Exception as e:
            status[name] = "does not run: %s" % e
        print("peers-ad: %s: %s" % (name, status[name]), flush=True)
    ref = sums.get("gpujit")
    for name in list(peers):
        if ref is None or name == "gpujit":
            continue
        for k, b in sorted(ref.items()):
            a = sums[name].get(k)
            if a is None or abs(a - b) > 1e-8 * (1 + abs(b)):
                status[name] = "wrong %s: checksum %s, gpujit %.12g" % (k, a, b)
                print("peers-ad: %s: %s" % (name, status[name]), flush=True)
                peers.pop(name).close()
                break
    times = {n: {(c, k): [] for c in CASES for k in KINDS} for n in peers}
    cpu = {n: [] for n in peers}
    order = list(peers)
    for r in range(runs):
        rot = order[r % len(order):] + order[:r % len(order)] if order else []
        for c in CASES:
            for k in KINDS:
                for n in rot:
                    t = peers[n].time("%s %s" % (c, k), REPS[c])
                    times[n][(c, k)].append(t["wall"])
                    if "cpu" in t and c == "softmax_ce" and k == "grad":
                        cpu[n].append(t["cpu"] / t["wall"])
        print("peers-ad: round %d/%d done" % (r + 1, runs), flush=True)
    for p in peers.values():
        p.close()
    for d in caches:
        subprocess.run(["rm", "-rf", d])
    print()
    print(table(runs, status, vers, times, cpu))


def table(runs, status, vers, times, cpu):
    model, ncpu, load = P.machine()
    med = {n: {ck: statistics.median(v) for ck, v in t.items()} for n, t in times.items()}
    S = int(N ** 0.5)
    what = {"saxpy": "%d" % N, "mlp": "%d x 8" % N, "conv3x3": "%d² image" % S, "softmax_ce": "%d x 8 -> 4" % N}
    lines = ["%s (%d cores), n = %d, %d rounds, load average %s at the end; jax %s, warp-lang %s; "
             "float64 everywhere." % (model, ncpu, N, runs, load, vers.get("jax"), vers.get("warp")), ""]
    lines.append("| kernel | size |" + "".join(" %s forward | %s gradient |" % (n, n) for n in NAMES))
    lines.append("|---|---|" + "---|---|" * len(NAMES))
    for c in CASES:
        row = "| %s | %s |" % (c, what[c])
        for n in NAMES:
            if n not in med:
                row += " — | — |"
                continue
            f, g = med[n][(c, "fwd")], med[n][(c, "grad")]
            cell = "%s (%.1f× fwd" % (P.fmt_ms(g), g / f)
            if n != "gpujit" and "gpujit" in med:
                cell += ", %.2f× gpujit's" % (g / med["gpujit"][(c, "grad")])
            row += " %s | %s) |" % (P.fmt_ms(f), cell)
        lines.append(row)
    row = "| threads used | CPU/wall, softmax_ce gradient |"
    for n in NAMES:
        row += (" | %.1f |" % statistics.median(cpu[n])) if cpu.get(n) else " | — |"
    lines.append(row)
    lines.append("| status | |" + "".join(" %s | |" % status.get(n, "?").replace("|", "/") for n in NAMES))
    lines.append("")
    lines.append("Medians of wall-clock time. Gradient: the forward pass and the reverse together, with "
                 "respect to every float input, the outputs' adjoints 1; (× fwd): the gradient's time over "
                 "the same library's forward; (× gpujit's): over gpujit's gradient (> 1: gpujit is faster).")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
    else:
        main()
