/*
** The hand-vectorized kernels of bench/ref_simd.c, written once over the
** vector macros that ref_simd.c defines for each instruction set (VW
** lanes of float; vf, vi, vm: float, int32 and mask vectors; SIMD_FN: the
** target attribute; SIMD_NAME(x): the function's name for the set) and
** included once per set.  No include guard: it is meant to be included
** more than once.
**
** Each kernel does bench/ref.c's arithmetic, operation for operation and
** in the same order, with the work items of ref.c's parallel loop (pixels,
** columns, bodies) in the lanes; the results are those of the scalar C bit
** for bit (bench/bench.lua checks it).  Built with -ffp-contract=off: the
** intrinsics are plain vector operations to the compiler, which would fuse
** a multiply and an add otherwise.  What is left over from a row (fewer
** items than a block) is done by the scalar helpers of ref_simd.c.
*/

/* Mandelbrot: MAND_U vectors of one row's pixels at once, so that the
** independent recurrences hide each other's latency.  A lane counts the
** steps at which it is still inside (|z|^2 <= 4 and not yet out); the
** block stops when no lane of it is, or after maxit steps.  Lanes that
** escaped keep iterating (their z is not used again). */
SIMD_FN static void SIMD_NAME(mandel)(int32_t *out, int W, int H, int maxit)
{
  const int step = VW * MAND_U, wv = W - W % step;
#pragma omp parallel for schedule(dynamic, 4)
  for (int py = 0; py < H; py++) {
    const vf ci = VF_SET1(-1.5f + 3.0f * py / H), four = VF_SET1(4.0f), two = VF_SET1(2.0f);
    for (int x0 = 0; x0 < wv; x0 += step) {
      vf cr[MAND_U], zr[MAND_U], zi[MAND_U];
      vm in[MAND_U];
      vi it[MAND_U];
      for (int u = 0; u < MAND_U; u++) {
        const vf px = VF_FROM_I(VI_SEQ(x0 + u * VW));
        cr[u] = VF_ADD(VF_SET1(-2.0f), VF_DIV(VF_MUL(VF_SET1(3.0f), px), VF_SET1((float)W)));
        zr[u] = VF_SET1(0.0f);
        zi[u] = VF_SET1(0.0f);
        in[u] = VM_ALL;
        it[u] = VI_SET1(0);
      }
      for (int s = 0; s < maxit; s++) {
        int any = 0;
        for (int u = 0; u < MAND_U; u++) {
          const vf r2 = VF_ADD(VF_MUL(zr[u], zr[u]), VF_MUL(zi[u], zi[u]));
          in[u] = VM_AND(in[u], VM_LE(r2, four));
          it[u] = VI_INC(it[u], in[u]);
          any |= VM_ANY(in[u]);
        }
        if (!any) break;
        for (int u = 0; u < MAND_U; u++) {
          const vf t = VF_ADD(VF_SUB(VF_MUL(zr[u], zr[u]), VF_MUL(zi[u], zi[u])), cr[u]);
          zi[u] = VF_ADD(VF_MUL(VF_MUL(two, zr[u]), zi[u]), ci);
          zr[u] = t;
        }
      }
      for (int u = 0; u < MAND_U; u++) VI_STORE(out + (size_t)py * W + x0 + u * VW, it[u]);
    }
    for (int px = wv; px < W; px++) out[(size_t)py * W + px] = mandel_px(px, py, W, H, maxit);
  }
}

/* C = A B: MM_R rows by MM_U vectors of columns at a time, each vector its
** own accumulator (MM_R * MM_U independent add chains), B's vectors loaded
** once for the MM_R rows, A's elements broadcast over the lanes.  Columns
** and rows left over from the blocks are done by the scalar helper. */
SIMD_FN static void SIMD_NAME(matmul)(float *C, const float *A, const float *B, int N)
{
  const int step = VW * MM_U, nb = N - N % step, nr = N / MM_R;
#pragma omp parallel for schedule(static)
  for (int rb = 0; rb < nr; rb++) {
    const int row = rb * MM_R;
    for (int col = 0; col < nb; col += step) {
      vf acc[MM_R][MM_U];
      for (int r = 0; r < MM_R; r++)
        for (int u = 0; u < MM_U; u++) acc[r][u] = VF_SET1(0.0f);
      for (int k = 0; k < N; k++) {
        const float *b = B + (size_t)k * N + col;
        vf bv[MM_U];
        for (int u = 0; u < MM_U; u++) bv[u] = VF_LOAD(b + u * VW);
        for (int r = 0; r < MM_R; r++) {
          const vf ak = VF_SET1(A[(size_t)(row + r) * N + k]);
          for (int u = 0; u < MM_U; u++) acc[r][u] = VF_ADD(acc[r][u], VF_MUL(ak, bv[u]));
        }
      }
      for (int r = 0; r < MM_R; r++)
        for (int u = 0; u < MM_U; u++) VF_STORE(C + (size_t)(row + r) * N + col + u * VW, acc[r][u]);
    }
    for (int r = 0; r < MM_R; r++)
      for (int col = nb; col < N; col++) C[(size_t)(row + r) * N + col] = matmul_el(A, B, N, row + r, col);
  }
  for (int row = nr * MM_R; row < N; row++)
    for (int col = 0; col < N; col++) C[(size_t)row * N + col] = matmul_el(A, B, N, row, col);
}

/* n-body: VW bodies i in the lanes, body j broadcast. */
SIMD_FN static void SIMD_NAME(nbody)(float *ax, float *ay, float *az, const float *px,
                                     const float *py, const float *pz, const float *m, int n,
                                     float eps)
{
  const int nv = n - n % VW;
  const vf e = VF_SET1(eps);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < nv; i += VW) {
    const vf xi = VF_LOAD(px + i), yi = VF_LOAD(py + i), zi = VF_LOAD(pz + i);
    vf sx = VF_SET1(0.0f), sy = VF_SET1(0.0f), sz = VF_SET1(0.0f);
    for (int j = 0; j < n; j++) {
      const vf dx = VF_SUB(VF_SET1(px[j]), xi), dy = VF_SUB(VF_SET1(py[j]), yi),
               dz = VF_SUB(VF_SET1(pz[j]), zi);
      const vf d2 = VF_ADD(VF_ADD(VF_ADD(VF_MUL(dx, dx), VF_MUL(dy, dy)), VF_MUL(dz, dz)), e);
      const vf f = VF_DIV(VF_SET1(m[j]), VF_MUL(d2, VF_SQRT(d2)));
      sx = VF_ADD(sx, VF_MUL(f, dx));
      sy = VF_ADD(sy, VF_MUL(f, dy));
      sz = VF_ADD(sz, VF_MUL(f, dz));
    }
    VF_STORE(ax + i, sx);
    VF_STORE(ay + i, sy);
    VF_STORE(az + i, sz);
  }
  for (int i = nv; i < n; i++) nbody_i(ax, ay, az, px, py, pz, m, n, eps, i);
}
