/*
** The targets of the opencl runtime (SPIR, and PTX on NVIDIA's OpenCL):
** the code they generate.  The intrinsics IR
** for SPIR and PTX, `wrap` (the kernel entry point around @gj_body) and
** `emit`.  The backend's design is at the top of runtimes/opencl.c.
**
** The entry point, for a signature (a: float[], s: int32_t):
**
**   spir_kernel void @gj_kernel(ptr addrspace(1) %a.buf,
**                               ptr byval([7 x i64]) align 8 %blk
**                               [, ptr addrspace(1) %fault])
**
** (%blk an i64, the block's host address, for gj_job.block_by_address.)
**
** An array is a buffer, and in the block (targets/spir.h, ocl_block_slots)
** a byte offset into it (negative for a Lua table: its buffer minus one
** element) and a length; the block then holds %s, the launch's real global
** size and the host libm table's address.  The launch rounds the global
** size up to a multiple of the work group, and the entry returns at once
** in the work items beyond the real one.  %wi, the work-item state the
** core passes around, is an alloca of those three numbers (gj.global_size
** and gj.num_groups read them, gj.group_id adds a chunk's global offset:
** IR_GROUPS; every other id is the OpenCL builtin) and the fault record's
** address.  The libm table (host_libm devices only) is described below.
**
** Math.  The specs compare doubles bit for bit with LuaJIT, which calls
** glibc.  On PoCL's CPU devices (checked on PoCL 3.1):
** - llvm.sqrt/floor/ceil/fabs/trunc become instructions; llvm.exp/log/log2/
**   log10/sin/cos/pow and frem become calls of the libm functions of the
**   same names, which PoCL leaves to the dynamic linker: the host's glibc,
**   bit for bit.
** - The OpenCL builtins (_Z3sind: PoCL's SLEEF or libclc code) differ from
**   glibc in the last bit for about 10% of inputs (sin, pow).
** - A declared function that PoCL's kernel library lacks (tan, asin, ...:
**   LLVM 15 has no intrinsic for them) is a build error ("Cannot find
**   symbol tan in kernel library").  So those are called through a table
**   of function pointers whose address the launch passes (the block's last
**   slot): such a device
**   runs kernels on threads of this process, where the pointers are valid.
** Other devices get the OpenCL builtins (correct to the OpenCL spec's ulps,
** not bit-identical to glibc).
*/
#include "spir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitWriter.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "ptx.h"
#include "gj_target.h"

/* -- Intrinsics ---------------------------------------------------------- */

/* On NVIDIA's platform the shared PTX intrinsics (targets/ptx.c) read the
** fault record where add_entry keeps it. */
_Static_assert((int)OCL_WI_FAULT == (int)GJ_PTX_WI_FAULT,
               "the fault record's slot in %wi is the PTX intrinsics' one");

/* gj.<id>(ptr %wi, i32 %d): the OpenCL builtin (0 or 1 for d > 2), with
** the ids' ranges as !range: non-negative, sizes at least 1, local ids
** below 2^31 - 1 (the launch keeps group dimensions below 2^31).  With
** them the pipeline's indvars proves index arithmetic non-negative and
** drops the sign fix-up of Lua's floored % (a test and a select per use,
** which PoCL's work-item loops pay for every work item). */
#define IR_CLID(name, builtin, range)                                    \
  "declare spir_func i64 @" builtin "(i32) #3\n"                         \
  "define linkonce_odr i64 @gj." name "(ptr %wi, i32 %d) #0 {\n"         \
  "  %r = call spir_func i64 @" builtin "(i32 %d), !range " range "\n"   \
  "  ret i64 %r\n}\n"

/* gj.global_size: the real global size, from %wi (an array of 3 i64). */
#define IR_GSIZE                                                         \
  "define linkonce_odr i64 @gj.global_size(ptr %wi, i32 %d) #0 {\n"      \
  "  %ok = icmp ult i32 %d, 3\n"                                         \
  "  %dd = select i1 %ok, i32 %d, i32 0\n"                               \
  "  %i = zext i32 %dd to i64\n"                                         \
  "  %p = getelementptr inbounds i64, ptr %wi, i64 %i\n"                 \
  "  %v = load i64, ptr %p, align 8\n"                                   \
  "  %r = select i1 %ok, i64 %v, i64 1\n"                                \
  "  ret i64 %r\n}\n"

