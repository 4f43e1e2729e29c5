/*
** The cpu target's artifact (native.h): the object code LLVM emits, linked
** into a shared object by the system's linker.  The cpu runtime loads it
** with dlopen (runtimes/cpu.c), after a compile and on a disk-cache hit
** alike, so that loading a cpu kernel needs neither LLVM nor its JIT: the
** step towards a runtime that runs cached kernels without the compiler
** (docs/architecture.md, "The runtime and the compiler").  PoCL does the
** same with the kernels of its CPU devices.
**
** The linker is an external program found at run time (tool.h):
** GPUJIT_LD, else ld, ld.lld-15 or ld.lld on PATH (GNU ld first:
** ld.lld-15 maps libLLVM, which costs it ~20 ms a link here).  Only a compile needs
** it; a hit only dlopens what the cache kept.
*/
#include "native.h"

#include <stdio.h>

#include "tool.h"

/* -Bsymbolic: the kernel's own symbols bind inside it, never to another
** kernel's gj_entry; -z now: resolved at dlopen, so that a missing symbol
** is load's error, not a crash at the first launch.  No -lm: the math
** functions the kernel calls resolve from the process, which has libm (the
** Lua state's libluajit links it), as ORC's process lookup did. */
static const char *const link_args[] = {
  "-shared", "-Bsymbolic", "-z", "now", "-z", "noexecstack",
  "--hash-style=gnu", NULL
};

int gj_native_link(const char *obj, size_t len, char **out, size_t *outlen,
                   gj_err *err)
{
  static const char *const names[] = { "ld", "ld.lld-15", "ld.lld", NULL };
  char path[1024];
  if (gj_tool_find("GPUJIT_LD", names, path, sizeof(path), err) != 0)
    return gj_err_prefix(err, "cpu: no linker for the kernel's shared "
                         "object: ");
  if (gj_tool_run(path, link_args, obj, len, out, outlen, err) != 0)
    return gj_err_prefix(err, "cpu: linking the kernel's shared object: ");
  return 0;
}
