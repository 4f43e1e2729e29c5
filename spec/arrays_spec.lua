-- Array arguments: FFI arrays (0-based, VLA and fixed size), FFI pointers,
-- Lua tables (1-based, written elements copied back into the same table) and
-- gpu.array; every element type int8_t .. uint64_t, float, double, bool.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

-- Values per element type, including the extremes.
local VALUES = {
  int8_t = { 0, 1, -1, 127, -128, 42, -7 },
  uint8_t = { 0, 1, 255, 128, 42, 200 },
  int16_t = { 0, 1, -1, 32767, -32768, 1234, -4321 },
  uint16_t = { 0, 1, 65535, 32768, 1234 },
  int32_t = { 0, 1, -1, 2147483647, -2147483648, 123456789, -987654321 },
  uint32_t = { 0, 1, 4294967295, 2147483648, 3000000000 },
  int64_t = { 0LL, 1LL, -1LL, 9223372036854775807LL, -9223372036854775807LL - 1, 9007199254740993LL,
    -9007199254740993LL, 0x123456789abcdefLL },
  uint64_t = { 0ULL, 1ULL, 18446744073709551615ULL, 9223372036854775808ULL, 9007199254740993ULL,
    0xfedcba9876543210ULL },
  float = { 0, -0.0, 1, -1, 0.1, 3.4028234663852886e38, 1e-45, 16777217, 0 / 0, math.huge, -math.huge },
  double = { 0, -0.0, 1, -1, 0.1, 1e308, 5e-324, 2^53 + 2, 0 / 0, math.huge, -math.huge, 1 / 3 },
  bool = { true, false, true, true, false },
}

