/*
** The C references of `make bench` (bench/bench.lua): the benchmark kernels
** written by hand in C with OpenMP, built by the Makefile with
** clang-15 -O3 -march=native -fopenmp -ffp-contract=off into a shared
** object that bench.lua loads through the FFI.
**
** Each function computes what the gpujit kernel of the same name in
** bench.lua computes, with the same arithmetic in the same order (floats,
** no fused multiply-adds: gpujit keeps Lua's arithmetic exactly, so the
** results are compared bit for bit or nearly).  The parallel loop is the
** loop over gpujit's work items; OpenMP runs it over as many threads as
** gpujit's pool has (ref_init).
*/
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

/* Threads for every parallel loop below.  Passive waiting: between two
** parallel loops OpenMP's threads sleep instead of spinning (by default
** for up to 200 ms), so that they do not take the cores from gpujit's
** pool in the measurements that alternate with them.  Must be called
** before any other function here. */
void ref_init(int nthreads)
{
  setenv("OMP_WAIT_POLICY", "passive", 0);
  omp_set_num_threads(nthreads);
}

int ref_threads(void)
{
  return omp_get_max_threads();
}

/* The floor of a launch: a call of an empty function through the FFI. */
void ref_empty(void)
{
}

/* y = a x + y: memory bound. */
void ref_saxpy(float *y, const float *x, float a, int n)
{
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}

/* Iterations until escape, per pixel: compute bound and uneven (hence
** the dynamic schedule over rows). */
void ref_mandel(int32_t *out, int W, int H, int maxit)
{
#pragma omp parallel for schedule(dynamic, 4)
  for (int py = 0; py < H; py++) {
    for (int px = 0; px < W; px++) {
      float cr = -2.0f + 3.0f * px / W, ci = -1.5f + 3.0f * py / H;
      float zr = 0.0f, zi = 0.0f;
      int it = 0;
      while (it < maxit && zr * zr + zi * zi <= 4.0f) {
        float t = zr * zr - zi * zi + cr;
        zi = 2.0f * zr * zi + ci;
        zr = t;
        it++;
      }
      out[py * W + px] = it;
    }
  }
}

/* 3x3 convolution with weights w; the border is left alone. */
void ref_conv3(float *out, const float *in, const float *w, int W, int H)
{
#pragma omp parallel for schedule(static)
  for (int y = 1; y < H - 1; y++) {
    for (int x = 1; x < W - 1; x++) {
      float s = 0.0f;
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++)
          s = s + w[(dy + 1) * 3 + dx + 1] * in[(y + dy) * W + x + dx];
      out[y * W + x] = s;
    }
  }
}

/* Gravitational accelerations, all pairs (softened by eps). */
void ref_nbody(float *ax, float *ay, float *az, const float *px,
               const float *py, const float *pz, const float *m, int n,
               float eps)
{
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; i++) {
    float xi = px[i], yi = py[i], zi = pz[i];
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    for (int j = 0; j < n; j++) {
      float dx = px[j] - xi, dy = py[j] - yi, dz = pz[j] - zi;
      float d2 = dx * dx + dy * dy + dz * dz + eps;
      float f = m[j] / (d2 * sqrtf(d2));
      sx = sx + f * dx;
      sy = sy + f * dy;
      sz = sz + f * dz;
    }
    ax[i] = sx;
    ay[i] = sy;
    az[i] = sz;
  }
}

/* C = A B, square N x N, row-major, the plain triple loop. */
void ref_matmul(float *C, const float *A, const float *B, int N)
{
#pragma omp parallel for schedule(static)
  for (int row = 0; row < N; row++) {
    for (int col = 0; col < N; col++) {
      float acc = 0.0f;
      for (int k = 0; k < N; k++) acc = acc + A[row * N + k] * B[k * N + col];
      C[row * N + col] = acc;
    }
  }
}