/* gj.group_id and gj.num_groups count the whole launch, which the runtime
** may enqueue as several NDRanges of whole groups with a global offset
** (runtimes/opencl_run.c, launch_chunks): OpenCL's get_global_id counts
** the offset, its get_group_id and get_num_groups do not.  So the group is
** get_group_id + get_global_offset / get_local_size, and the count comes
** from the real global size in %wi: ceil(global / local).  Both are uniform
** in a group (PoCL computes them once per group, not per work item). */
#define IR_GROUPS                                                        \
  "declare spir_func i64 @_Z12get_group_idj(i32) #3\n"                   \
  "declare spir_func i64 @_Z17get_global_offsetj(i32) #3\n"              \
  "define linkonce_odr i64 @gj.group_id(ptr %wi, i32 %d) #0 {\n"         \
  "  %g = call spir_func i64 @_Z12get_group_idj(i32 %d), !range !100\n"  \
  "  %o = call spir_func i64 @_Z17get_global_offsetj(i32 %d), !range !100\n" \
  "  %l = call spir_func i64 @_Z14get_local_sizej(i32 %d), !range !102\n" \
  "  %q = udiv i64 %o, %l\n"                                             \
  "  %r = add nuw nsw i64 %g, %q\n"                                      \
  "  ret i64 %r\n}\n"                                                    \
  "define linkonce_odr i64 @gj.num_groups(ptr %wi, i32 %d) #0 {\n"       \
  "  %n = call i64 @gj.global_size(ptr %wi, i32 %d)\n"                   \
  "  %l = call spir_func i64 @_Z14get_local_sizej(i32 %d), !range !102\n" \
  "  %a = add nuw nsw i64 %n, %l\n"                                      \
  "  %b = sub nuw nsw i64 %a, 1\n"                                       \
  "  %r = udiv i64 %b, %l\n"                                             \
  "  ret i64 %r\n}\n"

/* gj.fault_record: the address the entry keeps in %wi[OCL_WI_FAULT]. */
#define IR_FAULT_RECORD                                                  \
  "define linkonce_odr ptr addrspace(1) @gj.fault_record(ptr %wi) #0 {\n" \
  "  %p = getelementptr inbounds i64, ptr %wi, i64 3\n"                 \
  "  %v = load i64, ptr %p, align 8\n"                                  \
  "  %r = inttoptr i64 %v to ptr addrspace(1)\n"                        \
  "  ret ptr addrspace(1) %r\n}\n"

/* gj.math.<fn>.<sfx> as a call of `impl` (T %x [, T %y]) and its
** declaration with calling convention cc ("" or "spir_func "). */
#define IR_M1(fn, T, sfx, cc, impl)                                      \
  "declare " cc T " @" impl "(" T ") #2\n"                               \
  "define linkonce_odr " T " @gj.math." fn "." sfx "(" T " %x) #1 {\n"   \
  "  %r = call " cc T " @" impl "(" T " %x)\n  ret " T " %r\n}\n"
#define IR_M2(fn, T, sfx, cc, impl)                                      \
  "declare " cc T " @" impl "(" T ", " T ") #2\n"                        \
  "define linkonce_odr " T " @gj.math." fn "." sfx "(" T " %x, " T       \
  " %y) #1 {\n"                                                          \
  "  %r = call " cc T " @" impl "(" T " %x, " T " %y)\n  ret " T         \
  " %r\n}\n"

