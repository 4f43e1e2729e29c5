std = "luajit"
max_line_length = 110
files["spec"] = { std = "+busted" }
exclude_files = { "build/" }
-- The LÖVE example (examples/love/) runs inside LÖVE: its `love` global.
files["examples/love"] = { std = "+love" }
