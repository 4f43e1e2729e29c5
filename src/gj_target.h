/*
** LLVM targets: one-time initialisation, target machines for a compile job,
** and a description of the host CPU.
**
** Every backend that generates code goes through here, so that LLVM's
** target registry is initialised exactly once per process whatever the
** number of contexts, and so that a target machine is always made from the
** job (the job is the single source of truth about the target).
*/
#ifndef GJ_TARGET_H
#define GJ_TARGET_H

#include <stddef.h>

#include <llvm-c/TargetMachine.h>

#include "gj_err.h"

struct gj_job;

/* Register every target, MC layer, asm printer and asm parser that LLVM was
** built with (libLLVM-15 has them all, NVPTX included).  Idempotent and
** thread-safe (pthread_once).  Returns 0, or -1 with err. */
int gj_target_init(gj_err *err);

/* A target machine for job->triple/cpu/features/codegen_opt/reloc/
** code_model.  Initialises the targets if needed.  The caller disposes
** *out with LLVMDisposeTargetMachine.  Returns 0, or -1 with err.  For a
** SPIR triple (spir-*, spir64-*), which LLVM 15 has no target for, *out is
** NULL and the result 0: such a job is optimized without a machine. */
int gj_target_machine(const struct gj_job *job, LLVMTargetMachineRef *out,
                      gj_err *err);

/* Code of m from tm: assembly text (asm != 0; PTX on NVPTX) or an object
** file, malloc'ed into *out with a NUL after its *len bytes (so that
** assembly is a C string).  Errors start with `who`.  Returns 0 or -1. */
int gj_target_emit(LLVMTargetMachineRef tm, LLVMModuleRef m, int asm,
                   const char *who, char **out, size_t *len, gj_err *err);

/* The host: normalized triple, CPU name and feature string
** ("+avx2,-avx512f,...") as LLVM detects them, so generated code uses every
** vector extension the machine has and none it lacks.  When the feature
** string does not fit, the CPU becomes "generic" and only the enabled
** features are kept (a generic CPU implies nothing beyond the base ISA, so
** this is still exact).  Returns 0, or -1 when even that does not fit. */
int gj_target_host(char *triple, size_t ntriple, char *cpu, size_t ncpu,
                   char *features, size_t nfeatures);

#endif