/* Both precisions: the llvm.* intrinsic (I), the OpenCL builtin (B, with
** the length of the name for its mangling), the host libm through the
** table (H: a gj.libm.* declaration that wrap turns into a table call). */
#define IR_I1(fn)                                                        \
  IR_M1(#fn, "float", "f32", "", "llvm." #fn ".f32")                     \
  IR_M1(#fn, "double", "f64", "", "llvm." #fn ".f64")
#define IR_I2(fn)                                                        \
  IR_M2(#fn, "float", "f32", "", "llvm." #fn ".f32")                     \
  IR_M2(#fn, "double", "f64", "", "llvm." #fn ".f64")
#define IR_B1(fn, len)                                                   \
  IR_M1(#fn, "float", "f32", "spir_func ", "_Z" #len #fn "f")            \
  IR_M1(#fn, "double", "f64", "spir_func ", "_Z" #len #fn "d")
#define IR_B2(fn, len)                                                   \
  IR_M2(#fn, "float", "f32", "spir_func ", "_Z" #len #fn "ff")           \
  IR_M2(#fn, "double", "f64", "spir_func ", "_Z" #len #fn "dd")
#define IR_H1(fn)                                                        \
  IR_M1(#fn, "float", "f32", "", "gj.libm." #fn ".f32")                  \
  IR_M1(#fn, "double", "f64", "", "gj.libm." #fn ".f64")
#define IR_H2(fn)                                                        \
  IR_M2(#fn, "float", "f32", "", "gj.libm." #fn ".f32")                  \
  IR_M2(#fn, "double", "f64", "", "gj.libm." #fn ".f64")

/* frem is C's fmod exactly; CPUs call fmod for it. */
#define IR_FMOD(T, sfx)                                                  \
  "define linkonce_odr " T " @gj.math.fmod." sfx "(" T " %x, " T         \
  " %y) #1 {\n  %r = frem " T " %x, %y\n  ret " T " %r\n}\n"

#define IR_SPIR_COMMON                                                   \
  IR_CLID("global_id", "_Z13get_global_idj", "!100")                     \
  IR_CLID("local_id", "_Z12get_local_idj", "!101")                       \
  IR_CLID("group_size", "_Z14get_local_sizej", "!102")                   \
  IR_GROUPS IR_GSIZE IR_FAULT_RECORD                                     \
  "declare spir_func void @" OCL_SPIR_BARRIER "(i32) #4\n"               \
  "define linkonce_odr void @gj.barrier(ptr %wi) #5 {\n"                 \
  "  call spir_func void @" OCL_SPIR_BARRIER "(i32 3)\n  ret void\n}\n"  \
  IR_I1(sqrt) IR_I1(floor) IR_I1(ceil) IR_I1(fabs) IR_I1(trunc)          \
  IR_FMOD("float", "f32") IR_FMOD("double", "f64")

/* #0 ids, #1 math wrappers, #2 math implementations, #3 id builtins,
** #4 the barrier builtin, #5 gj.barrier (3 = CLK_LOCAL_MEM_FENCE |
** CLK_GLOBAL_MEM_FENCE). */
#define IR_ATTRS                                                         \
  "attributes #0 = { alwaysinline nounwind willreturn readonly }\n"      \
  "attributes #1 = { alwaysinline nounwind willreturn readnone }\n"      \
  "attributes #2 = { nounwind willreturn readnone }\n"                   \
  "attributes #3 = { nounwind willreturn readnone }\n"                   \
  "attributes #4 = { convergent nounwind }\n"                            \
  "attributes #5 = { alwaysinline convergent nounwind }\n"               \
  "!100 = !{i64 0, i64 9223372036854775807}\n"                           \
  "!101 = !{i64 0, i64 2147483647}\n"                                    \
  "!102 = !{i64 1, i64 9223372036854775807}\n"

const char ocl_spir_intrinsics_ir[] =
  IR_SPIR_COMMON
  IR_B1(exp, 3) IR_B1(log, 3) IR_B1(log2, 4) IR_B1(log10, 5)
  IR_B1(sin, 3) IR_B1(cos, 3) IR_B1(tan, 3) IR_B1(asin, 4) IR_B1(acos, 4)
  IR_B1(atan, 4) IR_B1(sinh, 4) IR_B1(cosh, 4) IR_B1(tanh, 4)
  IR_B2(pow, 3) IR_B2(atan2, 5)
  IR_ATTRS;

/* pow through the table, not llvm.pow: LLVM turns pow(2.0, sitofp n) into
** ldexp(1.0, n), which PoCL's kernel library does not have (the fuzzer's
** seed 40267: "Cannot find symbol ldexp"); an indirect call it leaves. */
const char ocl_spir_hostlibm_ir[] =
  IR_SPIR_COMMON
  IR_I1(exp) IR_I1(log) IR_I1(log2) IR_I1(log10) IR_I1(sin) IR_I1(cos)
  IR_H1(tan) IR_H1(asin) IR_H1(acos) IR_H1(atan) IR_H1(sinh) IR_H1(cosh)
  IR_H1(tanh) IR_H2(atan2) IR_H2(pow)
  IR_ATTRS;

/* The host libm functions in LIBM_* order (f64 names; f32 adds "f"). */
static const char *const libm_names[LIBM__N1] = {
  "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "atan2", "pow"
};

/* -- wrap ---------------------------------------------------------------- */

static void fn_attr(LLVMContextRef c, LLVMValueRef f, const char *name,
                    int add)
{
  unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
  if (add)
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(c, k, 0));
  else
    LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, k);
}

/* The OpenCL C name of a scalar kind, for kernel_arg_type (bool: char). */
static const char *cl_type_name(gj_scalar s)
{
  static const char *const n[GJ_SCALAR__MAX] = {
    "char", "char", "uchar", "short", "ushort", "int", "uint", "long",
    "ulong", "float", "double"
  };
  return (unsigned)s < GJ_SCALAR__MAX ? n[s] : "char";
}

/* The kernel-argument metadata clang attaches to a SPIR kernel; PoCL reads
** the address spaces from it. */
typedef struct argmd {
  LLVMMetadataRef as[3 * GJ_MAXPARAMS + 4], acc[3 * GJ_MAXPARAMS + 4],
      ty[3 * GJ_MAXPARAMS + 4], qual[3 * GJ_MAXPARAMS + 4];
  unsigned n;
} argmd;

static void md_arg(LLVMContextRef c, argmd *a, unsigned space,
                   const char *type)
{
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
  a->as[a->n] = LLVMValueAsMetadata(LLVMConstInt(i32, space, 0));
  a->acc[a->n] = LLVMMDStringInContext2(c, "none", 4);
  a->ty[a->n] = LLVMMDStringInContext2(c, type, strlen(type));
  a->qual[a->n] = LLVMMDStringInContext2(c, "", 0);
  a->n++;
}

static void md_kernel(LLVMContextRef c, LLVMValueRef f, argmd *a)
{
  static const char *const kinds[5] = {
    "kernel_arg_addr_space", "kernel_arg_access_qual", "kernel_arg_type",
    "kernel_arg_base_type", "kernel_arg_type_qual"
  };
  LLVMMetadataRef *lists[5] = { a->as, a->acc, a->ty, a->ty, a->qual };
  int i;
  for (i = 0; i < 5; i++) {
    unsigned k = LLVMGetMDKindIDInContext(c, kinds[i],
                                          (unsigned)strlen(kinds[i]));
    LLVMGlobalSetMetadata(f, k, LLVMMDNodeInContext2(c, lists[i], a->n));
  }
}

/* The named metadata SPIR consumers look for: version 1.2 of SPIR and of
** OpenCL C. */
static void md_spir_versions(LLVMContextRef c, LLVMModuleRef m)
{
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
  LLVMValueRef v[2] = { LLVMConstInt(i32, 1, 0), LLVMConstInt(i32, 2, 0) };
  LLVMValueRef node = LLVMMDNodeInContext(c, v, 2);
  LLVMAddNamedMetadataOperand(m, "opencl.spir.version", node);
  LLVMAddNamedMetadataOperand(m, "opencl.ocl.version", node);
}

/* PoCL takes a global in the local address space for the kernel's
** work-group memory (one copy per group in flight) only when its name is
** the kernel's name, a dot and more, as clang names them (@k.tile); any
** other is one variable for the whole program, which groups running at
** the same time on different threads would share. */
static void name_shared(LLVMModuleRef m, unsigned as_shared)
{
  LLVMValueRef g;
  for (g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g)) {
    char name[256];
    size_t len;
    const char *old = LLVMGetValueName2(g, &len);
    if (LLVMGetPointerAddressSpace(LLVMTypeOf(g)) != as_shared) continue;
    snprintf(name, sizeof(name), "gj_kernel.%.*s", (int)len, old);
    LLVMSetValueName2(g, name, strlen(name));
  }
}

/* Does the module call the host libm (a gj.libm.* declaration)? */
static int uses_libm(LLVMModuleRef m)
{
  LLVMValueRef f;
  for (f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    if (len > 8 && strncmp(name, "gj.libm.", 8) == 0) return 1;
  }
  return 0;
}

/* The entry's guard calls gj.global_id, which the core linked only if the
** kernel calls it (the linker takes linkonce definitions on demand): link
** the job's intrinsics again for it when it is missing. */
static int link_global_id(LLVMContextRef c, LLVMModuleRef m,
                          const gj_job *job, gj_err *err)
{
  LLVMTypeRef ps[2] = { LLVMPointerTypeInContext(c, 0),
                        LLVMInt32TypeInContext(c) };
  if (LLVMGetNamedFunction(m, "gj.global_id")) return 0;
  LLVMAddFunction(m, "gj.global_id",
                  LLVMFunctionType(LLVMInt64TypeInContext(c), ps, 2, 0));
  return gj_link_intrinsics(m, job, err);
}

/* What every entry point of one kernel shares. */
typedef struct entry_shape {
  LLVMTypeRef kty;          /* the entry's type */
  argmd md;                 /* its kernel-argument metadata */
  LLVMTypeRef bty;          /* the block's type: [nslots x i64] */
  unsigned blk;             /* the block's argument index */
  int by_address;           /* the argument is the block's address (i64) */
  unsigned nslots;          /* its slots (ocl_block_slots) */
  int has_libm;             /* a kernel calls the host libm */
} entry_shape;

/* Slot `slot` of the entry's block (the argument sh->blk), as type ty. */
static LLVMValueRef block_load(LLVMBuilderRef b, LLVMValueRef kernel,
                               const entry_shape *sh, unsigned slot,
                               LLVMTypeRef ty, const char *name)
{
  LLVMContextRef c = LLVMGetTypeContext(ty);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
  LLVMValueRef idx = LLVMConstInt(i64, slot, 0);
  LLVMValueRef base = LLVMGetParam(kernel, sh->blk), p, v;
  if (sh->by_address)
    base = LLVMBuildIntToPtr(b, base, LLVMPointerTypeInContext(c, 1), "blk");
  p = LLVMBuildInBoundsGEP2(b, i64, base, &idx, 1, "");
  v = LLVMBuildLoad2(b, ty, p, name);
  LLVMSetAlignment(v, 8);
  return v;
}

/* After inlining every gj.libm.<fn>.<sfx> call is in an entry point: in
** each entry, load the function's pointer from the table (whose address is
** the block's last slot) in its entry block and call through it. */
static int bind_libm(LLVMContextRef c, LLVMModuleRef m, LLVMValueRef kernel,
                     const entry_shape *sh, gj_err *err)
{
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMTypeRef ptr1 = LLVMPointerTypeInContext(c, 1);
  LLVMTypeRef ptr0 = LLVMPointerTypeInContext(c, 0);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(kernel);
  LLVMValueRef table = NULL;
  unsigned attrs[3];
  int i, a, prec, rc = 0;
  attrs[0] = LLVMGetEnumAttributeKindForName("readnone", 8);
  attrs[1] = LLVMGetEnumAttributeKindForName("nounwind", 8);
  attrs[2] = LLVMGetEnumAttributeKindForName("willreturn", 10);
  LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(entry));
  for (prec = 0; prec < 2 && rc == 0; prec++) {
    for (i = 0; i < LIBM__N1 && rc == 0; i++) {
      char name[32];
      LLVMValueRef decl, fp = NULL, idx;
      LLVMUseRef use, next;
      snprintf(name, sizeof(name), "gj.libm.%s.%s", libm_names[i],
               prec ? "f32" : "f64");
      decl = LLVMGetNamedFunction(m, name);
      if (!decl) continue;
      for (use = LLVMGetFirstUse(decl); use && rc == 0; use = next) {
        LLVMValueRef u = LLVMGetUser(use);
        next = LLVMGetNextUse(use);
        if (!LLVMIsACallInst(u)) {
          rc = gj_err_set(err, "internal error: opencl: %s is used other than "
                          "by a call", name);
          break;
        }
        if (LLVMGetBasicBlockParent(LLVMGetInstructionParent(u)) != kernel)
          continue;                /* another entry's call */
        if (!fp) {
          if (!table)
            table = LLVMBuildIntToPtr(b, block_load(b, kernel, sh,
                                                    sh->nslots - 1, i64, ""),
                                      ptr1,
                                      "libm");
          idx = LLVMConstInt(i64, (unsigned long long)(prec * LIBM__N1 + i),
                             0);
          fp = LLVMBuildLoad2(b, ptr0,
                              LLVMBuildGEP2(b, ptr0, table, &idx, 1, ""),
                              name);
          LLVMSetAlignment(fp, 8);
        }
        /* The call keeps what the declaration said: no memory effects, so
        ** that LLVM may still hoist and combine it. */
        for (a = 0; a < 3; a++)
          LLVMAddCallSiteAttribute(u, LLVMAttributeFunctionIndex,
                                   LLVMCreateEnumAttribute(c, attrs[a], 0));
        LLVMSetOperand(u, (unsigned)LLVMGetNumOperands(u) - 1, fp);
      }
    }
  }
  LLVMDisposeBuilder(b);
  return rc;
}

/* Add entry point `name` calling body.  guarded: work items beyond the
** real global size (the hidden arguments) return at once; unguarded
** entries are for launches whose global size is a multiple of the group,
** where every work item is real (a test per work item that PoCL's
** work-group vectorizer pays for: saxpy ran 1.2-1.3x slower with it). */
static LLVMValueRef add_entry(LLVMModuleRef m, const char *name,
                              entry_shape *sh, int ptx, int guarded,
                              LLVMValueRef body, const gj_sig *sig)
{
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(c), i64 = LLVMInt64TypeInContext(c);
  LLVMTypeRef bodyty = LLVMGlobalGetValueType(body);
  LLVMValueRef bargs[1 + 2 * GJ_MAXPARAMS], gsize[OCL_HIDDEN_GLOBAL];
  LLVMValueRef kernel, wi, ok = NULL;
  LLVMBasicBlockRef entry, run, done;
  LLVMBuilderRef b;
  unsigned i, k, nb, slot, nwi = OCL_HIDDEN_GLOBAL + (sig->faults ? 1u : 0u);
  unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5);
  unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
  kernel = LLVMAddFunction(m, name, sh->kty);
  LLVMSetFunctionCallConv(kernel, ptx ? LLVMCCallConv : 76 /* spir_kernel */);
  if (!sh->by_address) {
    LLVMAddAttributeAtIndex(kernel, sh->blk + 1,
                            LLVMCreateTypeAttribute(c, byval, sh->bty));
    LLVMAddAttributeAtIndex(kernel, sh->blk + 1,
                            LLVMCreateEnumAttribute(c, align, 8));
  }
  fn_attr(c, kernel, "nounwind", 1);
  if (sig->uses_barrier) fn_attr(c, kernel, "convergent", 1);
  if (ptx)
    gj_ptx_mark_kernel(m, kernel);
  else
    md_kernel(c, kernel, &sh->md);

  b = LLVMCreateBuilderInContext(c);
  entry = LLVMAppendBasicBlockInContext(c, kernel, "entry");
  run = LLVMAppendBasicBlockInContext(c, kernel, "run");
  done = LLVMAppendBasicBlockInContext(c, kernel, "done");
  LLVMPositionBuilderAtEnd(b, entry);
  wi = LLVMBuildAlloca(b, LLVMArrayType(i64, nwi), "wi");
  LLVMSetAlignment(wi, 8);
  for (i = 0; i < OCL_HIDDEN_GLOBAL; i++)
    gsize[i] = block_load(b, kernel, sh, sh->nslots - 1 - OCL_HIDDEN_GLOBAL + i,
                          i64, "gsize");
  for (i = 0; i < nwi; i++) {
    LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)i, 0);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(b, i64, wi, &idx, 1, "");
    LLVMValueRef v = i == OCL_WI_FAULT
        ? LLVMBuildPtrToInt(b, LLVMGetParam(kernel, sh->blk + 1), i64, "")
        : gsize[i];
    LLVMSetAlignment(LLVMBuildStore(b, v, p), 8);
  }
  if (guarded) {
    LLVMValueRef gid = LLVMGetNamedFunction(m, "gj.global_id");
    LLVMTypeRef gty = LLVMGlobalGetValueType(gid);
    for (i = 0; i < OCL_HIDDEN_GLOBAL; i++) {
      LLVMValueRef a[2] = {
        wi, LLVMConstInt(LLVMInt32TypeInContext(c), (unsigned long long)i, 0)
      };
      LLVMValueRef id = LLVMBuildCall2(b, gty, gid, a, 2, "");
      LLVMValueRef in = LLVMBuildICmp(b, LLVMIntULT, id, gsize[i], "");
      ok = ok ? LLVMBuildAnd(b, ok, in, "") : in;
    }
    LLVMBuildCondBr(b, ok, run, done);
  } else {
    LLVMBuildBr(b, run);
  }
  LLVMPositionBuilderAtEnd(b, run);
  bargs[0] = wi;
  for (i = 0, k = 1, nb = 0, slot = 0; i < (unsigned)sig->nparams; i++) {
    const gj_param *p = &sig->params[i];
    if (p->is_array) {
      LLVMValueRef off = block_load(b, kernel, sh, slot++, i64, "off");
      bargs[k++] = LLVMBuildGEP2(b, i8, LLVMGetParam(kernel, nb++), &off, 1, "");
      bargs[k++] = block_load(b, kernel, sh, slot++, i64, "len");
    } else if (p->elem == GJ_BOOL) {
      bargs[k++] = LLVMBuildICmp(b, LLVMIntNE,
                                 block_load(b, kernel, sh, slot++, i8, ""),
                                 LLVMConstInt(i8, 0, 0), "");
    } else {
      bargs[k] = block_load(b, kernel, sh, slot++,
                            LLVMTypeOf(LLVMGetParam(body, k)), "");
      k++;
    }
  }
  LLVMBuildCall2(b, bodyty, body, bargs, k, "");
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  return kernel;
}

int ocl_wrap(void *ts, const gj_job *job, LLVMModuleRef m, LLVMValueRef body,
             const gj_sig *sig, gj_err *err)
{
  LLVMContextRef c;
  LLVMTypeRef i64, voidt, ptr1;
  LLVMTypeRef ktypes[GJ_MAXPARAMS + 2];
  LLVMValueRef f, kernels[2] = { NULL, NULL };
  entry_shape sh;
  argmd *md = &sh.md;
  int ptx = strncmp(job->triple, "nvptx", 5) == 0, i;
  unsigned nk = 0;
  (void)ts;
  if (LLVMGetNamedFunction(m, OCL_ENTRY))
    return gj_err_set(err, "opencl: the module already has a " OCL_ENTRY);
  if (!body || LLVMIsDeclaration(body))
    return gj_err_set(err, "opencl: the kernel body is not defined");
  if (ptx && gj_ptx_check_math(m, "opencl", "PTX would need NVIDIA's "
                                "libdevice", err) != 0)
    return -1;
  c = LLVMGetModuleContext(m);
  i64 = LLVMInt64TypeInContext(c);
  voidt = LLVMVoidTypeInContext(c);
  ptr1 = LLVMPointerTypeInContext(c, job->as_global);

  if (gj_body_check(body, job, sig, "opencl", err)) return -1;
  memset(&sh, 0, sizeof(sh));
  for (i = 0; i < sig->nparams; i++) {
    const gj_param *p = &sig->params[i];
    char ty[16];
    if (!p->is_array) continue;
    snprintf(ty, sizeof(ty), "%s*", cl_type_name((gj_scalar)p->elem));
    ktypes[nk++] = ptr1;
    md_arg(c, md, 1, ty);
  }
  sh.nslots = ocl_block_slots(sig);
  sh.bty = LLVMArrayType(i64, sh.nslots);
  sh.blk = nk;
  sh.by_address = job->block_by_address;
  ktypes[nk++] = sh.by_address ? i64 : LLVMPointerTypeInContext(c, 0);
  md_arg(c, md, 0, sh.by_address ? "ulong" : "gj_block");
  if (sig->faults) {
    ktypes[nk++] = ptr1;
    md_arg(c, md, 1, "int*");
  }
  sh.has_libm = uses_libm(m);

  if (link_global_id(c, m, job, err) != 0) return -1;
  if (!ptx) name_shared(m, job->as_shared);

  /* The body and the intrinsics are inlined into the kernel; only the
  ** kernel is left. */
  LLVMSetLinkage(body, LLVMInternalLinkage);
  fn_attr(c, body, "noinline", 0);
  fn_attr(c, body, "optnone", 0);
  fn_attr(c, body, "alwaysinline", 1);
  for (f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    if (!LLVMIsDeclaration(f) && len > 3 && strncmp(name, "gj.", 3) == 0)
      LLVMSetLinkage(f, LLVMInternalLinkage);
  }

  sh.kty = LLVMFunctionType(voidt, ktypes, nk, 0);
  /* A kernel with barriers is only launched with a global size that is a
  ** multiple of the group (the launcher checks): it needs no guard, and no
  ** barrier may be skipped.  Others get both entries (the launch picks,
  ** runtimes/opencl_run.c). */
  kernels[0] = add_entry(m, OCL_ENTRY, &sh, ptx, !sig->uses_barrier, body, sig);
  if (!sig->uses_barrier)
    kernels[1] = add_entry(m, OCL_ENTRY_EXACT, &sh, ptx, 0, body, sig);
  if (!ptx) md_spir_versions(c, m);

  if (sh.has_libm) {
    /* Inline now, so that every gj.libm call is in an entry, where the
    ** table is. */
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(m, "always-inline", NULL, po);
    LLVMDisposePassBuilderOptions(po);
    if (e) {
      char *msg = LLVMGetErrorMessage(e);
      gj_err_set(err, "internal error: opencl: inlining: %s", msg);
      LLVMDisposeErrorMessage(msg);
      return -1;
    }
    for (i = 0; i < 2; i++)
      if (kernels[i] && bind_libm(c, m, kernels[i], &sh, err) != 0) return -1;
  }
  return 0;
}

/* -- emit ---------------------------------------------------------------- */

/* PTX text either way; the binary keeps its NUL (NVIDIA's
** clCreateProgramWithBinary reads it as a C string). */
static int ptx_emit(void *ts, const gj_job *job, LLVMTargetMachineRef tm,
                    LLVMModuleRef m, int asm, char **out, size_t *len,
                    gj_err *err)
{
  (void)ts;
  (void)job;
  *out = NULL;
  *len = 0;
  if (gj_target_emit(tm, m, 1, "opencl", out, len, err) != 0) return -1;
  *len += !asm;
  return 0;
}

static int spir_finish_ir(void *ts, const gj_job *job, LLVMModuleRef m,
                          gj_err *err)
{
  (void)ts;
  (void)job;
  return ocl_loops_no_unroll(m, err);
}

static int spir_emit(void *ts, const gj_job *job, LLVMTargetMachineRef tm,
                     LLVMModuleRef m, int asm, char **out, size_t *len,
                     gj_err *err)
{
  LLVMMemoryBufferRef buf = NULL;
  size_t n;
  (void)ts;
  (void)job;
  (void)tm;
  *out = NULL;
  *len = 0;
  if (asm) {
    /* SPIR has no assembly: its readable form is the LLVM IR itself. */
    char *ir = LLVMPrintModuleToString(m);
    n = strlen(ir);
    *out = malloc(n + 1);
    if (*out) memcpy(*out, ir, n + 1);
    LLVMDisposeMessage(ir);
    if (!*out) return gj_err_set(err, "opencl: out of memory");
    *len = n;
    return 0;
  } else {
    buf = LLVMWriteBitcodeToMemoryBuffer(m);
    if (!buf) return gj_err_set(err, "opencl: cannot write the bitcode");
  }
  n = LLVMGetBufferSize(buf);
  *out = malloc(n + 1);
  if (!*out) {
    LLVMDisposeMemoryBuffer(buf);
    return gj_err_set(err, "opencl: out of memory (%zu bytes of code)", n);
  }
  memcpy(*out, LLVMGetBufferStart(buf), n);
  (*out)[n] = '\0';
  *len = n;
  LLVMDisposeMemoryBuffer(buf);
  return 0;
}

const gj_codegen gj_codegen_spir = {
  .name = "spir", .wrap = ocl_wrap, .finish_ir = spir_finish_ir,
  .emit = spir_emit,
};

const gj_codegen gj_codegen_ocl_ptx = {
  .name = "ptx", .wrap = ocl_wrap, .emit = ptx_emit,
  /* finish_ir: none */
};
