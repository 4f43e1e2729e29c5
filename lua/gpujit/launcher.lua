-- gpujit.launcher: generation of the per-(target, marshal kinds) launchers
-- (layer 2 of a launch, see gpujit.dispatch).
--
-- The module is a factory: each dispatcher instance calls it once with its
-- error helpers and a getter for its current environment (D.setup), and
-- gets its own gen_launcher and sim_launcher.
local ffi = require("ffi")
local types = require("gpujit.types")
local array = require("gpujit.array")
local sim = require("gpujit.sim")
local plugins = require("gpujit.plugins")
local printer = require("gpujit.printer")

local type, tonumber, select, error, tostring = type, tonumber, select, error, tostring
local typeof = ffi.typeof
local concat = table.concat

-- h: env (function returning the dispatcher's current env), raise, argerr,
-- elemerr, freed, devcheck, launch_failed, barrier_fail, label_of, tag_of.
return function(h)
  local env_of, raise, argerr, elemerr, freed = h.env, h.raise, h.argerr, h.elemerr, h.freed
  local devcheck, launch_failed, barrier_fail, label_of, tag_of, const_written =
    h.devcheck, h.launch_failed, h.barrier_fail, h.label_of, h.tag_of, h.const_written

  -- Element counts of VLAs, memoized per object: ffi.sizeof on a VLA stops
  -- the JIT, a weak table lookup does not.
  local vlen = setmetatable({}, { __mode = "k" })
  local function vlenof(a, esz)
    local n = ffi.sizeof(a) / esz
    vlen[a] = n
    return n
  end

  -- Staging buffers have GUARD bytes before and after the part a launch
  -- uses (docs/reliability.md, "Without boundscheck"): a kernel without
  -- boundscheck that indexes a table at 0 or #t+1 (up to GUARD bytes out)
  -- writes into them, not into the heap.  Their contents are unspecified.
  -- The staging pointer returned points past the leading guard; `anchor`
  -- keeps the allocation alive as long as that pointer is.
  local GUARD = 64
  local anchor = setmetatable({}, { __mode = "k" })

  -- A host staging buffer for a table of n elem: the buffer (0-based),
  -- its 1-based view (what the kernel gets) and its capacity.
  local function newbuf(elem, n)
    local cap = n < 16 and 16 or n
    local g = GUARD / types.size[elem]
    local vla = types.vla(elem)(cap + 2 * g)
    local buf = ffi.cast(elem .. " *", vla) + g
    anchor[buf] = vla
    return buf, buf - 1, cap
  end

  -- A device staging buffer of at least `bytes`: the buffer, its capacity,
  -- and the address the kernel gets (the buffer minus esz bytes: a table's
  -- 1-based view; 0 for an FFI array).
  local function newdbuf(K, tgt, bytes, esz)
    local env = env_of()
    local cap = bytes < 64 and 64 or bytes
    local lib, ctx = env.lib, env.ctx
    local p = lib.gj_mem_alloc(ctx, tgt.bk, tgt.dev, cap + 2 * GUARD)
    if p == nil then
      raise("kernel '" .. K.name .. "': cannot allocate " .. cap .. " bytes on " .. tgt.label
        .. ": " .. ffi.string(lib.gj_errmsg(ctx)))
    end
    local bk, dev = tgt.bk, tgt.dev
    p = ffi.gc(p, function(q) lib.gj_mem_free(ctx, bk, dev, q) end)
    local buf = ffi.cast("uint8_t *", p) + GUARD
    anchor[buf] = p
    return buf, cap, buf - (esz or 0)
  end

  -- Launches on a stream stage each table, and each array that goes
  -- through a device buffer, once per stream until its synchronize: a
  -- later launch on the stream with the same table (or array) uses the same
  -- buffer, which by the stream's order holds what the earlier launches
  -- left, and the stream copies it back once, at synchronize (gpujit.stream
  -- runs `back` of each staging that a launch writes, in the order they were
  -- made: device buffers before the tables they stage).
  local function restage_err(K, i, what)
    raise("bad argument #" .. i .. " to kernel '" .. K.name .. "': the " .. what
      .. " is already used by a launch on this stream with another element type or"
      .. " length; synchronize the stream first")
  end

  -- The host staging buffer of table t (n elements of elem) on stream S:
  -- buf, its 1-based view, and the staging.  A new one is filled from t
  -- (its elements checked); the stream gets it (commit) only once the
  -- launch is enqueued, so that a launch that fails leaves nothing behind.
  local function stage_table(S, K, i, t, elem, n)
    local st = S.staged[t]
    if st then
      if st.elem ~= elem or st.n ~= n then restage_err(K, i, "table") end
      return st.buf, st.bufm, st
    end
    local buf, bufm = newbuf(elem, n)
    local want = elem == "bool" and "boolean" or "number"
    for j = 1, n do
      local v = t[j]
      if type(v) ~= want then elemerr(K, i, j, v, elem) end
      buf[j - 1] = v
    end
    local int64 = types.is_int64[elem]
    st = { key = t, new = true, elem = elem, n = n, buf = buf, bufm = bufm, written = false }
    st.back = function()
      if int64 then
        for j = 1, n do t[j] = tonumber(buf[j - 1]) end
      else
        for j = 1, n do t[j] = buf[j - 1] end
      end
    end
    return buf, bufm, st
  end

  -- The device buffer staging host memory `host` (a table's staging buffer
  -- or an FFI array; bytes of it) on stream S: the buffer, the address the
  -- kernel gets (minus bias), and the staging; a new one is copied in
  -- first, as in stage_table.
  local function commit(S, st, written)
    if st.new then
      st.new = nil
      S.staged[st.key] = st
      S.order[#S.order + 1] = st
    end
    if written then st.written = true end
  end

  local function stage_dev(S, K, i, TGT, host, bytes, bias)
    local st = S.staged[host]
    if st then
      if st.bytes ~= bytes or st.bias ~= bias then restage_err(K, i, "array") end
      return st.dbuf, st.dbufm, st
    end
    local dbuf, _, dbufm = newdbuf(K, TGT, bytes, bias)
    local env = env_of()
    local lib, ctx = env.lib, env.ctx
    if bytes > 0 and lib.gj_mem_copy(ctx, TGT.bk, TGT.dev, dbuf, host, bytes, 0) ~= 0 then
      launch_failed(K)
    end
    st = { key = host, new = true, bytes = bytes, bias = bias, dbuf = dbuf, dbufm = dbufm,
           written = false }
    st.back = function()
      if bytes > 0 and lib.gj_mem_copy(ctx, TGT.bk, TGT.dev, host, dbuf, bytes, 1) ~= 0 then
        launch_failed(K)
      end
    end
    return dbuf, dbufm, st
  end

  -- Lua allows a function 200 locals.  A launcher keeps a few per array
  -- argument (its length, buffers, registration) in locals; when those and
  -- the parameters would pass SPILL_AT, they live in the launch state
  -- instead (ST.buf3 for buf3; a registration, which an async launch's
  -- closure keeps, in the launch's own table RG), which costs a table
  -- access each but holds any argument count up to the limit (dispatch's
  -- MAX_ARGS, every kind, on every target).
  local SPILL_AT = 150
  local SPILLED = { n = "ST.", buf = "ST.", bufm = "ST.", b = "ST.", dbuf = "ST.", dbufm = "ST.",
                    dst = "ST.", st = "ST.", p = "ST.", r = "RG." }
  local function declared(lines)
    local c = 0
    for _, l in ipairs(lines) do
      local names = l:match("^local ([%w_, ]+) =")
      if names then c = c + 1 + select(2, names:gsub(",", "")) end
    end
    return c
  end
  -- line with every per-argument local (a name of SPILLED and its argument
  -- number: buf3, not ST.buf3, args.a3_len or "int32_t") in its table
  local function spill(line)
    line = (" " .. line):gsub("([^%w_%.])(%a+)(%d+)%f[^%w_]", function(pre, name, num)
      local to = SPILLED[name]
      if to then return pre .. to .. name .. num end
    end)
    return (line:sub(2):gsub("^local ([SR][TG]%.)", "%1"))
  end
  local function spill_all(lines)
    for k = 1, #lines do lines[k] = spill(lines[k]) end
  end

  -- async: the launcher of launches on a stream (gpujit.stream): it takes
  -- the stream after `huge`, stages through the stream (stage_table,
  -- stage_dev), enqueues with gj_stream_launch, and hands the stream its
  -- arguments (kept alive until its synchronize) and the release of its
  -- host registrations as a closure (run at the synchronize).
  local function gen_launcher(K, tgt, ov, kinds, async)
    local env = env_of()
    local n = K.nparams
    local info = ov.info
    local params = info.params
    local shared, hostreg = tgt.shared, tgt.hostreg
    local top, guard, fill, regs, after = {}, {}, {}, {}, {}
    local marks = {}    -- async: the stagings a launch uses, committed once it is enqueued
    local U = {
      type = type, tonumber = tonumber, typeof = typeof, TGT = tgt, K = K,
      lib = env.lib, ctx = env.ctx, H = ov.handle, ARGCT = ov.argct,
      BK = tgt.bk, DEV = tgt.dev, vlen = vlen, vlenof = vlenof, newbuf = newbuf,
      newdbuf = newdbuf, elemerr = elemerr, freed = freed, devcheck = devcheck,
      fail = launch_failed, barrier_fail = barrier_fail, U8P = typeof("uint8_t *"), cast = ffi.cast,
      tobit = bit.tobit,
    }
    local function g(t, s, ...) t[#t + 1] = s:format(...) end
    -- Argument i (n<i> elements of esz bytes at host expression `host`) as
    -- host memory registered for the launch (targets with hostreg,
    -- gj_backend.h): the kernel gets its device address minus `bias` bytes.
    -- The registrations come after every other part of the fill (nothing can
    -- raise an error between them and the launch), and each is released
    -- right after the launch (also when it or a later registration fails),
    -- which makes what the kernel wrote visible in the host memory.
    local nreg = {}
    local function release_all(quiet)
      local t = {}
      for k = 1, #nreg do
        t[k] = ("lib.gj_mem_host_release(ctx, BK, DEV, r%d, %s)"):format(nreg[k], quiet)
      end
      return concat(t, "; ")
    end
    local function register(i, host, esz, bias, written)
      g(fill, "local b%d = n%d * %d", i, i, esz)
      g(regs, "local r%d = lib.gj_mem_host_register(ctx, BK, DEV, %s, b%d, %d)", i, host, i,
        written and 1 or 0)
      g(regs, "if r%d == nil then %sfail(K) end", i, #nreg > 0 and (release_all(1) .. "; ") or "")
      g(regs, "args.a%d = %s; args.a%d_len = n%d", i,
        bias == 0 and ("r" .. i) or ("cast(U8P, r%d) - %d"):format(i, bias), i, i)
      nreg[#nreg + 1] = i
    end
    -- Argument i (n<i> elements of esz bytes at host expression `host`) in a
    -- device buffer: copied in before the launch, back after it when the
    -- kernel writes it; the kernel gets the buffer's address minus `bias`
    -- bytes (a Lua table's element size: it indexes from 1).
    local function stage(i, host, esz, bias, written)
      if hostreg then return register(i, host, esz, bias, written) end
      g(fill, "local b%d = n%d * %d", i, i, esz)
      if async then
        g(fill, "local dbuf%d, dbufm%d, dst%d = STAGE_D(S, K, %d, TGT, %s, b%d, %d)",
          i, i, i, i, host, i, bias)
        g(fill, "args.a%d = dbufm%d; args.a%d_len = n%d", i, i, i, i)
        marks[#marks + 1] = ("COMMIT(S, dst%d, %s)"):format(i, tostring(written))
        return
      end
      g(top, "ST.dcap%d = -1", i)
      g(fill, "if b%d > ST.dcap%d then ST.dbuf%d, ST.dcap%d, ST.dbufm%d = newdbuf(K, TGT, b%d, %d) end",
        i, i, i, i, i, i, bias)
      g(fill, "local dbuf%d, dbufm%d = ST.dbuf%d, ST.dbufm%d", i, i, i, i)
      g(fill, "if b%d > 0 and lib.gj_mem_copy(ctx, BK, DEV, dbuf%d, %s, b%d, 0) ~= 0 then"
        .. " fail(K) end", i, i, host, i)
      g(fill, "args.a%d = dbufm%d; args.a%d_len = n%d", i, i, i, i)
      if written then
        g(after, "if b%d > 0 and lib.gj_mem_copy(ctx, BK, DEV, %s, dbuf%d, b%d, 1) ~= 0 then"
          .. " fail(K) end", i, host, i, i)
      end
    end
    local anames = {}
    for i = 1, n do
      anames[i] = "a" .. i
      local k = kinds[i]
      local kk = k.kind
      local p = params[i]
      local written = p.written ~= false
      if kk == "num" then
        -- A whole-number class (types.numtag): the value must stay in it
        -- (lua_int, which holds 0: not -0); such overloads never run a
        -- huge launch.  A lazily typed float (precision = "single") leaves
        -- whole numbers to their classes; a double runs every number
        -- exactly and takes them all (gpujit.lattice), as an eager
        -- signature's double does.
        local c = types.lnum[ov.types[i]]
        local int = types.lnum.lua_int
        if c and c.lo == 0 and c.hi == 0 then
          g(guard, "if huge or type(a%d) ~= 'number' or a%d ~= 0 or 1 / a%d < 0 then return false end",
            i, i, i)
        elseif c then
          -- tobit(a) == a: a whole number in int32's range (which holds every
          -- class), one addition where a % 1 takes a floor
          g(guard, "if huge or type(a%d) ~= 'number' or not (a%d >= %.17g and a%d <= %.17g and"
            .. " tobit(a%d) == a%d%s) then return false end", i, i, c.lo, i, c.hi, i, i,
            c.lo < 0 and c.hi > 0 and (" and (a%d ~= 0 or 1 / a%d > 0)"):format(i, i) or "")
        elseif not K.sigs and k.type == "float" and int then
          g(guard, "if type(a%d) ~= 'number' or (not huge and tobit(a%d) == a%d and"
            .. " (a%d ~= 0 or 1 / a%d > 0)) then return false end", i, i, i, i, i)
        else
          g(guard, "if type(a%d) ~= 'number' then return false end", i)
        end
        g(fill, "args.a%d = a%d", i, i)
      elseif kk == "bool" then
        g(guard, "if type(a%d) ~= 'boolean' then return false end", i)
        g(fill, "args.a%d = a%d", i, i)
      elseif kk == "table" then
        local elem = types.elem(ov.types[i])
        local esz = types.size[elem]
        g(guard, "if type(a%d) ~= 'table' then return false end", i)
        g(fill, "local n%d = #a%d", i, i)
        local copyin = ("for j = 1, n%d do local v = a%d[j]; if type(v) ~= %q then"
          .. " elemerr(K, %d, j, v, %q) end; buf%d[j - 1] = v end")
          :format(i, i, elem == "bool" and "boolean" or "number", i, elem, i)
        if async then
          g(fill, "local buf%d, bufm%d, st%d = STAGE_T(S, K, %d, a%d, %q, n%d)", i, i, i, i, i, elem, i)
          marks[#marks + 1] = ("COMMIT(S, st%d, %s)"):format(i, tostring(written))
        else
          g(top, "ST.cap%d = -1", i)
          g(fill, "if n%d > ST.cap%d then ST.buf%d, ST.bufm%d, ST.cap%d = newbuf(%q, n%d) end",
            i, i, i, i, i, elem, i)
          g(fill, "local buf%d, bufm%d = ST.buf%d, ST.bufm%d", i, i, i, i)
          g(fill, "%s", copyin)
        end
        local back = types.is_int64[elem] and "tonumber(buf%d[j - 1])" or "buf%d[j - 1]"
        if shared then
          g(fill, "args.a%d = bufm%d; args.a%d_len = n%d", i, i, i, i)
        else
          stage(i, "buf" .. i, esz, esz, written)
        end
        if written and not async then
          g(after, "for j = 1, n%d do a%d[j] = " .. back .. " end", i, i, i)
        end
      else
        g(guard, "if type(a%d) ~= 'cdata' or tonumber(typeof(a%d)) ~= %d then return false end",
          i, i, k.tag)
        local ci = k.info
        if kk == "cscalar" then
          g(fill, "args.a%d = a%d", i, i)
        elseif kk == "garray" then
          g(fill, "local p%d = a%d.ptr", i, i)
          g(fill, "if p%d == nil then freed(K, %d) end", i, i)
          g(fill, "if a%d.bk ~= BK or a%d.dev ~= DEV then devcheck(K, %d, a%d, TGT) end", i, i, i, i)
          -- a shaped array: its first dimension
          g(fill, "args.a%d = p%d; args.a%d_len = a%d.%s", i, i, i, i, ci.dims and "rows" or "n")
        elseif kk == "fptr" then
          g(fill, "args.a%d = a%d; args.a%d_len = -1", i, i, i)
        elseif kk == "farray" then
          local len = ci.len and tostring(ci.len) or ("vlen[a%d] or vlenof(a%d, %d)"):format(i, i, ci.esize)
          if shared then
            g(fill, "args.a%d = a%d; args.a%d_len = %s", i, i, i, len)
          else
            g(fill, "local n%d = %s", i, len)
            -- const elements: read only (dispatch refuses a kernel that
            -- writes them), a void * to the runtime
            stage(i, ci.const and ("cast(U8P, a%d)"):format(i) or ("a" .. i), ci.esize, 0, written)
          end
        else
          error("gpujit internal error: kind " .. tostring(kk))
        end
      end
    end
    if #params > n then    -- the plugins' buffers (gpujit.plugins)
      if async then
        raise("kernel '" .. K.name .. "': its plugins' launch buffers cannot be used by a "
          .. "launch on a stream yet; launch it without a stream")
      end
      U.PB = function() return plugins.launch_buffers(K, tgt, ov.plugins, n + 1) end
      g(top, "ST.PB_PRE, ST.PB_POST = U.PB()")
      g(fill, "ST.PB_PRE(args, d)")
    end
    for _, l in ipairs(regs) do fill[#fill + 1] = l end
    local launch = "if lib.gj_launch(H, d, args) ~= 0 then fail(K) end"
    if async then
      launch = "if lib.gj_stream_launch(S.h, H, d, args) ~= 0 then fail(K) end"
    elseif info.prints then   -- print in the kernel: its records, also when it failed
      U.PRINTS = function() printer.flush(K, env.lib, ov.handle, info.prints) end
      launch = "local rc = lib.gj_launch(H, d, args); U.PRINTS(); if rc ~= 0 then fail(K) end"
    end
    if #nreg > 0 then
      local relq = release_all(1):gsub("%%", "%%%%")
      launch = launch:gsub("then fail%(K%) end$", "then " .. relq .. "; fail(K) end")
      local rel = { ("local rf = lib.gj_mem_host_release(ctx, BK, DEV, r%d, 0)"):format(nreg[1]) }
      for k = 2, #nreg do
        rel[k] = ("if lib.gj_mem_host_release(ctx, BK, DEV, r%d, rf) ~= 0 then rf = -1 end"):format(nreg[k])
      end
      rel[#rel + 1] = "if rf ~= 0 then fail(K) end"
      for k = #rel, 1, -1 do table.insert(after, 1, rel[k]) end
    end
    local many = n + declared(fill) + declared(after) + 8 > SPILL_AT
    if many then
      spill_all(fill)
      spill_all(after)
      spill_all(marks)
      launch = spill(launch)
    end
    local src = {}
    src[#src + 1] = "local U = ..."
    src[#src + 1] = "local type, tonumber, typeof, TGT, K, lib, ctx, H, ARGCT, BK, DEV ="
      .. " U.type, U.tonumber, U.typeof, U.TGT, U.K, U.lib, U.ctx, U.H, U.ARGCT, U.BK, U.DEV"
    src[#src + 1] = "local vlen, vlenof, newbuf, newdbuf, elemerr, freed, devcheck, fail, barrier_fail ="
      .. " U.vlen, U.vlenof, U.newbuf, U.newdbuf, U.elemerr, U.freed, U.devcheck, U.fail, U.barrier_fail"
    src[#src + 1] = "local U8P, cast, tobit = U.U8P, U.cast, U.tobit"
    if async then
      U.STAGE_T, U.STAGE_D, U.COMMIT = stage_table, stage_dev, commit
      src[#src + 1] = "local STAGE_T, STAGE_D, COMMIT = U.STAGE_T, U.STAGE_D, U.COMMIT"
    end
    -- A launch state: the argument block, the staging buffers each argument
    -- keeps between launches (in one table: a local per buffer made a
    -- launcher of many staged arguments exceed Lua's 60 upvalues, a fuzz
    -- kernel of 17 arguments on cuda) and the plugins' buffers.  A launch
    -- takes the free one (FREE) and gives it back when it is done; a
    -- launch that starts meanwhile (re-entry: from a metamethod, a
    -- finalizer, a print or a compile callback that launches the same
    -- kernel, or a coroutine that yielded in the middle of one) finds none
    -- and makes its own, which becomes the free one after it.  A launch
    -- that raises gives nothing back: the next one makes a new state.
    src[#src + 1] = "local function fresh()"
    src[#src + 1] = "  local ST = { args = ARGCT() }"
    for _, l in ipairs(top) do src[#src + 1] = "  " .. l end
    src[#src + 1] = "  return ST"
    src[#src + 1] = "end"
    src[#src + 1] = "local FREE = fresh()"
    local plist = n > 0 and (", " .. concat(anames, ", ")) or ""
    src[#src + 1] = "return function(tgt, d, partial, huge" .. (async and ", S" or "") .. plist .. ")"
    src[#src + 1] = "  if tgt ~= TGT then return false end"
    for _, l in ipairs(guard) do src[#src + 1] = "  " .. l end
    if info.uses_barrier then
      src[#src + 1] = "  if partial then barrier_fail(K, d) end"
    end
    src[#src + 1] = "  local ST = FREE or fresh()"
    src[#src + 1] = "  FREE = nil"
    src[#src + 1] = "  local args = ST.args"
    if many and #nreg > 0 then src[#src + 1] = "  local RG = {}" end
    for _, l in ipairs(fill) do src[#src + 1] = "  " .. l end
    src[#src + 1] = "  " .. launch
    if async then
      for _, m in ipairs(marks) do src[#src + 1] = "  " .. m end
      -- what the stream keeps until its synchronize: the release of host
      -- registrations as a closure (false: none), the arguments that are
      -- objects, and the gpu.arrays among them as in use; the stagings are
      -- the stream's already (STAGE_T, STAGE_D)
      U.OV, U.PUSH, U.KEEP, U.USE = ov, h.push, h.keep, h.use
      src[#src + 1] = "  U.PUSH(S, K, U.OV, " .. (#after > 0 and "function()" or "false")
      for _, l in ipairs(after) do src[#src + 1] = "    " .. l end
      src[#src + 1] = (#after > 0 and "  end" or "") .. ")"
      for i = 1, n do
        local kk = kinds[i].kind
        if kk ~= "num" and kk ~= "bool" and kk ~= "cscalar" then
          src[#src + 1] = ("  U.KEEP(S, a%d)"):format(i)
          if kk == "garray" then src[#src + 1] = ("  U.USE(S, a%d)"):format(i) end
        end
      end
    end
    for _, l in ipairs(async and {} or after) do src[#src + 1] = "  " .. l end
    -- the plugins' reports last: one that fails raises after the results
    -- are copied back (and host registrations released)
    if U.PB then src[#src + 1] = "  ST.PB_POST(d)" end
    src[#src + 1] = "  FREE = ST"
    src[#src + 1] = "  return true"
    src[#src + 1] = "end"
    local code = concat(src, "\n")
    local chunk, err = load(code, "=[gpujit launcher " .. K.name .. "]")
    if not chunk then error("gpujit internal error: launcher: " .. err .. "\n" .. code, 0) end
    local L = chunk(U)
    K._lsrc = code
    return L
  end

  -- The sim launcher: arguments as they are (scalar cdata as Lua values;
  -- parameters with an eager scalar type converted to that type's value).
  local function sim_launcher(K, tgt, ov, kinds)
    local n = K.nparams
    local tags, conv, copy, tables = {}, {}, {}, {}
    for i = 1, n do
      local k = kinds[i]
      tags[i] = k.tag
      local t = ov.types[i]
      if k.kind == "cscalar" or (k.kind == "num" and K.sigs and not types.lnum[t]) then
        -- Scalars become Lua values (of the parameter's type, when a signature
        -- gives it): Lua arithmetic is the reference; 64-bit integers beyond
        -- 2^53 round (as cdata, / would divide as integers).
        local pt = K.sigs and t or k.type
        if pt == "bool" then
          conv[i] = function(v) return tonumber(v) ~= 0 end
        elseif pt ~= "double" and pt ~= k.type then
          conv[i] = function(v) return tonumber(ffi.cast(pt, v)) end
        elseif k.kind == "cscalar" then
          conv[i] = tonumber
        end
      elseif k.kind == "table" then
        -- A copy, as the compiled backends' staging: elements 1..#t read
        -- with t[j] (so __index answers for holes), the kernel works on the
        -- copy, which is written back with t[j] = v after it (__newindex
        -- for keys absent); what the kernel stores outside 1..#t is lost.
        local want = types.elem(t) == "bool" and "boolean" or "number"
        tables[#tables + 1] = i
        copy[i] = function(v)
          local c = {}
          for j = 1, #v do
            local x = v[j]
            if type(x) ~= want then elemerr(K, i, j, x, types.elem(t)) end
            c[j] = x
          end
          return c
        end
      elseif k.kind == "garray" then
        conv[i] = function(v)
          if v.ptr == nil then freed(K, i) end
          if not array.host_accessible(v) then
            argerr(K, i, "the gpu.array lives on " .. label_of(v.bk, v.dev)
              .. " and cannot be used by the sim backend")
          end
          return v
        end
      end
      if k.info and k.info.const then
        -- const elements: the kernel reads the array through a proxy whose
        -- first write raises what the compiled backends raise before the
        -- launch
        local text, dims = k.info.text, k.info.dims
        local function refuse() const_written(K, i, text) end
        local function ro(v, level)   -- each row of a multi-dimensional one too
          return setmetatable({}, { __newindex = refuse, __index = function(_, j)
            if dims and level <= #dims then return ro(v[j], level + 1) end
            return v[j]
          end })
        end
        conv[i] = function(v) return ro(v, 1) end
      end
      if K.opts.boundscheck and (k.kind == "table" or k.kind == "garray" or k.kind == "farray") then
        -- the compiled backends' checks: tables from 1, other arrays from 0
        local c, pn = conv[i], K.pnames[i]
        local what = "argument " .. i .. (pn and (" '" .. pn .. "'") or "")
        local base = k.kind == "table" and 1 or 0
        local esz = k.info and k.info.esize
        conv[i] = function(v)
          local len = k.kind == "table" and #v or k.kind == "garray" and tonumber(#v)
            or (k.info.len or vlenof(v, esz))
          if c then v = c(v) end
          return sim.checked(v, len, base, what, k.info and k.info.dims)
        end
      end
    end
    return function(t, d, _, huge, ...)
      if t ~= tgt then return false end
      for i = 1, n do
        if tag_of(K, (select(i, ...)), huge) ~= tags[i] then return false end
      end
      local argv = { ... }
      local copies, lens = {}, {}
      for i = 1, n do
        if copy[i] then
          lens[i] = #argv[i]
          copies[i] = copy[i](argv[i])
          argv[i] = copies[i]
        end
        local c = conv[i]
        if c then argv[i] = c(argv[i]) end
      end
      local ndim = d.ndim
      local global = { [0] = tonumber(d.global[0]), tonumber(d.global[1]), tonumber(d.global[2]) }
      local group = { [0] = tonumber(d.group[0]), tonumber(d.group[1]), tonumber(d.group[2]) }
      sim.run(K.fn, ndim, global, group, argv, n, K.name, K.opts.boundscheck, K.opts.timeout)
      for x = 1, #tables do
        local i = tables[x]
        local tab, c = (select(i, ...)), copies[i]
        for j = 1, lens[i] do tab[j] = c[j] end
      end
      return true
    end
  end

  return { gen_launcher = gen_launcher, sim_launcher = sim_launcher }
end