/* ---- The parallel primitives (bench/prims.lua): the algorithms of
** lua/gpujit/prims.lua and prims_sort.lua, with G items (gpujit's choice
** for the size, passed in) over OpenMP's threads, so that the float sum is
** the same sum in the same order and the outputs compare bit for bit. */

#define PRIM_LANES 16

/* Item j folds the chunk [j*C, min(n, (j+1)*C)) in PRIM_LANES lanes. */
static float chunk_sum_f32(const float *a, int64_t lo, int64_t hi)
{
  float s;
  if (hi - lo >= PRIM_LANES) {
    float acc[PRIM_LANES];
    for (int l = 0; l < PRIM_LANES; l++) acc[l] = a[lo + l];
    int64_t full = hi - (hi - lo) % PRIM_LANES;
    for (int64_t i = lo + PRIM_LANES; i < full; i += PRIM_LANES)
      for (int l = 0; l < PRIM_LANES; l++) acc[l] = acc[l] + a[i + l];
    for (int64_t l = 0; l < hi - full; l++) acc[l] = acc[l] + a[full + l];
    s = acc[0];
    for (int l = 1; l < PRIM_LANES; l++) s = s + acc[l];
  } else {
    s = a[lo];
    for (int64_t i = lo + 1; i < hi; i++) s = s + a[i];
  }
  return s;
}

/* gpu.reduce(a, "+") of floats; part: G floats of scratch. */
float ref_reduce_f32(const float *a, int64_t n, int64_t G, float *part)
{
  int64_t C = (n + G * PRIM_LANES - 1) / (G * PRIM_LANES) * PRIM_LANES;
  int64_t g = (n + C - 1) / C;
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < g; j++) {
    int64_t lo = j * C, hi = lo + C < n ? lo + C : n;
    part[j] = chunk_sum_f32(a, lo, hi);
  }
  float s = 0.0f;
  for (int64_t j = 0; j < g; j++) s = s + part[j];
  return s;
}

/* gpu.scan(a, "+", out) of int32 into int32 (sums in int64, stored
** narrowed); part: G int64 of scratch. */
void ref_scan_i32(const int32_t *a, int32_t *out, int64_t n, int64_t G, int64_t *part)
{
  int64_t C = (n + G * PRIM_LANES - 1) / (G * PRIM_LANES) * PRIM_LANES;
  int64_t g = (n + C - 1) / C;
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < g; j++) {
    int64_t lo = j * C, hi = lo + C < n ? lo + C : n, s = 0;
    for (int64_t i = lo; i < hi; i++) s += a[i];
    part[j] = s;
  }
  int64_t c = 0;
  for (int64_t j = 0; j < g; j++) {
    int64_t t = part[j];
    part[j] = c;
    c += t;
  }
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < g; j++) {
    int64_t lo = j * C, hi = lo + C < n ? lo + C : n, s = part[j];
    for (int64_t i = lo; i < hi; i++) {
      s += a[i];
      out[i] = (int32_t)s;
    }
  }
}

/* gpu.sort(keys) of int32: LSD radix, 8 bits a pass, G chunks; tmp: n
** uint32, hist: 256 * G int64. */
void ref_sort_i32(int32_t *keys, int64_t n, int64_t G, uint32_t *tmp, int64_t *hist)
{
  uint32_t *u = (uint32_t *)keys, *src = u, *dst = tmp;
  int64_t C = (n + G - 1) / G;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) u[i] ^= 0x80000000u;
  for (int shift = 0; shift < 32; shift += 8) {
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < G; j++) {
      int64_t cnt[256] = { 0 };
      int64_t lo = j * C, hi = lo + C < n ? lo + C : n;
      for (int64_t i = lo; i < hi; i++) cnt[(src[i] >> shift) & 255]++;
      for (int d = 0; d < 256; d++) hist[d * G + j] = cnt[d];
    }
    int64_t s = 0;
    for (int64_t i = 0; i < 256 * G; i++) {
      int64_t c = hist[i];
      hist[i] = s;
      s += c;
    }
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < G; j++) {
      int64_t off[256];
      for (int d = 0; d < 256; d++) off[d] = hist[d * G + j];
      int64_t lo = j * C, hi = lo + C < n ? lo + C : n;
      for (int64_t i = lo; i < hi; i++) dst[off[(src[i] >> shift) & 255]++] = src[i];
    }
    uint32_t *t = src;
    src = dst;
    dst = t;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) u[i] ^= 0x80000000u;
}

