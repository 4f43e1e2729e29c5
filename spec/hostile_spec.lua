-- Hostile input at the API: every bad call is a clear Lua error (naming
-- the kernel, the argument or the option), the process stays alive and the
-- module keeps working: after each error a launch is checked to work.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local nan, inf = 0 / 0, math.huge

-- Call fn(...) expecting an error that contains every one of `words`
-- (plain, case-insensitive); then the module must still launch.
local function expect(bk, words, fn, ...)
  local msg = H.error_of(fn, ...)
  local low = msg:lower()
  for _, w in ipairs(words) do
    if not low:find(w:lower(), 1, true) then
      error("error message lacks '" .. w .. "':\n  " .. msg, 2)
    end
  end
  H.sanity(bk)
  return msg
end

local function store_kernel(bk, opts)
  local o = { name = "k_store" }
  for k, v in pairs(opts or {}) do o[k] = v end
  return H.kernel(bk, function(a, x)
    local i = gpu.global_id()
    a[i] = x --@store
  end, o)
end

local backends = {}
for _, bk in ipairs(H.backends) do
  if bk ~= "sim" then backends[#backends + 1] = bk end
end
backends[#backends + 1] = "sim"

describe("hostile gpu.kernel", function()
  local bk = H.backends[1]
  it("refuses what is not a function, bad options and unknown options", function()
    expect(bk, { "gpu.kernel", "expected" }, gpu.kernel, nil)
    expect(bk, { "gpu.kernel", "expected" }, gpu.kernel, 42)
    expect(bk, { "options must be a table" }, gpu.kernel, function() end, "fast")
    expect(bk, { "unknown option 'speed'" }, gpu.kernel, function() end, { speed = 1 })
    expect(bk, { "'boundscheck' must be a boolean" }, gpu.kernel, function() end, { boundscheck = 1 })
    expect(bk, { "precision" }, gpu.kernel, function() end, { precision = "half" })
  end)
end)

for _, bk in ipairs(backends) do
  describe("hostile launches [" .. bk .. "]", function()
    local k, a
    before_each(function()
      k = store_kernel(bk)
      a = ffi.new("double[8]")
    end)

    it("a missing, nil, negative, NaN, infinite or fractional size", function()
      for _, n in ipairs({ -1, nan, inf, -inf, 1.5, 2 ^ 63 }) do
        expect(bk, { "kernel 'k_store'", "work items" }, k.launch, k, n, a, 1)
      end
      expect(bk, { "kernel 'k_store'", "expected a number or a table" }, k.launch, k)
      expect(bk, { "kernel 'k_store'", "expected a number or a table" }, k.launch, k, nil, a, 1)
      expect(bk, { "kernel 'k_store'", "expected a number or a table" }, k.launch, k, "8", a, 1)
    end)

    it("bad launch shapes", function()
      expect(bk, { "'global'" }, k.launch, k, {}, a, 1)
      expect(bk, { "'global'", "non-negative" }, k.launch, k, { global = { -1, 2 } }, a, 1)
      expect(bk, { "'global'", "non-negative" }, k.launch, k, { global = nan }, a, 1)
      expect(bk, { "'global' must have 1 to 3 sizes" }, k.launch, k, { global = { 1, 1, 1, 1 } }, a, 1)
      expect(bk, { "'global' must have 1 to 3 sizes" }, k.launch, k, { global = {} }, a, 1)
      for _, g in ipairs({ 0, -1, nan, 1.5 }) do
        expect(bk, { "'group'", "positive" }, k.launch, k, { global = 8, group = g }, a, 1)
      end
      expect(bk, { "'group' must have the same shape" }, k.launch, k, { global = 8, group = { 4, 2 } }, a, 1)
    end)

    if bk ~= "sim" then
      it("absurd sizes: a group above the device's maximum, a global size that overflows", function()
        expect(bk, { "k_store", "work-group size", "exceeds the device maximum" },
          k.launch, k, { global = 8, group = 2 ^ 40 }, a, 1)
        expect(bk, { "k_store", "global size", "too large" },
          k.launch, k, { global = { 2 ^ 31, 2 ^ 31, 4 } }, a, 1)
        expect(bk, { "k_store", "global size", "too large" },
          k.launch, k, { global = { 2 ^ 21, 2 ^ 21, 2 ^ 22 } }, a, 1)
      end)
    end

    it("wrong argument counts and types name the argument", function()
      expect(bk, { "bad argument #2 'x'", "k_store", "no value" }, k.launch, k, 8, a)
      expect(bk, { "bad argument #3", "k_store", "takes 2 arguments" }, k.launch, k, 8, a, 1, 2)
      expect(bk, { "bad argument #1 'a'", "got nil" }, k.launch, k, 8, nil, 1)
      expect(bk, { "bad argument #1 'a'", "'string'" }, k.launch, k, 8, "abc", 1)
      expect(bk, { "bad argument #1 'a'", "'function'" }, k.launch, k, 8, print, 1)
      expect(bk, { "bad argument #1 'a'", "'userdata'" }, k.launch, k, 8, io.stdout, 1)
      expect(bk, { "bad argument #1 'a'", "'thread'" }, k.launch, k, 8, coroutine.create(print), 1)
      expect(bk, { "bad argument #2 'x'", "'string'" }, k.launch, k, 8, a, "1")
      expect(bk, { "bad argument #1 'a'", "element [2]" }, k.launch, k, 2, { 1, "x" }, 1)
      expect(bk, { "bad argument #1 'a'", "element [1]" }, k.launch, k, 1, { true }, 1)
    end)

    it("a NaN scalar is a value like any other", function()
      k:launch(8, a, nan)
      for i = 0, 7 do assert.is_true(a[i] ~= a[i]) end
    end)

    it("an array where the kernel uses a number is an error at the kernel's line", function()
      -- compiled: a compile error; sim: the FFI store's error, at the same line
      local what = bk == "sim" and "cannot convert" or "cannot store an array"
      expect(bk, { "hostile_spec.lua:" .. H.line_of("--@store") .. ":", "k_store", what },
        k.launch, k, 8, a, { 1 })
    end)

    it("arrays shorter than the kernel is told: caught with boundscheck", function()
      local kb = store_kernel(bk, { boundscheck = true })
      local short = ffi.new("double[4]")
      expect(bk, { "out of bounds", "argument 1 'a'", "length 4", "k_store" }, kb.launch, kb, 8, short, 1)
      kb:launch(4, short, 2)
      for i = 0, 3 do assert.are.equal(2, short[i]) end
    end)

    it("an index far outside any allocation is an error with boundscheck, not a crash", function()
      local kf = H.kernel(bk, function(b, off)
        b[off] = 1
      end, { name = "k_far", boundscheck = true })
      expect(bk, { "index 1099511627776 is out of bounds", "k_far" }, kf.launch, kf, 1, a, 2 ^ 40)
      expect(bk, { "index -1099511627776 is out of bounds", "k_far" }, kf.launch, kf, 1, a, -2 ^ 40)
    end)
  end)
end

for _, bk in ipairs(backends) do
  describe("hostile gpu.array [" .. bk .. "]", function()
    H.use_in_block(bk)

    it("bad lengths and element types", function()
      for _, n in ipairs({ -1, nan, inf, 1.5, "4", {} }) do
        expect(bk, { "gpu.array", "length" }, gpu.array, "float", n)
      end
      expect(bk, { "gpu.array", "element type" }, gpu.array, "nope", 4)
      expect(bk, { "gpu.array", "element type" }, gpu.array, nil, 4)
    end)

    it("allocations larger than the device: an error, then allocation works", function()
      -- 2^60 bytes
      expect(bk, { "gpu.array", "too large" }, gpu.array, "float", 2 ^ 58)
      -- 2^50 bytes: a number Lua holds exactly, more than any device here
      expect(bk, { "gpu.array", "cannot allocate 1125899906842624 bytes" }, gpu.array, "double", 2 ^ 47)
      expect(bk, { "gpu.zeros", "cannot allocate" }, gpu.zeros, "double", 2 ^ 47)
      local g = gpu.array("double", 8)
      local k = store_kernel(bk)
      k:launch(8, g, 3)
      local host = g:to_host()
      for i = 0, 7 do assert.are.equal(3, host[i]) end
    end)

    it("a freed gpu.array is refused by a launch", function()
      local g = gpu.array("double", 8)
      g:free()
      local k = store_kernel(bk)
      expect(bk, { "bad argument #1 'a'", "freed" }, k.launch, k, 8, g, 1)
    end)
  end)
end

-- A lookup the compiler makes (an upvalue's field, a global) that raises an
-- error in a metamethod: the launch raises that error, as running the
-- function in LuaJIT would, whatever the typer would have made of the nil;
-- the compile leaks nothing and the module keeps working (gj_kv.h).
for _, bk in ipairs(backends) do
  describe("metamethods that raise errors at compile time [" .. bk .. "]", function()
    local strict = { __index = function(_, key) error("undeclared " .. key, 2) end }

    it("a field's __index", function()
      local cfg = setmetatable({}, strict)
      local k = H.kernel(bk, function(a)
        local i = gpu.global_id(0)
        a[i] = cfg.scale
      end)
      for _ = 1, 2 do
        expect(bk, { "undeclared scale" }, k.launch, k, 4, ffi.new("double[4]"))
      end
    end)

    it("a field's __index under `or`, where nil would have compiled", function()
      local cfg = setmetatable({}, strict)
      local k = H.kernel(bk, function(a)
        local i = gpu.global_id(0)
        a[i] = cfg.scale or 1
      end)
      expect(bk, { "undeclared scale" }, k.launch, k, 4, ffi.new("double[4]"))
    end)

    it("a global in a strict environment", function()
      local f = function(a)
        local i = gpu.global_id(0)
        a[i] = undeclared_global or 2   -- luacheck: ignore 113
      end
      setfenv(f, setmetatable({ gpu = gpu }, strict))
      local k = H.kernel(bk, f)
      expect(bk, { "undeclared undeclared_global" }, k.launch, k, 4, ffi.new("double[4]"))
    end)
  end)
end
