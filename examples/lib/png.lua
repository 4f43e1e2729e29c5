-- A small PNG codec for the examples: 8-bit grey, RGB and RGBA images,
-- not interlaced.  Compression and checksums are zlib's (Debian's zlib1g,
-- loaded through the FFI); this file only frames the chunks and undoes the
-- scanline filters.
--
--   local png = require("png")
--   png.write(path, w, h, channels, pixels)   -- pixels: uint8_t[w * h * channels]
--   local img = png.read(path)                -- { width, height, channels, pixels }
--
-- Both raise an error naming the file on failure.
local ffi = require("ffi")
local bit = require("bit")

pcall(ffi.cdef, [[
  unsigned long crc32(unsigned long crc, const uint8_t *buf, unsigned int len);
  unsigned long compressBound(unsigned long n);
  int compress2(uint8_t *dst, unsigned long *dstlen, const uint8_t *src, unsigned long srclen,
                int level);
  int uncompress(uint8_t *dst, unsigned long *dstlen, const uint8_t *src, unsigned long srclen);
]])

local zlib
for _, name in ipairs({ "z", "libz.so.1" }) do
  local ok, lib = pcall(ffi.load, name)
  if ok then zlib = lib break end
end

local png = {}

local SIGNATURE = "\137PNG\r\n\26\n"
local COLOR_TYPE = { [1] = 0, [3] = 2, [4] = 6 }   -- channels -> PNG colour type
local CHANNELS = { [0] = 1, [2] = 3, [6] = 4 }

local function need_zlib()
  if not zlib then error("png: zlib (libz.so.1, Debian's zlib1g) cannot be loaded", 3) end
end

local function be32(n)
  return string.char(bit.band(bit.rshift(n, 24), 255), bit.band(bit.rshift(n, 16), 255),
    bit.band(bit.rshift(n, 8), 255), bit.band(n, 255))
end

local function read_be32(s, pos)
  local a, b, c, d = s:byte(pos, pos + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local function chunk(kind, data)
  local body = kind .. data
  local crc = tonumber(zlib.crc32(0, ffi.cast("const uint8_t *", body), #body))
  return be32(#data) .. body .. be32(crc)
end

function png.write(path, w, h, channels, pixels)
  need_zlib()
  local ctype = COLOR_TYPE[channels]
  if not ctype then error("png.write: " .. path .. ": channels must be 1, 3 or 4", 2) end
  -- Every scanline gets filter type 0 (none): zlib does the compressing.
  local stride = w * channels
  local raw = ffi.new("uint8_t[?]", (stride + 1) * h)
  for y = 0, h - 1 do
    raw[y * (stride + 1)] = 0
    ffi.copy(raw + y * (stride + 1) + 1, pixels + y * stride, stride)
  end
  local cap = zlib.compressBound((stride + 1) * h)
  local z = ffi.new("uint8_t[?]", cap)
  local zlen = ffi.new("unsigned long[1]", cap)
  if zlib.compress2(z, zlen, raw, (stride + 1) * h, 9) ~= 0 then
    error("png.write: " .. path .. ": zlib compress2 failed", 2)
  end
  local f, err = io.open(path, "wb")
  if not f then error("png.write: " .. err, 2) end
  f:write(SIGNATURE,
    chunk("IHDR", be32(w) .. be32(h) .. string.char(8, ctype, 0, 0, 0)),
    chunk("IDAT", ffi.string(z, zlen[0])),
    chunk("IEND", ""))
  f:close()
end

-- Undo one scanline's filter in place; prev is the previous (unfiltered)
-- line or nil, bpp the bytes per pixel.
local function unfilter(kind, line, prev, n, bpp)
  if kind == 0 then return true end
  for i = 0, n - 1 do
    local a = i >= bpp and line[i - bpp] or 0
    local b = prev and prev[i] or 0
    local v
    if kind == 1 then v = a
    elseif kind == 2 then v = b
    elseif kind == 3 then v = math.floor((a + b) / 2)
    elseif kind == 4 then
      local c = (prev and i >= bpp) and prev[i - bpp] or 0
      local p = a + b - c
      local pa, pb, pc = math.abs(p - a), math.abs(p - b), math.abs(p - c)
      if pa <= pb and pa <= pc then v = a elseif pb <= pc then v = b else v = c end
    else
      return false
    end
    line[i] = (line[i] + v) % 256
  end
  return true
end

function png.read(path)
  need_zlib()
  local f, err = io.open(path, "rb")
  if not f then error("png.read: " .. err, 2) end
  local s = f:read("*a")
  f:close()
  local function bad(why) error("png.read: " .. path .. ": " .. why, 3) end
  if s:sub(1, 8) ~= SIGNATURE then bad("not a PNG file") end
  local pos, w, h, channels, idat = 9, nil, nil, nil, {}
  while pos + 8 <= #s do
    local len, kind = read_be32(s, pos), s:sub(pos + 4, pos + 7)
    local data = s:sub(pos + 8, pos + 7 + len)
    if #data ~= len then bad("truncated " .. kind .. " chunk") end
    if kind == "IHDR" then
      w, h = read_be32(data, 1), read_be32(data, 5)
      local depth, ctype, interlace = data:byte(9), data:byte(10), data:byte(13)
      channels = CHANNELS[ctype]
      if depth ~= 8 or not channels or interlace ~= 0 then
        bad("only 8-bit grey, RGB and RGBA images without interlacing are supported")
      end
    elseif kind == "IDAT" then
      idat[#idat + 1] = data
    elseif kind == "IEND" then
      break
    end
    pos = pos + 12 + len
  end
  if not w then bad("no IHDR chunk") end
  local z = table.concat(idat)
  local stride = w * channels
  local rawlen = (stride + 1) * h
  local raw = ffi.new("uint8_t[?]", rawlen)
  local outlen = ffi.new("unsigned long[1]", rawlen)
  if zlib.uncompress(raw, outlen, ffi.cast("const uint8_t *", z), #z) ~= 0 or outlen[0] ~= rawlen then
    bad("corrupt image data")
  end
  local pixels = ffi.new("uint8_t[?]", stride * h)
  for y = 0, h - 1 do
    local line = raw + y * (stride + 1) + 1
    if not unfilter(line[-1], line, y > 0 and pixels + (y - 1) * stride or nil, stride, channels) then
      bad("unknown scanline filter " .. line[-1])
    end
    ffi.copy(pixels + y * stride, line, stride)
  end
  return { width = w, height = h, channels = channels, pixels = pixels }
end

return png
