-- PoCL 3.1 (opencl only; cpu agrees with LuaJIT): a gpu.barrier() inside a uniform if
-- whose condition is false for the whole group (ri[1] = -859), in a group 1 wide in x; the
-- statements after the if ran twice for work item 0 (it read back the 0 it stored: ol[0]
-- was 0, LuaJIT gives 845 % 10 = 5).  The same OpenCL C fails on PoCL alone; gpujit now
-- puts a barrier at the join of such a branch on PoCL (gj_job.join_barriers).
-- gpujit fuzz reproducer (docs/fuzzing.md)
-- seed 13542, backend opencl, precision double
-- mismatch:ol: ol[0] (int64_t): expected 5, got 0
return {
  precision = "double", N = 3, M = 30,
  launch = { global = { 1, 1, 3 }, group = { 1, 1, 3 } },
  wg = true,
  data = {
    s = 21.875,
    ri = {
      599, -859, -707, 334, -489, -461, -1, 455, -206, 673,
      2147483647, -308, 242, 321, 404, -389, 879, -764, -110, -396,
      -271, -76, 297, 111, 369, 390, -808, -636, 480, -976,
    },
    rl = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    },
    ru = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    },
    rf = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    },
    rd = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    },
    oi = {
      -756, 24, 633, 845, 747, -969, -76, 418, 488, -2147483648,
      -172, -443,
    },
    ol = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0,
    },
    ou = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0,
    },
    oh = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0,
    },
    of = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0,
    },
    od = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0,
    },
    ac = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0,
    },
    af = { 0, 0, 0, 0, 0, 0, 0, 0 },
    ad = { 0, 0, 0, 0, 0, 0, 0, 0 },
    ax = { 0, 0, 0, 0, 0, 0, 0, 0 },
  },
  source = [==[
local gpu = ...
local bit, math = bit, math
local GV = 3
return function(n, s, ri, rl, ru, rf, rd, oi, ol, ou, oh, of, od, ac, af, ad, ax)
  local gx, gy, gz = gpu.global_id(0), gpu.global_id(1), gpu.global_id(2)
  local g = gx + gpu.global_size(0) * (gy + gpu.global_size(1) * gz)
  local lx, ly, lz = gpu.local_id(0), gpu.local_id(1), gpu.local_id(2)
  local l = lx + gpu.group_size(0) * (ly + gpu.group_size(1) * lz)
  local wx, wy, wz = gpu.group_id(0), gpu.group_id(1), gpu.group_id(2)
  local isrc, idst = gpu.shared("int32_t", GV), gpu.shared("int32_t", GV)
  local xsrc, xdst = gpu.shared("double", GV), gpu.shared("double", GV)
  local sc = gpu.shared("int32_t", GV)
  isrc[l] = 0
  xsrc[l] = 0.5
  gpu.barrier()
  if (ri[1] >= 0) then
    idst[l] = 0
    xdst[l] = 0.5
    gpu.barrier()
    isrc, idst = idst, isrc
    xsrc, xdst = xdst, xsrc
    idst[l] = 0
    xdst[l] = 0.5
  end
  ol[(g * 4 + 0 % 4)] = ((oi[(g * 4 + 3)] % 10) % 30)
  oi[(g * 4 + 3)] = 0
end
]==],
}
