-- The buffer kinds the rank scripts of spec/mpi/ run each check on: FFI
-- arrays of double and int32_t, Lua tables, and gpu.arrays of double and
-- int32_t on each backend of GPUJIT_SPEC_BACKENDS.
--   for _, K in ipairs(require("spec.mpi.kinds")) do
--     local b = K.make({ 1, 2, 3 })   -- a buffer holding these numbers
--     K.get(b) -> { 1, 2, 3 }          -- its contents as a Lua list
--   end
local ffi = require("ffi")
local gpu = require("gpujit")
local C = require("spec.mpi.check")

local kinds = {}

local function ffi_kind(elem)
  kinds[#kinds + 1] = {
    name = "FFI " .. elem .. "[?]",
    make = function(list) return ffi.new(elem .. "[?]", #list, list) end,
    get = function(b)
      local out = {}
      for i = 1, ffi.sizeof(b) / ffi.sizeof(elem) do out[i] = tonumber(b[i - 1]) end
      return out
    end,
  }
end
ffi_kind("double")
ffi_kind("int32_t")

kinds[#kinds + 1] = {
  name = "Lua table",
  make = function(list) return { unpack(list) } end,
  get = function(b) return { unpack(b) } end,
}

for _, bk in ipairs(C.backends) do
  for _, elem in ipairs({ "double", "int32_t" }) do
    kinds[#kinds + 1] = {
      name = "gpu.array<" .. elem .. "> on " .. bk,
      backend = bk,
      make = function(list) return gpu.to_device(list, elem, bk) end,
      get = function(b)
        local out = {}
        b:to_host(out)
        return out
      end,
    }
  end
end

return kinds
