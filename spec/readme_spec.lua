-- README.md's 30-second tour runs as written on every backend, and the
-- signature its comment names is the one the launch compiled (issue 32: it
-- said lua_pos31 for n = 1,000,000, a lua_pos20).

local H = require("spec.helpers")

local function tour()
  local f = assert(io.open("README.md", "r"))
  local s = f:read("*a")
  f:close()
  local code = s:match("## A 30%-second tour%s*```lua\n(.-)```")
  assert(code, "README.md has no 30-second tour")
  local types = code:match("%-%- compiled on first launch for %(([^)]*)%)")
  assert(types, "the tour's comment names no signature")
  return code, types
end

for _, bk in ipairs(H.backends) do
  describe("README.md's tour [" .. bk .. "]", function()
    it("runs, and compiles the signature its comment names", function()
      local code, types = tour()
      local chunk = assert(loadstring(code .. "\nreturn saxpy, x, y", "=README.md"))
      local saxpy, x, y = H.with_backend(bk, chunk)
      assert.are.equal(types, table.concat(saxpy:signatures()[1], ", "))
      assert.are.equal(0, y[999999] + x[0])
    end)
  end)
end
