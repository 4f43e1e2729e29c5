-- LÖVE's configuration for the gpujit example (examples/love/main.lua).
function love.conf(t)
  t.identity = "gpujit-love"     -- the save directory: ~/.local/share/love/gpujit-love
  t.version = "11.4"
  t.window.title = "gpujit + LÖVE: 100k particles"
  t.window.width, t.window.height = 960, 540
  -- The headless run (--frames N, under Xvfb) draws as fast as it can.
  local headless = false
  for _, a in ipairs(arg or {}) do headless = headless or a == "--frames" end
  t.window.vsync = headless and 0 or 1
  -- Nothing here makes sound or reads joysticks (and Xvfb has neither).
  t.modules.audio, t.modules.sound, t.modules.joystick, t.modules.video = false, false, false, false
end
