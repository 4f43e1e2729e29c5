-- Counter-based random numbers: Philox4x32-10 (Salmon, Moraes, Dror and
-- Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC'11; the generator
-- of cuRAND and Random123), and uniform and normal numbers drawn from it by
-- (seed, counter).  docs/api.md, "Random numbers".
--
-- These are plain Lua functions in the kernel subset: a kernel that calls
-- gpu.philox4x32 compiles it as a device function, and the host calls the
-- very same code, so kernels on every backend, `sim` and the host agree bit
-- for bit.  They are written so that every value is an integer below 2^53:
-- the 32 x 32-bit products are taken in 16-bit limbs, so doubles (LuaJIT)
-- and the kernel's integers (whose ranges the typer follows through bit.band
-- and bit.rshift) hold each one exactly.
local bit = require("bit")
local band, bxor, rshift, tobit = bit.band, bit.bxor, bit.rshift, bit.tobit
local sqrt, log, cos = math.sqrt, math.log, math.cos

local M = {}

local TWO32 = 4294967296

-- a * b for a, b in [0, 2^32) as (high 32 bits, low 32 bits).
local function mulhilo(a, b)
  local al, ah = band(a, 0xFFFF), rshift(a, 16)
  local bl, bh = band(b, 0xFFFF), rshift(b, 16)
  local ll, lh, hl = al * bl, al * bh, ah * bl
  local mid = rshift(ll, 16) + band(lh, 0xFFFF) + band(hl, 0xFFFF)
  local lo = band(mid, 0xFFFF) * 65536 + band(ll, 0xFFFF)
  local hi = ah * bh + rshift(lh, 16) + rshift(hl, 16) + rshift(mid, 16)
  return hi, lo
end

-- Philox4x32-10 of the counter (c0, c1, c2, c3) under the key (k0, k1):
-- four integers in [0, 2^32).  Each argument is taken modulo 2^32, as
-- bit.tobit takes it (so an argument should be an integer).
function M.philox4x32(c0, c1, c2, c3, k0, k1)
  c0, c1 = tobit(c0) % TWO32, tobit(c1) % TWO32
  c2, c3 = tobit(c2) % TWO32, tobit(c3) % TWO32
  k0, k1 = tobit(k0) % TWO32, tobit(k1) % TWO32
  for r = 1, 10 do
    local hi0, lo0 = mulhilo(0xD2511F53, c0)
    local hi1, lo1 = mulhilo(0xCD9E8D57, c2)
    c0, c1 = bxor(hi1, c1, k0) % TWO32, lo1
    c2, c3 = bxor(hi0, c3, k1) % TWO32, lo0
    if r < 10 then   -- the Weyl key schedule, between rounds
      k0 = (k0 + 0x9E3779B9) % TWO32
      k1 = (k1 + 0xBB67AE85) % TWO32
    end
  end
  return c0, c1, c2, c3
end
local philox = M.philox4x32

-- The low and high 32-bit words of a whole number x below 2^53, or of an
-- int64_t/uint64_t cdata.  x - lo is a multiple of 2^32 below 2^53, which
-- even a float holds exactly (precision = "single" kernels), and so its
-- quotient by 2^32.  A division, not a product with 2^-32: on a C integer
-- LuaJIT converts 2^-32 to an integer, 0 (the high word of an int64_t
-- counter was lost, on the host and, computed as LuaJIT does, in kernels).
local function words(x)
  local lo = x % TWO32
  return lo, (x - lo) / TWO32
end

-- The four words for (seed, counter): the counter in the low two counter
-- words, the seed as the key.
local function draw(seed, counter)
  local c0, c1 = words(counter)
  local k0, k1 = words(seed)
  return philox(c0, c1, 0, 0, k0, k1)
end

-- A number in [0, 1): 53 random bits, a multiple of 2^-53.
function M.uniform(seed, counter)
  local x0, x1 = draw(seed, counter)
  return (rshift(x0, 5) * 67108864 + rshift(x1, 6)) * (1 / 9007199254740992)
end

-- A number in [0, 1) that `float` holds exactly: 24 random bits, a multiple
-- of 2^-24 (for precision = "single" kernels and float arrays: the 53-bit
-- uniform may round to 1 in a float).
function M.uniform_float(seed, counter)
  local x0 = draw(seed, counter)
  return rshift(x0, 8) * (1 / 16777216)
end

-- A standard normal number (Box-Muller on two 53-bit uniforms).  The
-- uniforms are exact; log, sqrt and cos are the backend's, so backends may
-- differ in the last bits.
function M.normal(seed, counter)
  local x0, x1, x2, x3 = draw(seed, counter)
  local u1 = (rshift(x0, 5) * 67108864 + rshift(x1, 6) + 1) * (1 / 9007199254740992)
  local u2 = (rshift(x2, 5) * 67108864 + rshift(x3, 6)) * (1 / 9007199254740992)
  return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2)
end

return M
