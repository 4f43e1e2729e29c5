/*
** The hand-vectorized C references of `make bench` (bench/bench.lua):
** mandelbrot, the naive matmul and n-body written with intrinsics, for
** AVX2 and for AVX-512, with bench/ref.c's signatures and OpenMP loops
** (same schedules, as many threads as gpujit's pool: ref_simd_init).  The
** Makefile builds this file with gcc and with clang-15 and the flags of
** bench/ref.c (-ffp-contract=off always: no fused multiply-adds), like
** ref.c into a shared object of its own.
**
** Contract: every ref_simd_* kernel computes what ref.c's function of the
** same name (without "simd_") computes, bit for bit: the same operations
** in the same order per work item, the items in the lanes (the bodies are
** in bench/ref_simd_body.h, written once for both widths).  The code for
** each instruction set carries a target attribute, so the library builds
** for any x86-64 (and elsewhere, without the SIMD paths); the set a kernel
** runs is chosen at run time from what the CPU supports
** (__builtin_cpu_supports) by ref_simd_select.  Where the CPU has neither
** set ref_simd_isa() is "none" and the kernels must not be called (they
** then write nothing).
*/
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_SIMD 1

/* The scalar work items of ref.c, for what is left over after the vector
** blocks (ref.c's arithmetic exactly). */
static int32_t mandel_px(int px, int py, int W, int H, int maxit)
{
  float cr = -2.0f + 3.0f * px / W, ci = -1.5f + 3.0f * py / H;
  float zr = 0.0f, zi = 0.0f;
  int it = 0;
  while (it < maxit && zr * zr + zi * zi <= 4.0f) {
    float t = zr * zr - zi * zi + cr;
    zi = 2.0f * zr * zi + ci;
    zr = t;
    it++;
  }
  return it;
}

static float matmul_el(const float *A, const float *B, int N, int row, int col)
{
  float acc = 0.0f;
  for (int k = 0; k < N; k++) acc = acc + A[(size_t)row * N + k] * B[(size_t)k * N + col];
  return acc;
}

static void nbody_i(float *ax, float *ay, float *az, const float *px, const float *py,
                    const float *pz, const float *m, int n, float eps, int i)
{
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

#endif

typedef void (*mandel_fn)(int32_t *, int, int, int);
typedef void (*matmul_fn)(float *, const float *, const float *, int);
typedef void (*nbody_fn)(float *, float *, float *, const float *, const float *, const float *,
                         const float *, int, float);

struct simd_set {
  const char *name;
  int (*supported)(void);
  mandel_fn mandel;
  matmul_fn matmul;
  nbody_fn nbody;
};

/* Vectors of mandelbrot pixels in flight (3: the recurrence's latency is
** about three vectors' worth of operations); matmul's block of MM_R rows by
** MM_U vectors of columns (8 accumulators: B's loads shared by 4 rows).
** Chosen by timing 1-4 and 1x4-4x2 on the 2-core VM (noisy). */
#ifndef MAND_U
#define MAND_U 3
#endif
#ifndef MM_U
#define MM_U 2
#endif
#ifndef MM_R
#define MM_R 4
#endif

#ifdef HAVE_SIMD
/* ---- AVX2: 8 lanes. */
#define VW 8
#define SIMD_FN __attribute__((target("avx2")))
#define SIMD_NAME(x) x##_avx2
#define vf __m256
#define vi __m256i
#define vm __m256
#define VF_SET1(x) _mm256_set1_ps(x)
#define VF_LOAD(p) _mm256_loadu_ps(p)
#define VF_STORE(p, v) _mm256_storeu_ps((p), (v))
#define VF_ADD(a, b) _mm256_add_ps((a), (b))
#define VF_SUB(a, b) _mm256_sub_ps((a), (b))
#define VF_MUL(a, b) _mm256_mul_ps((a), (b))
#define VF_DIV(a, b) _mm256_div_ps((a), (b))
#define VF_SQRT(a) _mm256_sqrt_ps(a)
#define VF_FROM_I(v) _mm256_cvtepi32_ps(v)
#define VI_SET1(x) _mm256_set1_epi32(x)
#define VI_SEQ(b) _mm256_add_epi32(_mm256_set1_epi32(b), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define VI_STORE(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
/* a true lane of a mask is all ones: as an integer, -1 */
#define VI_INC(c, m) _mm256_sub_epi32((c), _mm256_castps_si256(m))
#define VM_ALL _mm256_castsi256_ps(_mm256_set1_epi32(-1))
#define VM_LE(a, b) _mm256_cmp_ps((a), (b), _CMP_LE_OQ)
#define VM_AND(a, b) _mm256_and_ps((a), (b))
#define VM_ANY(m) _mm256_movemask_ps(m)
#include "ref_simd_body.h"
#undef VW
#undef SIMD_FN
#undef SIMD_NAME
#undef vf
#undef vi
#undef vm
#undef VF_SET1
#undef VF_LOAD
#undef VF_STORE
#undef VF_ADD
#undef VF_SUB
#undef VF_MUL
#undef VF_DIV
#undef VF_SQRT
#undef VF_FROM_I
#undef VI_SET1
#undef VI_SEQ
#undef VI_STORE
#undef VI_INC
#undef VM_ALL
#undef VM_LE
#undef VM_AND
#undef VM_ANY

/* ---- AVX-512 (F): 16 lanes, masks in mask registers. */
#define VW 16
#define SIMD_FN __attribute__((target("avx512f")))
#define SIMD_NAME(x) x##_avx512
#define vf __m512
#define vi __m512i
#define vm __mmask16
#define VF_SET1(x) _mm512_set1_ps(x)
#define VF_LOAD(p) _mm512_loadu_ps(p)
#define VF_STORE(p, v) _mm512_storeu_ps((p), (v))
#define VF_ADD(a, b) _mm512_add_ps((a), (b))
#define VF_SUB(a, b) _mm512_sub_ps((a), (b))
#define VF_MUL(a, b) _mm512_mul_ps((a), (b))
#define VF_DIV(a, b) _mm512_div_ps((a), (b))
#define VF_SQRT(a) _mm512_sqrt_ps(a)
#define VF_FROM_I(v) _mm512_cvtepi32_ps(v)
#define VI_SET1(x) _mm512_set1_epi32(x)
#define VI_SEQ(b)                                                                            \
  _mm512_add_epi32(_mm512_set1_epi32(b),                                                     \
                   _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0))
