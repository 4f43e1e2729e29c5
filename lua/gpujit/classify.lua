-- gpujit.classify: what kind of argument a launch was given (cold: on a
-- dispatch miss only).  A kind is
--   { kind = "num"|"bool"|"cscalar"|"farray"|"fptr"|"garray"|"table",
--     tag = type(a) or ctype id, type = lazy type name, info = ctype info };
-- its tag keys the dispatch tree (gpujit.dispatch), its type is the lazy
-- signature's, and match_sigs picks an eager signature that fits.
--
--   local C = require("gpujit.classify")(raise, argerr)
--   C.tag_of(K, a, huge), C.classify(K, a, huge, explicit) -> kind or nil, why,
--   C.match_sigs(K, kinds, args) -> sig (raises when none fits),
--   C.sig_text(sig)
local types = require("gpujit.types")
local ffi = require("ffi")
local typeof = ffi.typeof
local concat = table.concat

return function(raise, argerr)
  local K_NUM = { kind = "num", tag = "number", type = "double" }
  local K_NUM1 = { kind = "num", tag = "number", type = "float" }
  -- Whole numbers of a class (types.numtag): the class name is tag and type.
  local lnum_kinds = setmetatable({}, { __index = function(t, name)
    local k = { kind = "num", tag = name, type = name, lnum = true }
    t[name] = k
    return k
  end })

  -- The tag of argument a in the dispatch tree: the ctype id of cdata, the
  -- class of a Lua number ("number" for a double), else type(a).
  local function tag_of(_, a, huge)
    local ta = type(a)
    if ta == "cdata" then return tonumber(typeof(a)) end
    if ta == "number" then return types.numtag(a, huge) end
    return ta
  end
  local K_BOOL = { kind = "bool", tag = "boolean", type = "bool" }
  local K_TABLE = { kind = "table", tag = "table", type = "double[]" }
  local cdata_kinds = {}

  -- explicit: a later argument is not nil, so a nil here was passed (the
  -- launch's fixed parameters cannot tell a trailing nil from no value).
  local function classify(K, a, huge, explicit)
    local ta = type(a)
    if ta == "number" then
      local tag = types.numtag(a, huge)
      if tag ~= "number" then return lnum_kinds[tag] end
      return K.opts.precision == "single" and K_NUM1 or K_NUM
    elseif ta == "boolean" then
      return K_BOOL
    elseif ta == "table" then
      return K_TABLE
    elseif ta == "cdata" then
      local info, why = types.ctype_info(a)
      if not info then return nil, why end
      local k = cdata_kinds[info.ctid]
      if k == nil then
        k = { kind = info.kind == "scalar" and "cscalar" or info.kind, tag = info.ctid,
              type = info.type, info = info }
        cdata_kinds[info.ctid] = k
      end
      return k
    elseif ta == "nil" then
      if explicit then return nil, "got nil" end
      return nil, "got nil or no value (the kernel takes " .. K.nparams .. " argument"
        .. (K.nparams == 1 and "" or "s") .. ")"
    end
    return nil, "unsupported argument type '" .. ta
      .. "' (expected a number, a boolean, FFI cdata, a Lua table of numbers or a gpu.array)"
  end

  -- Can an argument of kind k be passed as a parameter of type t (eager)?
  local function fits(k, t)
    local e = types.elem(t)
    local kk = k.kind
    if types.lnum[t] then return k.lnum == true and types.lnum_within(k.tag, t) end
    if kk == "num" then return e == nil and t ~= "bool" end
    if kk == "bool" then return t == "bool" end
    if kk == "cscalar" then
      if k.type == "bool" then return t == "bool" end
      return e == nil and t ~= "bool"
    end
    if kk == "table" then return e ~= nil end
    return t == k.type
  end

  local function sig_text(sig)
    return "(" .. concat(sig, ", ") .. ")"
  end

  local function match_sigs(K, kinds, args)
    for _, sig in ipairs(K.sigs) do
      local ok = true
      for i = 1, K.nparams do
        if not fits(kinds[i], sig[i]) then ok = false break end
      end
      if ok then return sig end
    end
    if #K.sigs == 1 then
      local sig = K.sigs[1]
      for i = 1, K.nparams do
        if not fits(kinds[i], sig[i]) then
          argerr(K, i, "expected " .. sig[i] .. " (signature " .. sig_text(sig) .. "), got "
            .. types.describe(args[i]))
        end
      end
    end
    local got = {}
    for i = 1, K.nparams do got[i] = types.describe(args[i]) end
    local have = {}
    for j, sig in ipairs(K.sigs) do have[j] = sig_text(sig) end
    raise("no signature of kernel '" .. K.name .. "' accepts the arguments (" .. concat(got, ", ")
      .. "); signatures: " .. concat(have, ", "))
  end

  return { tag_of = tag_of, classify = classify, match_sigs = match_sigs, sig_text = sig_text }
end
