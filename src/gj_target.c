/*
** LLVM targets: one-time initialisation, target machines, the host CPU.
*/
#include "gj_target.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>

#include "gj_backend.h"

/* The only process-wide state: LLVM's target registry is itself global, so
** registering it is done once for all contexts. */
static pthread_once_t target_once = PTHREAD_ONCE_INIT;

static void target_init_once(void)
{
  LLVMInitializeAllTargetInfos();
  LLVMInitializeAllTargets();
  LLVMInitializeAllTargetMCs();
  LLVMInitializeAllAsmPrinters();
  LLVMInitializeAllAsmParsers();
}

int gj_target_init(gj_err *err)
{
  if (pthread_once(&target_once, target_init_once) != 0)
    return gj_err_set(err, "cannot initialise the LLVM targets");
  return 0;
}

int gj_target_machine(const gj_job *job, LLVMTargetMachineRef *out,
                      gj_err *err)
{
  LLVMTargetRef t = NULL;
  char *msg = NULL;
  *out = NULL;
  if (gj_target_init(err) != 0) return -1;
  /* SPIR has no target in LLVM 15: its artifact is the IR, optimized
  ** without a target machine (LLVMRunPasses accepts none). */
  if (strncmp(job->triple, "spir-", 5) == 0 ||
      strncmp(job->triple, "spir64-", 7) == 0)
    return 0;
  if (LLVMGetTargetFromTriple(job->triple, &t, &msg) != 0) {
    gj_err_set(err, "no LLVM target for triple '%s': %s", job->triple,
               msg ? msg : "unknown error");
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMDisposeMessage(msg);
  *out = LLVMCreateTargetMachine(t, job->triple, job->cpu, job->features,
                                 job->codegen_opt, job->reloc,
                                 job->code_model);
  if (*out == NULL)
    return gj_err_set(err, "cannot create a target machine for '%s' (cpu '%s')",
                      job->triple, job->cpu);
  return 0;
}

int gj_target_emit(LLVMTargetMachineRef tm, LLVMModuleRef m, int asm,
                   const char *who, char **out, size_t *len, gj_err *err)
{
  LLVMMemoryBufferRef buf = NULL;
  char *msg = NULL;
  size_t n;
  *out = NULL;
  *len = 0;
  if (!tm || LLVMTargetMachineEmitToMemoryBuffer(tm, m, asm ? LLVMAssemblyFile
                                                           : LLVMObjectFile,
                                                 &msg, &buf) != 0) {
    gj_err_set(err, "%s: code generation failed: %s", who,
               msg ? msg : tm ? "unknown error" : "no target machine");
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMDisposeMessage(msg);
  n = LLVMGetBufferSize(buf);
  *out = malloc(n + 1);
  if (!*out) {
    LLVMDisposeMemoryBuffer(buf);
    return gj_err_set(err, "%s: out of memory (%zu bytes of code)", who, n);
  }
  memcpy(*out, LLVMGetBufferStart(buf), n);
  (*out)[n] = '\0';
  *len = n;
  LLVMDisposeMemoryBuffer(buf);
  return 0;
}

/* Copy s into buf; 0 when it fits, -1 (buf untouched) when it does not. */
static int copy_str(char *buf, size_t n, const char *s)
{
  size_t len = strlen(s);
  if (len >= n) return -1;
  memcpy(buf, s, len + 1);
  return 0;
}

/* Keep only the "+feature" entries of a feature list, in place. */
static void keep_enabled(char *fs)
{
  char *r = fs, *w = fs;
  while (*r) {
    size_t len = strcspn(r, ",");
    if (*r == '+') {
      if (w != fs) *w++ = ',';
      memmove(w, r, len);
      w += len;
    }
    r += len;
    if (*r == ',') r++;
  }
  *w = '\0';
}

int gj_target_host(char *triple, size_t ntriple, char *cpu, size_t ncpu,
                   char *features, size_t nfeatures)
{
  char *def = LLVMGetDefaultTargetTriple();
  char *norm = LLVMNormalizeTargetTriple(def);
  char *name = LLVMGetHostCPUName();
  char *fs = LLVMGetHostCPUFeatures();
  int r = -1;
  if (copy_str(triple, ntriple, norm) != 0) goto done;
  if (copy_str(features, nfeatures, fs) == 0) {
    r = copy_str(cpu, ncpu, name);
    goto done;
  }
  keep_enabled(fs);
  if (copy_str(features, nfeatures, fs) == 0)
    r = copy_str(cpu, ncpu, "generic");
done:
  LLVMDisposeMessage(def);
  LLVMDisposeMessage(norm);
  LLVMDisposeMessage(name);
  LLVMDisposeMessage(fs);
  return r;
}