#define VI_STORE(p, v) _mm512_storeu_si512((void *)(p), (v))
#define VI_INC(c, m) _mm512_mask_add_epi32((c), (m), (c), _mm512_set1_epi32(1))
#define VM_ALL ((__mmask16)0xffff)
#define VM_LE(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_LE_OQ)
#define VM_AND(a, b) ((__mmask16)((a) & (b)))
#define VM_ANY(m) ((m) != 0)
#include "ref_simd_body.h"

static int has_avx2(void)
{
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

static int has_avx512(void)
{
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

/* Widest first: ref_simd_select's default is the first the CPU has. */
static const struct simd_set SETS[] = {
  { .name = "avx512", .supported = has_avx512, .mandel = mandel_avx512,
    .matmul = matmul_avx512, .nbody = nbody_avx512 },
  { .name = "avx2", .supported = has_avx2, .mandel = mandel_avx2, .matmul = matmul_avx2,
    .nbody = nbody_avx2 },
};
#define NSETS ((int)(sizeof SETS / sizeof SETS[0]))
#else
/* Not x86-64: no SIMD paths (a zero-length array is not C11). */
static const struct simd_set SETS[] = { { .name = "none", .supported = NULL } };
#define NSETS 0
#endif

static const struct simd_set *cur;

/* Threads for the parallel loops (as ref.c's ref_init: passive waiting),
** and the widest set the CPU has selected. */
void ref_simd_init(int nthreads)
{
  setenv("OMP_WAIT_POLICY", "passive", 0);
  omp_set_num_threads(nthreads);
  cur = NULL;
  for (int i = 0; i < NSETS && !cur; i++)
    if (SETS[i].supported()) cur = &SETS[i];
}

/* Select the set named `name` ("avx512", "avx2") or, for NULL or "", the
** widest the CPU has.  Returns 1, or 0 (and selects nothing: the kernels
** write nothing) where the CPU lacks it or the name is unknown. */
int ref_simd_select(const char *name)
{
  cur = NULL;
  for (int i = 0; i < NSETS && !cur; i++)
    if ((!name || !*name || strcmp(name, SETS[i].name) == 0) && SETS[i].supported())
      cur = &SETS[i];
  return cur != NULL;
}

/* The selected set's name, "none" where there is none. */
const char *ref_simd_isa(void)
{
  return cur ? cur->name : "none";
}

/* The names of the sets the CPU supports, widest first, separated by
** spaces, into buf (size n); "" where there is none. */
void ref_simd_supported(char *buf, size_t n)
{
  size_t len = 0;
  if (n == 0) return;
  buf[0] = '\0';
  for (int i = 0; i < NSETS; i++) {
    size_t l = strlen(SETS[i].name);
    if (!SETS[i].supported() || len + l + 2 > n) continue;
    if (len) buf[len++] = ' ';
    memcpy(buf + len, SETS[i].name, l + 1);
    len += l;
  }
}

void ref_simd_mandel(int32_t *out, int W, int H, int maxit)
{
  if (cur) cur->mandel(out, W, H, maxit);
}

void ref_simd_matmul(float *C, const float *A, const float *B, int N)
{
  if (cur) cur->matmul(C, A, B, N);
}

void ref_simd_nbody(float *ax, float *ay, float *az, const float *px, const float *py,
                    const float *pz, const float *m, int n, float eps)
{
  if (cur) cur->nbody(ax, ay, az, px, py, pz, m, n, eps);
}