for _, bk in ipairs(H.backends) do
  describe("arrays [" .. bk .. "]", function()

    describe("FFI arrays of every element type, 0-based", function()
      for _, ct in ipairs(H.all_types) do
        it(ct .. ": copy in and out exactly", function()
          local vals = VALUES[ct]
          local n = #vals
          local src = H.array(ct, vals)
          local dst = ffi.new(ct .. "[?]", n)
          local k = H.kernel(bk, function(o, a, m)
            local i = gpu.global_id(0)
            if i < m then o[i] = a[i] end
          end, { name = "copy_" .. ct })
          k:launch(n, dst, src, n)
          H.check(ct, dst, function(i) return src[i] end, n, { ulps = 0 })
        end)

        if ct ~= "bool" then
          it(ct .. ": a[i] = a[i] + 1 in place wraps as a C store does", function()
            local vals = VALUES[ct]
            local n = #vals
            local a = H.array(ct, vals)
            local orig = H.copy(ct, a, n)
            local k = H.kernel(bk, function(x, m)
              local i = gpu.global_id(0)
              if i < m then x[i] = x[i] + 1 end
            end, { name = "inc_" .. ct })
            k:launch(n, a, n)
            -- The kernel computes in the promoted type (int32_t for narrow
            -- integers, the type itself otherwise), then stores: both wrap
            -- the same way as LuaJIT's FFI arithmetic + store here.
            H.check(ct, a, function(i)
              local v = orig[i]
              if ct == "uint32_t" then return (v + 1) % 2^32 end
              if ct == "int32_t" and v == 2147483647 then return -2147483648 end
              return v + 1
            end, n, { ulps = 0 })
          end)
        end

        it(ct .. ": elements converted to double", function()
          local vals = VALUES[ct]
          local n = #vals
          local a = H.array(ct, vals)
          local out = ffi.new("double[?]", n)
          local fn = function(o, x, m)
            local i = gpu.global_id(0)
            if i < m then o[i] = x[i] end
          end
          if ct == "bool" then
            fn = function(o, x, m)
              local i = gpu.global_id(0)
              if i < m then o[i] = x[i] and 1 or 0 end
            end
          end
          local k = H.kernel(bk, fn, { name = "todouble_" .. ct })
          k:launch(n, out, a, n)
          H.check("double", out, function(i)
            local v = a[i]
            if type(v) == "boolean" then return v and 1 or 0 end
            return tonumber(v)
          end, n)
        end)
      end

      it("a double stored into every integer type truncates toward zero", function()
        local src = H.array("double", { 0.5, -0.5, 1.9, -1.9, 100.99, -100.99, 127.5 })
        for _, ct in ipairs({ "int8_t", "int16_t", "int32_t", "int64_t" }) do
          local out = ffi.new(ct .. "[7]")
          local k = H.kernel(bk, function(o, a)
            local i = gpu.global_id(0)
            o[i] = a[i]
          end, { name = "trunc_" .. ct })
          k:launch(7, out, src)
          H.check(ct, out, function(i) return src[i] end, 7)
        end
        for _, ct in ipairs({ "uint8_t", "uint16_t", "uint32_t", "uint64_t" }) do
          local out = ffi.new(ct .. "[4]")
          local k = H.kernel(bk, function(o, a)
            local i = gpu.global_id(0)
            o[i] = a[i]
          end, { name = "trunc_" .. ct })
          local pos = H.array("double", { 0.5, 1.9, 100.99, 200.25 })
          k:launch(4, out, pos)
          H.check(ct, out, function(i) return pos[i] end, 4)
        end
      end)

      it("out-of-range doubles stored into integer elements convert as LuaJIT's FFI does", function()
        -- typing.md: 300.0 into uint8_t is 44, 2^32+5 into int32_t is -2^31, NaN gives the minimum
        local vals = { 300, -1.5, 2^32 + 5, -2^31 - 1, 2^31, 65537.9, -129, 1e20, -1e20, 0 / 0 }
        local src = H.array("double", vals)
        local cts = { "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t" }
        for _, ct in ipairs(cts) do
          local out = ffi.new(ct .. "[?]", #vals)
          local k = H.kernel(bk, function(o, a)
            local i = gpu.global_id(0)
            o[i] = a[i]
          end, { name = "conv_" .. ct })
          k:launch(#vals, out, src)
          H.check(ct, out, function(i) return src[i] end, #vals, { what = "double -> " .. ct,
            inputs = function(i) return "(" .. H.fmt(src[i]) .. ")" end })
        end
      end)

      it("64-bit integer results stored into narrower elements convert as the same number would", function()
        -- int32 * int32 is computed in 64 bits; storing it converts the number as LuaJIT's FFI does
        local a = H.array("int32_t", { 65536, 46341, -65536, 3, 1000000, -46341 })
        for _, ct in ipairs({ "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t" }) do
          local out = ffi.new(ct .. "[6]")
          local k = H.kernel(bk, function(o, x)
            local i = gpu.global_id(0)
            o[i] = x[i] * x[i] + 5
          end, { name = "narrow_" .. ct })
          k:launch(6, out, a)
          H.check(ct, out, function(i) return a[i] * a[i] + 5 end, 6, { what = "int64 -> " .. ct })
        end
      end)

      it("bool elements: comparisons store 0 or 1, numbers store nonzero as true", function()
        local x = H.array("double", { -1, 0, 2, 0.5, 0 / 0 })
        local b = ffi.new("bool[5]")
        local c = ffi.new("bool[5]")
        local k = H.kernel(bk, function(o, p, a)
          local i = gpu.global_id(0)
          o[i] = a[i] > 0
          p[i] = not (a[i] > 0) -- luacheck: ignore 581
        end, { name = "boolstore" })
        k:launch(5, b, c, x)
        H.check("bool", b, { false, false, true, true, false }, 5)
        H.check("bool", c, { true, true, false, false, true }, 5)
        local u8 = ffi.cast("uint8_t *", b)
        for i = 0, 4 do assert.is_true(u8[i] == 0 or u8[i] == 1, "bool byte " .. i .. " is " .. u8[i]) end
      end)

      it("a bool stored into a double[] or int32_t[] element is 0 or 1, as a C assignment", function()
        local flags = H.array("bool", { true, false, true })
        local d, n = ffi.new("double[3]"), ffi.new("int32_t[3]")
        local k = H.kernel(bk, function(o, p, f)
          local i = gpu.global_id(0)
          o[i] = f[i]
          p[i] = f[i]
        end, { name = "boolconv" })
        k:launch(3, d, n, flags)
        H.check("double", d, { 1, 0, 1 }, 3)
        H.check("int32_t", n, { 1, 0, 1 }, 3)
      end)

      it("reading bool elements as conditions", function()
        local flags = H.array("bool", { true, false, false, true })
        local out = ffi.new("int32_t[4]")
        local k = H.kernel(bk, function(o, f)
          local i = gpu.global_id(0)
          if f[i] then o[i] = 10 else o[i] = 20 end
          if not f[i] and i > 1 then o[i] = o[i] + 1 end
        end, { name = "boolread" })
        k:launch(4, out, flags)
        H.check("int32_t", out, { 10, 20, 21, 10 }, 4)
      end)

      it("fixed-size FFI arrays (float[16]) and VLAs (double[?])", function()
        local f = ffi.new("float[16]")
        local d = ffi.new("double[?]", 16)
        for i = 0, 15 do f[i] = i * 0.5; d[i] = i * 0.25 end
        local k = H.kernel(bk, function(x, y)
          local i = gpu.global_id(0)
          x[i] = x[i] + y[i]
          y[i] = y[i] * 2
        end, { name = "fixed" })
        k:launch(16, f, d)
        H.check("float", f, function(i) return i * 0.75 end, 16, { ulps = 0 })
        H.check("double", d, function(i) return i * 0.5 end, 16)
      end)

      it("a float index is truncated toward zero", function()
        local a = H.array("double", { 10, 11, 12, 13, 14, 15, 16, 17 })
        local out = ffi.new("double[8]")
        local k = H.kernel(bk, function(o, x)
          local i = gpu.global_id(0)
          o[i] = x[i * 0.5] + x[i - 0.5] * 100
        end, { name = "floatidx" })
        k:launch(8, out, a)
        -- LuaJIT's FFI truncates the same way: a[1.5] is a[1], a[-0.5] is a[0]
        H.check("double", out, function(i) return a[i * 0.5] + a[i - 0.5] * 100 end, 8)
      end)

      it("indexes computed from ids, other elements and loops (reverse, gather, prefix)", function()
        local n = 50
        local a = H.array("int32_t", function(i) return (i * 37) % n end, n)
        local v = H.array("double", function(i) return i * 1.5 end, n)
        local out = ffi.new("double[?]", n)
        local pre = ffi.new("double[?]", n)
        local k = H.kernel(bk, function(o, p, idx, x, m)
          local i = gpu.global_id(0)
          if i >= m then return end
          o[i] = x[idx[i]] + x[m - 1 - i]
          local s = 0
          for j = 0, i do s = s + x[j] end
          p[i] = s
        end, { name = "gather" })
        k:launch(n, out, pre, a, v, n)
        H.check("double", out, function(i) return v[a[i]] + v[n - 1 - i] end, n)
        H.check("double", pre, function(i)
          local s = 0
          for j = 0, i do s = s + v[j] end
          return s
        end, n)
      end)

      it("the same array passed twice, read through one name and written through the other", function()
        local a = H.array("double", { 1, 2, 3, 4 })
        local k = H.kernel(bk, function(x, y)
          local i = gpu.global_id(0)
          y[i] = x[i] * 10
        end, { name = "alias" })
        k:launch(4, a, a)
        H.check("double", a, { 10, 20, 30, 40 }, 4)
      end)
    end)

    describe("FFI pointers", function()
      it("float * and int32_t * are 0-based arrays in host memory", function()
        local host = H.array("float", { 1, 2, 3, 4, 5, 6 })
        local ints = H.array("int32_t", { 5, 4, 3, 2, 1, 0 })
        local p = ffi.cast("float *", host) + 1            -- starts at host[1]
        local q = ffi.cast("int32_t *", ints)
        local k = H.kernel(bk, function(x, y)
          local i = gpu.global_id(0)
          x[i] = x[i] * 2 + y[i]
        end, { name = "pointer" })
        if not H.host_shared(bk) then
          local msg = H.error_of(function() k:launch(5, p, q) end)
          assert.is_truthy(msg:find("shares host memory", 1, true), msg)
          return
        end
        k:launch(5, p, q)
        H.check("float", host, { 1, 2 * 2 + 5, 3 * 2 + 4, 4 * 2 + 3, 5 * 2 + 2, 6 * 2 + 1 }, 6, { ulps = 0 })
      end)
    end)

    describe("Lua tables", function()
      it("are 1-based double[] arrays; written elements come back into the same table", function()
        local t = { 1, 2, 3, 4, 5 }
        local src = { 0.5, 1.5, 2.5, 3.5, 4.5 }
        local k = H.kernel(bk, function(dst, s)
          local i = gpu.global_id(0) + 1
          dst[i] = dst[i] * 10 + s[i]
        end, { name = "table" })
        local before = t
        k:launch(5, t, src)
        assert.are.equal(before, t)
        H.check(nil, t, { 10.5, 21.5, 32.5, 43.5, 54.5 }, 5, { base = 1 })
        H.check(nil, src, { 0.5, 1.5, 2.5, 3.5, 4.5 }, 5, { base = 1 })   -- read only: unchanged
        assert.is_nil(t[0])
        assert.is_nil(t[6])
      end)

      it("#t is the length; a loop over 1, #t", function()
        local t = { 3, 1, 4, 1, 5, 9, 2, 6 }
        local out = ffi.new("double[2]")
        local k = H.kernel(bk, function(o, a)
          local s = 0
          for j = 1, #a do s = s + a[j] end
          o[0] = s
          o[1] = #a
        end, { name = "tlen" })
        k:launch(1, out, t)
        H.check("double", out, { 31, 8 }, 2)
      end)

      it("writes of non-integers and of special values come back exactly", function()
        local t = { 0, 0, 0, 0, 0 }
        local k = H.kernel(bk, function(a, z)
          a[1] = 0.1
          a[2] = -z
          a[3] = 1 / 0
          a[4] = 2^53 + 2
          a[5] = 1 / 3
        end, { name = "tvals" })
        k:launch(1, t, 0)
        H.check(nil, t, { 0.1, -0.0, math.huge, 2^53 + 2, 1 / 3 }, 5, { base = 1 })
      end)

      it("a table typed by a signature (float[], int32_t[]) is still 1-based", function()
        local t = { 1.1, 2.2, 3.3 }
        local u = { 7, 8, 9 }
        local k = H.kernel(bk, function(a, b)
          local i = gpu.global_id(0) + 1
          a[i] = a[i] + b[i]
          b[i] = b[i] * 2
        end, { name = "tsig" }, { "float[]", "int32_t[]" })
        k:launch(3, t, u)
        local t0 = { 1.1, 2.2, 3.3 }
        H.check(nil, t, function(i) return H.to_ct("float", H.to_ct("float", t0[i + 1]) + 7 + i) end,
          3, { base = 1, ulps = 0 })
        H.check(nil, u, { 14, 16, 18 }, 3, { base = 1 })
      end)

      it("a table and an FFI array together", function()
        local t = { 1, 2, 3, 4 }
        local a = ffi.new("double[4]")
        local k = H.kernel(bk, function(x, y)
          local i = gpu.global_id(0)
          y[i] = x[i + 1] * 3
        end, { name = "tmix" })
        k:launch(4, t, a)
        H.check("double", a, { 3, 6, 9, 12 }, 4)
      end)
    end)

    describe("gpu.array", function()
      H.use_in_block(bk)
      it("to_device, a kernel, to_host: 0-based, stays on the device", function()
        local n = 100
        local src = H.array("float", function(i) return i * 0.5 end, n)
        local d = gpu.to_device(src)
        assert.are.equal(n, #d)
        assert.is_truthy(tostring(d.ctype):find("float"), tostring(d.ctype))
        local k = H.kernel(bk, function(a, m)
          local i = gpu.global_id(0)
          if i < m then a[i] = a[i] * 2 + 1 end
        end, { name = "garray" })
        k:launch(n, d, n)
        k:launch(n, d, n)
        local back = d:to_host()
        H.check("float", back, function(i) return (i * 0.5 * 2 + 1) * 2 + 1 end, n, { ulps = 0 })
        H.check("float", src, function(i) return i * 0.5 end, n, { ulps = 0 })   -- the source is a copy
      end)

      it("#a inside the kernel, gpu.zeros and to_host into a Lua table", function()
        local z = gpu.zeros("int32_t", 10)
        local k = H.kernel(bk, function(a)
          local i = gpu.global_id(0)
          a[i] = a[i] + #a * 100 + i
        end, { name = "glen" })
        k:launch(10, z)
        local t = {}
        z:to_host(t)
        H.check(nil, t, function(i) return 1000 + i end, 10, { base = 1 })
        local dst = ffi.new("int32_t[10]")
        z:to_host(dst)
        H.check("int32_t", dst, function(i) return 1000 + i end, 10)
      end)

      it("to_device of a Lua table with a ctype; gpu.array; free", function()
        local d = gpu.to_device({ 1, 2, 3, 4 }, "double")
        local e = gpu.array("double", 4)
        local k = H.kernel(bk, function(src, dst)
          local i = gpu.global_id(0)
          dst[i] = src[i] * src[i]
        end, { name = "gcopy" })
        k:launch(4, d, e)
        H.check("double", e:to_host(), { 1, 4, 9, 16 }, 4)
        e:free()
        d:free()
      end)

      for _, ct in ipairs(H.all_types) do
        it("gpu.array of " .. ct .. " round trip through a kernel", function()
          local vals = VALUES[ct]
          local n = #vals
          local d = gpu.to_device(H.array(ct, vals), ct)
          local out = gpu.array(ct, n)
          local k = H.kernel(bk, function(a, b, m)
            local i = gpu.global_id(0)
            if i < m then b[m - 1 - i] = a[i] end
          end, { name = "grev_" .. ct })
          k:launch(n, d, out, n)
          local back = out:to_host()
          local src = H.array(ct, vals)
          H.check(ct, back, function(i) return src[n - 1 - i] end, n, { ulps = 0 })
        end)
      end
    end)

    describe("scalar arguments", function()
      it("FFI scalar cdata of every numeric type keep their type", function()
        local out = ffi.new("double[6]")
        local k = H.kernel(bk, function(o, a, b, c, d, e, f)
          o[0] = a + 1          -- int8_t 127: promoted to int64_t, 128
          o[1] = b + 1          -- uint8_t 255: 256
          o[2] = c + 1          -- int32_t 2147483647: 64-bit arithmetic, 2^31
          o[3] = d / 2          -- int64_t: C integer division (LuaJIT's cdata), 3
          o[4] = e * 3          -- float 0.1f times 3 in float
          o[5] = f              -- uint64_t
        end, { name = "scalars" })
        k:launch(1, out, ffi.new("int8_t", 127), ffi.new("uint8_t", 255), ffi.new("int32_t", 2147483647),
          ffi.new("int64_t", 7), ffi.new("float", 0.1), ffi.new("uint64_t", 2^53))
        local f3 = H.to_ct("float", H.to_ct("float", 0.1) * 3)
        H.check("double", out, { 128, 256, 2147483648, 3, f3, 2^53 }, 6)
      end)

      it("an int64_t scalar above 2^53 is exact", function()
        local out = ffi.new("int64_t[2]")
        local k = H.kernel(bk, function(o, a, b)
          o[0] = a + 1
          o[1] = b - 1
        end, { name = "i64scalar" })
        k:launch(1, out, ffi.new("int64_t", 9007199254740993LL), ffi.new("uint64_t", 18446744073709551615ULL))
        assert.is_true(out[0] == 9007199254740994LL, tostring(out[0]))
        assert.is_true(out[1] == -2LL, tostring(out[1]))   -- 2^64 - 2 stored into an int64_t
      end)
    end)
  end)
end

-- A device that does not share host memory stages every array through a
-- device buffer that the launcher keeps between launches (cuda; opencl with
-- its host_register fact removed, as streams_spec does).  A launcher with a
-- local per buffer exceeded Lua's 60 upvalues at about 15 staged arguments
-- (a fuzz kernel of 17 arguments on an H200).
describe("arrays staged through device buffers", function()
  local run = H.testing("opencl") and it or pending
  run("a kernel of 24 staged arguments (FFI arrays and tables) launches twice, results back", function()
    local ok, out = H.run_isolated("opencl", H.OPENCL_STAGED .. [[
      local names, body = {}, {}
      for j = 1, 24 do
        names[j] = "a" .. j
        local base = j % 2 == 1 and "i" or "i + 1"   -- odd: FFI arrays, even: tables
        body[j] = ("a%d[%s] = a%d[%s] * 2 + %d"):format(j, base, j, base, j)
      end
      local src = ("local gpu = ...\nreturn function(%s)\n local i = gpu.global_id(0)\n %s\nend")
        :format(table.concat(names, ", "), table.concat(body, "\n "))
      local k = gpu.kernel(assert(loadstring(src))(gpu))
      for round = 1, 2 do
        local args = {}
        for j = 1, 24 do
          if j % 2 == 1 then
            args[j] = ffi.new("double[4]", j, j + 1, j + 2, j + 3)
          else
            args[j] = { j, j + 1, j + 2, j + 3 }
          end
        end
        k:launch(4, unpack(args))
        for j = 1, 24 do
          for e = 0, 3 do
            local v = j % 2 == 1 and args[j][e] or args[j][e + 1]
            assert(v == (j + e) * 2 + j, ("round %d, argument %d[%d]: %s"):format(round, j, e, v))
          end
        end
      end
      print("ok")
    ]])
    assert.is_true(ok and out:find("ok") ~= nil, out)
  end)
end)
