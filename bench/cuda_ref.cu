// The benchmark kernels of bench/cuda_vs_c.lua written by hand in CUDA C:
// the same computations as bench/kernels.lua (and the OpenCL C of
// bench/opencl_vs_c.lua), one thread per work item.  Built with
//   nvcc -O3 -fmad=false -arch=sm_90 -cubin   (and -ptx for other GPUs)
// by `make bench-cuda`; -fmad=false because gpujit computes what LuaJIT
// computes, without fused multiply-adds, so both sides give the same bits.
#define TILE 16

extern "C" __global__ void saxpy(float *y, const float *x, float a, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void conv3(float *out, const float *in, const float *w, int W, int H)
{
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= 1 && y >= 1 && x < W - 1 && y < H - 1) {
    float s = 0.0f;
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++)
        s += w[(dy + 1) * 3 + dx + 1] * in[(y + dy) * W + x + dx];
    out[y * W + x] = s;
  }
}

extern "C" __global__ void mandel(int *out, int W, int H, int maxit)
{
  int px = blockIdx.x * blockDim.x + threadIdx.x;
  int py = blockIdx.y * blockDim.y + threadIdx.y;
  if (px < W && py < H) {
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

extern "C" __global__ void matmul(float *C, const float *A, const float *B, int N, int K)
{
  __shared__ float tA[TILE * TILE], tB[TILE * TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int col = blockIdx.x * TILE + tx, row = blockIdx.y * TILE + ty;
  float acc = 0.0f;
  for (int t = 0; t < K / TILE; t++) {
    tA[ty * TILE + tx] = A[row * K + t * TILE + tx];
    tB[ty * TILE + tx] = B[(t * TILE + ty) * N + col];
    __syncthreads();
    for (int k = 0; k < TILE; k++) acc += tA[ty * TILE + k] * tB[k * TILE + tx];
    __syncthreads();
  }
  C[row * N + col] = acc;
}

// The launch-overhead probe: the same one-item kernel as gpujit's side.
extern "C" __global__ void touch(double *o, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) o[i] = i;
}