/* gpu.fill(a, v) and gpu.copy(dst, src) of floats: the loops a C
** programmer writes (the compiler vectorizes them; OpenMP splits them). */
void ref_fill_f32(float *a, int64_t n, float v)
{
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) a[i] = v;
}

void ref_copy_f32(float *dst, const float *src, int64_t n)
{
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) dst[i] = src[i];
}

/* The library's second wave (issue 37), the algorithms of
** lua/gpujit/prims_select.lua, prims_sort.lua (argsort), prims_segment.lua
** and hashgrid.lua, with gpujit's item counts passed in. */

/* reduce's chunking: C a multiple of the lanes, g chunks. */
static int64_t prim_chunk(int64_t n, int64_t G, int64_t *g)
{
  int64_t C = (n + G * PRIM_LANES - 1) / (G * PRIM_LANES) * PRIM_LANES;
  *g = (n + C - 1) / C;
  return C;
}

/* gpu.compact(a, function(x) return x > 0 end, dst) of int32: count,
** offsets, scatter; returns the count.  part: G int64. */
int64_t ref_compact_i32(const int32_t *a, int32_t *dst, int64_t n, int64_t G, int64_t *part)
{
  int64_t g, C = prim_chunk(n, G, &g);
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < g; j++) {
    int64_t lo = j * C, hi = lo + C < n ? lo + C : n, c = 0;
    for (int64_t i = lo; i < hi; i++) c += a[i] > 0;
    part[j] = c;
  }
  int64_t s = 0;
  for (int64_t j = 0; j < g; j++) {
    int64_t c = part[j];
    part[j] = s;
    s += c;
  }
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < g; j++) {
    int64_t lo = j * C, hi = lo + C < n ? lo + C : n, o = part[j];
    for (int64_t i = lo; i < hi; i++)
      if (a[i] > 0) dst[o++] = a[i];
  }
  return s;
}

/* gpu.argsort(keys, { out = idx }) of int32: the keys copied in unsigned
** order with their indices, 4 LSD passes of 8 bits moving both (a pass
** whose digit is the same for every key skipped, as gpujit does).  k1, k2:
** n uint32; i2: n int32; hist: 256 * G int64. */
void ref_argsort_i32(const int32_t *keys, int32_t *idx, int64_t n, int64_t G, uint32_t *k1,
                     uint32_t *k2, int32_t *i2, int64_t *hist)
{
  uint32_t *src = k1, *dst = k2;
  int32_t *vs = idx, *vd = i2;
  int64_t C = (n + G - 1) / G;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    k1[i] = (uint32_t)keys[i] ^ 0x80000000u;
    idx[i] = (int32_t)i;
  }
  for (int shift = 0; shift < 32; shift += 8) {
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < G; j++) {
      int64_t cnt[256] = { 0 };
      int64_t lo = j * C, hi = lo + C < n ? lo + C : n;
      for (int64_t i = lo; i < hi; i++) cnt[(src[i] >> shift) & 255]++;
      for (int d = 0; d < 256; d++) hist[d * G + j] = cnt[d];
    }
    int64_t s = 0;
    for (int64_t i = 0; i < 256 * G; i++) {
      int64_t c = hist[i];
      hist[i] = s;
      s += c;
    }
    int one = 0;
    for (int d = 0; d < 256; d++)
      if ((d < 255 ? hist[(d + 1) * G] : n) - hist[d * G] == n) one = 1;
    if (one) continue;
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < G; j++) {
      int64_t off[256];
      for (int d = 0; d < 256; d++) off[d] = hist[d * G + j];
      int64_t lo = j * C, hi = lo + C < n ? lo + C : n;
      for (int64_t i = lo; i < hi; i++) {
        int64_t o = off[(src[i] >> shift) & 255]++;
        dst[o] = src[i];
        vd[o] = vs[i];
      }
    }
    uint32_t *t = src;
    src = dst;
    dst = t;
    int32_t *tv = vs;
    vs = vd;
    vd = tv;
  }
  if (vs != idx) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) idx[i] = vs[i];
  }
}

