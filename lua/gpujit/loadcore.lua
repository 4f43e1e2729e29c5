-- gpujit.loadcore: requires the compiled core (gpujit.core) once, for every
-- module that reads it while loading (gpujit.types takes the type table from
-- it, gpujit itself the rest).  One attempt, so that a core that fails to
-- load gives every reader the same message (a second require of a module
-- whose loader raised answers "loop or previous error loading module").
-- Returns { core = the module } or { error = why it did not load }.
local ok, c = pcall(require, "gpujit.core")
if ok and type(c) == "table" then return { core = c } end
return { error = tostring(c) }