/* gpu.reduce_by_key(keys, values, "+", { keys_out, values_out }) of int32
** keys and float values: tails and head counts, carries, write; returns
** the segment count.  tail: G floats; nh: G int64. */
int64_t ref_reduce_by_key_i32f(const int32_t *k, const float *v, int32_t *ko, float *vo,
                               int64_t n, int64_t G, float *tail, int64_t *nh)
{
  int64_t g, C = prim_chunk(n, G, &g);
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < g; j++) {
    int64_t lo = j * C, hi = lo + C < n ? lo + C : n, h = 0;
    float acc = v[lo];
    if (lo == 0 || k[lo] != k[lo - 1]) h = 1;
    for (int64_t i = lo + 1; i < hi; i++) {
      if (k[i] != k[i - 1]) {
        h++;
        acc = v[i];
      } else {
        acc = acc + v[i];
      }
    }
    tail[j] = acc;
    nh[j] = h;
  }
  float acc = tail[0];
  int64_t s = nh[0];
  nh[0] = 0;
  for (int64_t j = 1; j < g; j++) {
    float t = tail[j];
    int64_t h = nh[j];
    tail[j] = acc;
    nh[j] = s;
    s += h;
    acc = h > 0 ? t : acc + t;
  }
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < g; j++) {
    int64_t lo = j * C, hi = lo + C < n ? lo + C : n, o = nh[j];
    float a;
    if (lo == 0 || k[lo] != k[lo - 1]) {
      if (lo > 0) vo[o - 1] = tail[j];
      ko[o++] = k[lo];
      a = v[lo];
    } else {
      a = tail[j] + v[lo];
    }
    for (int64_t i = lo + 1; i < hi; i++) {
      if (k[i] != k[i - 1]) {
        vo[o - 1] = a;
        ko[o++] = k[i];
        a = v[i];
      } else {
        a = a + v[i];
      }
    }
    if (hi == n) vo[o - 1] = a;
  }
  return s;
}

/* The hash grid's query (bench/prims.lua's kernel): for every point, the
** points within sqrt(r2) found through the 3 x 3 slots around its cell. */
static int64_t grid_wrap(int64_t c, int64_t dim)
{
  int64_t m = c % dim;
  return m < 0 ? m + dim : m;
}

void ref_grid_count2(const double *px, const double *py, const int32_t *cs, const int32_t *ce,
                     const int32_t *order, int32_t *cnt, double inv, int64_t dim, double r2,
                     int64_t n)
{
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    int64_t cx = (int64_t)floor(px[i] * inv), cy = (int64_t)floor(py[i] * inv);
    int32_t c = 0;
    for (int64_t oy = -1; oy <= 1; oy++)
      for (int64_t ox = -1; ox <= 1; ox++) {
        int64_t s = grid_wrap(cx + ox, dim) + dim * grid_wrap(cy + oy, dim);
        for (int32_t k = cs[s]; k < ce[s]; k++) {
          int32_t j = order[k];
          double dx = px[j] - px[i], dy = py[j] - py[i];
          if (dx * dx + dy * dy < r2) c++;
        }
      }
    cnt[i] = c;
  }
}

/* The same count over all pairs. */
void ref_pairs_count2(const double *px, const double *py, int32_t *cnt, double r2, int64_t n)
{
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    int32_t c = 0;
    for (int64_t j = 0; j < n; j++) {
      double dx = px[j] - px[i], dy = py[j] - py[i];
      if (dx * dx + dy * dy < r2) c++;
    }
    cnt[i] = c;
  }
}
