/*
** The SPIR-V target of the opencl runtime: the SPIR module translated by
** the Khronos LLVM/SPIR-V translator.  LLVM 15 has no SPIR-V code
** generator; Debian's llvm-spirv-15 (the translator built against the
** same LLVM) reads the bitcode gpujit makes for SPIR, which is the SPIR-V
** "flavour" of LLVM IR it expects: spir64 triple, spir_kernel entries
** with clang's argument metadata, OpenCL builtins by their mangled names
** (_Z13get_global_idj, _Z3sind), which it turns into BuiltIn variables and
** OpenCL.std instructions.
**
** The translator runs as a program (targets/tool.c), not a library: its
** library has only a C++ interface, and it is linked against its own copy
** of LLVM's libraries.  It runs once per compiled kernel; the cache keeps
** the device's binary, so a warm process never runs it.
**
** What the optimized SPIR module may hold and the translator (15.0.0)
** refuses, and what this file makes of it first:
** - `freeze`: its operand (freeze only stops poison from spreading, and
**   SPIR-V has no poison to stop);
** - llvm.fptosi.sat / llvm.fptoui.sat (number to integer): OpenCL's
**   convert_<type>_sat builtins;
** - `atomicrmw fadd` (gpu.atomic_add on floats): a compare-and-swap loop
**   on the value's bits.  SPIR-V has OpAtomicFAddEXT only as an extension
**   (SPV_EXT_shader_atomic_float_add) few devices list, and the translator
**   does not emit it for atomicrmw.
** - llvm.loop metadata (loops of barrier kernels are marked not to unroll
**   for PoCL's SPIR, spir_loops.c): the translator makes OpLoopMerge of
**   it, which needs structured control flow that gpujit's loops lack;
** - blocks out of dominance order: put in reverse post-order;
** - a select of pointers with a constant (undef, null) value, which
**   crashes it;
** - two edges from one block to another (phis with two entries from one
**   block): the second through a block of its own.
** Then sroa and instcombine, whatever job.passes says: the translator
** infers each pointer's element type from its uses, and with pointers
** kept in memory (job.passes = "default<O0>") it made OpPtrAccessChains
** whose types disagree.  spirv-val, where installed, checks every module
** the translator makes (validate), so what slips through is an error, not
** a driver's crash.
*/
#include "spir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitWriter.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "gj_cache.h"
#include "tool.h"

#define SPIRV_ENV "GPUJIT_LLVM_SPIRV"
#define SPIRV_MAXOPTS 12

int ocl_spirv_find(ocl_spirv_tool *t, gj_err *err)
{
  static const char *const names[] = {
    "llvm-spirv-15", "/usr/lib/llvm-15/bin/llvm-spirv", NULL
  };
  char hex[65];
  if (t->state == 0) {
    gj_err e;
    t->state = -1;
    if (gj_tool_find(SPIRV_ENV, names, t->path, sizeof(t->path),
                     &e) != 0)
      snprintf(t->why, sizeof(t->why), "%.500s (Debian: apt-get "
               "install llvm-spirv-15, which `make deps` does)", e.msg);
    else if (gj_cache_file_hex(t->path, hex) != 0)
      snprintf(t->why, sizeof(t->why), "cannot read %.500s",
               t->path);
    else {
      snprintf(t->id, sizeof(t->id), "%.16s", hex);
      t->state = 1;
    }
  }
  if (t->state > 0) return 0;
  return gj_err_set(err, "opencl: SPIR-V needs the LLVM/SPIR-V translator: "
                    "%s", t->why);
}

/* -- Before the translator ------------------------------------------------ */

/* gj.spirv.fadd.<f32|f64>.p<as>(ptr %p, T %v): atomicrmw fadd's result
** (the old value) by a compare-and-swap loop on the bits.  The first
** guess is an atomic load; each failed exchange retries with the value it
** saw, so the loop ends once no other work item wrote in between. */
static const char fadd_ir[] =
  "define %1$s @gj.spirv.fadd.%2$s.p%3$u(ptr addrspace(%3$u) %%p, "
  "%1$s %%v) alwaysinline nounwind {\n"
  "entry:\n"
  "  %%i = load atomic %1$s, ptr addrspace(%3$u) %%p monotonic, align %4$u\n"
  "  br label %%loop\n"
  "loop:\n"
  "  %%old = phi %1$s [ %%i, %%entry ], [ %%seen, %%loop ]\n"
  "  %%new = fadd %1$s %%old, %%v\n"
  "  %%oi = bitcast %1$s %%old to %5$s\n"
  "  %%ni = bitcast %1$s %%new to %5$s\n"
  "  %%r = cmpxchg ptr addrspace(%3$u) %%p, %5$s %%oi, %5$s %%ni "
  "seq_cst seq_cst, align %4$u\n"
  "  %%si = extractvalue { %5$s, i1 } %%r, 0\n"
  "  %%ok = extractvalue { %5$s, i1 } %%r, 1\n"
  "  %%seen = bitcast %5$s %%si to %1$s\n"
  "  br i1 %%ok, label %%done, label %%loop\n"
  "done:\n"
  "  ret %1$s %%old\n"
  "}\n";

/* The CAS-loop function for an atomicrmw fadd on T in address space as,
** linked into m when it is not there yet; NULL with err.  It is linked
** external (the linker leaves out a local definition nothing references
** yet) and made internal once it is called. */
static LLVMValueRef fadd_fn(LLVMModuleRef m, LLVMTypeRef t, unsigned as,
                            gj_err *err)
{
  int dbl = LLVMGetTypeKind(t) == LLVMDoubleTypeKind;
  char name[64], ir[2048];
  LLVMValueRef f;
  LLVMMemoryBufferRef buf;
  if (!dbl && LLVMGetTypeKind(t) != LLVMFloatTypeKind) {
    gj_err_set(err, "internal error: opencl: SPIR-V: an atomic add on a "
               "float type other than float and double");
    return NULL;
  }
  snprintf(name, sizeof(name), "gj.spirv.fadd.%s.p%u", dbl ? "f64" : "f32",
           as);
  if ((f = LLVMGetNamedFunction(m, name)) != NULL) return f;
  snprintf(ir, sizeof(ir), fadd_ir, dbl ? "double" : "float",
           dbl ? "f64" : "f32", as, dbl ? 8u : 4u, dbl ? "i64" : "i32");
  buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, strlen(ir), name);
  if (gj_link_ir(m, buf, "the SPIR-V atomic add", err) != 0) return NULL;
  if ((f = LLVMGetNamedFunction(m, name)) == NULL)
    gj_err_set(err, "internal error: opencl: SPIR-V: %s was not linked",
               name);
  else
    LLVMSetLinkage(f, LLVMInternalLinkage);
  return f;
}

/* A call of llvm.fpto[su]i.sat.iN.fM (how gpujit converts a number to an
** integer: NaN gives 0, the rest saturates) as a call of OpenCL's
** convert_<int type>_sat, which says the same (OpenCL C 6.2.3.3) and which
** the translator makes an OpConvertFToS/U decorated SaturatedConversion.
** 0 when the call is of something else. */
static int sat_builtin(LLVMValueRef call, char *name, size_t n)
{
  static const char *const ints[] = { "char", "short", "int", "long" };
  LLVMValueRef callee = LLVMGetCalledValue(call);
  LLVMTypeRef rt = LLVMTypeOf(call), at;
  const char *s;
  size_t len;
  unsigned bits, k;
  char conv[32];
  if (!callee || !LLVMIsAFunction(callee)) return 0;
  s = LLVMGetValueName2(callee, &len);
  if (len < 17 || (strncmp(s, "llvm.fptosi.sat.", 16) != 0 &&
                   strncmp(s, "llvm.fptoui.sat.", 16) != 0) ||
      LLVMGetTypeKind(rt) != LLVMIntegerTypeKind)
    return 0;
  bits = LLVMGetIntTypeWidth(rt);
  at = LLVMTypeOf(LLVMGetOperand(call, 0));
  for (k = 0; k < 4 && (8u << k) != bits; k++) {}
  if (k == 4 || (LLVMGetTypeKind(at) != LLVMFloatTypeKind &&
                 LLVMGetTypeKind(at) != LLVMDoubleTypeKind))
    return 0;
  snprintf(conv, sizeof(conv), "convert_%s%s_sat", s[9] == 'u' ? "u" : "",
           ints[k]);
  snprintf(name, n, "_Z%zu%s%c", strlen(conv), conv,
           LLVMGetTypeKind(at) == LLVMDoubleTypeKind ? 'd' : 'f');
  return 1;
}

/* Make call call the OpenCL builtin `name` (same type) instead. */
static void call_builtin(LLVMModuleRef m, LLVMValueRef call, const char *name)
{
  LLVMTypeRef ft = LLVMGetCalledFunctionType(call);
  LLVMValueRef f = LLVMGetNamedFunction(m, name);
  if (!f) {
    f = LLVMAddFunction(m, name, ft);
    LLVMSetFunctionCallConv(f, LLVMSPIRFUNCCallConv);
  }
  LLVMSetOperand(call, (unsigned)LLVMGetNumOperands(call) - 1, f);
  LLVMSetInstructionCallConv(call, LLVMSPIRFUNCCallConv);
}

/* -- Block order -------------------------------------------------------- */

typedef struct bb_index {
  LLVMBasicBlockRef bb;
  unsigned i;
} bb_index;

static int bb_cmp(const void *a, const void *b)
{
  uintptr_t x = (uintptr_t)((const bb_index *)a)->bb;
  uintptr_t y = (uintptr_t)((const bb_index *)b)->bb;
  return x < y ? -1 : x > y;
}

static unsigned bb_find(const bb_index *ix, unsigned n, LLVMBasicBlockRef bb)
{
  bb_index key = { bb, 0 };
  const bb_index *r = bsearch(&key, ix, n, sizeof(*ix), bb_cmp);
  return r ? r->i : n;
}

/* Put f's blocks in reverse post-order, unreachable ones last: SPIR-V
** wants every block after its dominators, and LLVM keeps blocks in the
** order passes left them (which the translator copies). */
static int order_blocks(LLVMValueRef f)
{
  unsigned n = LLVMCountBasicBlocks(f), i, sp = 0, npost = 0;
  LLVMBasicBlockRef *bbs = malloc(n * sizeof(*bbs));
  bb_index *ix = malloc(n * sizeof(*ix));
  unsigned *post = malloc(n * sizeof(*post)), *stack = malloc(n * sizeof(*stack));
  unsigned *next = calloc(n, sizeof(*next));
  unsigned char *seen = calloc(n, 1);
  int rc = -1;
  if (!bbs || !ix || !post || !stack || !next || !seen) goto done;
  LLVMGetBasicBlocks(f, bbs);
  for (i = 0; i < n; i++) ix[i] = (bb_index){ bbs[i], i };
  qsort(ix, n, sizeof(*ix), bb_cmp);
  stack[sp++] = 0;
  seen[0] = 1;
  while (sp > 0) {
    unsigned b = stack[sp - 1];
    LLVMValueRef t = LLVMGetBasicBlockTerminator(bbs[b]);
    unsigned ns = t ? LLVMGetNumSuccessors(t) : 0;
    if (next[b] < ns) {
      unsigned s = bb_find(ix, n, LLVMGetSuccessor(t, next[b]++));
      if (s < n && !seen[s]) {
        seen[s] = 1;
        stack[sp++] = s;
      }
    } else {
      post[npost++] = b;
      sp--;
    }
  }
  for (i = npost; i-- > 1;)
    LLVMMoveBasicBlockAfter(bbs[post[i - 1]], bbs[post[i]]);
  for (i = 0; i < n; i++)
    if (!seen[i]) LLVMMoveBasicBlockAfter(bbs[i], LLVMGetLastBasicBlock(f));
  rc = 0;
done:
  free(bbs);
  free(ix);
  free(post);
  free(stack);
  free(next);
  free(seen);
  return rc;
}

/* Rewrite what the translator refuses (the top of this file). */
/* A switch on an integer narrower than 32 bits and not 8 or 16 wide (i1,
** i2, i3: instcombine shrinks a switch's condition to the bits its cases
** need, the reverse pass of a derivative switches on a predecessor's
** number) as the same switch on the value zero-extended to i32: SPIR-V's
** OpSwitch takes an integer scalar of a width a device has (an i1 is a
** boolean there, and llvm-spirv-15 refuses i2: "InvalidBitWidth"). */
static void widen_switch(LLVMBuilderRef b, LLVMValueRef sw)
{
  LLVMValueRef cond = LLVMGetOperand(sw, 0), nsw, wide;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(LLVMTypeOf(cond)));
  unsigned w = LLVMGetIntTypeWidth(LLVMTypeOf(cond));
  unsigned k, nops = (unsigned)LLVMGetNumOperands(sw);
  if (w >= 32 || w == 8 || w == 16) return;
  wide = NULL;
  /* a phi of constants that only this switch uses (the reverse pass's
  ** predecessor number): the same phi in i32, so that no value of the odd
  ** width is left */
  if (LLVMIsAPHINode(cond) && LLVMGetFirstUse(cond) &&
      !LLVMGetNextUse(LLVMGetFirstUse(cond))) {
    unsigned j, n = LLVMCountIncoming(cond);
    for (j = 0; j < n && LLVMIsAConstantInt(LLVMGetIncomingValue(cond, j)); j++) {}
    if (j == n) {
      LLVMPositionBuilderBefore(b, cond);
      wide = LLVMBuildPhi(b, i32, "");
      for (j = 0; j < n; j++) {
        LLVMValueRef v = LLVMConstInt(i32, LLVMConstIntGetZExtValue(
                                        LLVMGetIncomingValue(cond, j)), 0);
        LLVMBasicBlockRef from = LLVMGetIncomingBlock(cond, j);
        LLVMAddIncoming(wide, &v, &from, 1);
      }
    }
  }
  LLVMPositionBuilderBefore(b, sw);
  if (!wide) wide = LLVMBuildZExt(b, cond, i32, "");
  nsw = LLVMBuildSwitch(b, wide,
                        LLVMValueAsBasicBlock(LLVMGetOperand(sw, 1)),
                        (nops - 2) / 2);
  for (k = 2; k + 1 < nops; k += 2)     /* operands: cond, default, (value, dest)... */
    LLVMAddCase(nsw, LLVMConstInt(i32, LLVMConstIntGetZExtValue(LLVMGetOperand(sw, k)), 0),
                LLVMValueAsBasicBlock(LLVMGetOperand(sw, k + 1)));
  LLVMInstructionEraseFromParent(sw);
  if (LLVMIsAPHINode(cond) && !LLVMGetFirstUse(cond)) LLVMInstructionEraseFromParent(cond);
}

/* A select of pointers one of whose values is a constant (`select i1 %c,
** ptr undef, ptr %p`: SimplifyCFG's merge of the reverse pass's blocks, or
** null) crashes llvm-spirv-15 (signal 11; it infers a pointer's element
** type from its operands).  An undef (or poison) value: the other value (a
** refinement of undef); null: the same select on the addresses as
** integers. */
static void fix_ptr_select(LLVMBuilderRef b, LLVMValueRef sel)
{
  LLVMValueRef v[2] = { LLVMGetOperand(sel, 1), LLVMGetOperand(sel, 2) }, r;
  LLVMTypeRef pt = LLVMTypeOf(sel), it;
  int k;
  if (LLVMGetTypeKind(pt) != LLVMPointerTypeKind ||
      (!LLVMIsAConstant(v[0]) && !LLVMIsAConstant(v[1])))
    return;
  for (k = 0; k < 2; k++)
    if (LLVMIsUndef(v[k]) || LLVMIsPoison(v[k])) {
      LLVMReplaceAllUsesWith(sel, v[1 - k]);
      LLVMInstructionEraseFromParent(sel);
      return;
    }
  it = LLVMInt64TypeInContext(LLVMGetTypeContext(pt));
  LLVMPositionBuilderBefore(b, sel);
  for (k = 0; k < 2; k++) v[k] = LLVMBuildPtrToInt(b, v[k], it, "");
  r = LLVMBuildSelect(b, LLVMGetOperand(sel, 0), v[0], v[1], "");
  LLVMReplaceAllUsesWith(sel, LLVMBuildIntToPtr(b, r, pt, ""));
  LLVMInstructionEraseFromParent(sel);
}

/* Every alloca of a constant size to the top of the entry block, in order
** (spirv-val: "All OpVariable instructions in a function must be the first
** instructions in the first block"; SROA and inlining leave some after
** other instructions, as a metatype constructor's temporary). */
static void hoist_allocas(LLVMBuilderRef b, LLVMValueRef f)
{
  LLVMBasicBlockRef entry = LLVMGetFirstBasicBlock(f), bb;
  LLVMValueRef anchor = LLVMGetFirstInstruction(entry);
  while (anchor && LLVMIsAAllocaInst(anchor)) anchor = LLVMGetNextInstruction(anchor);
  if (!anchor) return;
  for (bb = entry; bb; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMValueRef i = LLVMGetFirstInstruction(bb), next;
    for (; i; i = next) {
      next = LLVMGetNextInstruction(i);
      if (i == anchor || !LLVMIsAAllocaInst(i) ||
          !LLVMIsAConstant(LLVMGetOperand(i, 0)))
        continue;
      if (bb == entry) {   /* already among the first? */
        LLVMValueRef p = LLVMGetFirstInstruction(entry);
        while (p != i && LLVMIsAAllocaInst(p)) p = LLVMGetNextInstruction(p);
        if (p == i) continue;
      }
      LLVMInstructionRemoveFromParent(i);
      LLVMPositionBuilderBefore(b, anchor);
      LLVMInsertIntoBuilder(b, i);
    }
  }
}

/* The block's place in f's layout. */
static unsigned block_pos(LLVMValueRef f, LLVMBasicBlockRef x)
{
  unsigned n = 0;
  LLVMBasicBlockRef bb;
  for (bb = LLVMGetFirstBasicBlock(f); bb && bb != x; bb = LLVMGetNextBasicBlock(bb)) n++;
  return n;
}

/* A pointer phi whose first incoming value is a constant or comes from a
** block laid out after the phi's (a back edge) crashes llvm-spirv-15
** (signal 11): the same phi with an earlier block's value first.  A
** global (a gpu.shared array) may come first: two phis that swap two
** shared arrays in a loop (`a, b = b, a`) have nothing else from before
** the loop, and with each other's value first they crash it too. */
static void order_ptr_phi(LLVMBuilderRef b, LLVMValueRef f, LLVMValueRef phi)
{
  unsigned j, n = LLVMCountIncoming(phi), at, first = n;
  LLVMValueRef nphi;
  at = block_pos(f, LLVMGetInstructionParent(phi));
  for (j = 0; j < n && first == n; j++) {
    LLVMValueRef v = LLVMGetIncomingValue(phi, j);
    if ((!LLVMIsAConstant(v) || LLVMIsAGlobalValue(v)) &&
        block_pos(f, LLVMGetIncomingBlock(phi, j)) < at)
      first = j;
  }
  if (first == 0 || first == n) return;
  LLVMPositionBuilderBefore(b, phi);
  nphi = LLVMBuildPhi(b, LLVMTypeOf(phi), "");
  for (j = 0; j < n; j++) {
    unsigned k = j == 0 ? first : (j <= first ? j - 1 : j);
    LLVMValueRef v = LLVMGetIncomingValue(phi, k);
    LLVMBasicBlockRef from = LLVMGetIncomingBlock(phi, k);
    LLVMAddIncoming(nphi, &v, &from, 1);
  }
  LLVMReplaceAllUsesWith(phi, nphi);
  LLVMInstructionEraseFromParent(phi);
}

/* A block that reaches one successor by two edges (a switch with two cases
** to one block, the reverse pass's switch on a predecessor's number when
** that predecessor branched to the same block either way) gives the
** successor's phis one entry per edge, with one value; SPIR-V wants one
** OpPhi entry per parent block, and llvm-spirv-15 copies the duplicates
** (spirv-val: "OpPhi's number of incoming blocks does not match block's
** predecessor count").  Every edge after the first goes through a block of
** its own, which branches on: one entry per block on both sides. */
static void split_dup_edges(LLVMContextRef c, LLVMBuilderRef b, LLVMValueRef f)
{
  LLVMBasicBlockRef bb;
  for (bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
    unsigned k, j, ns = t ? LLVMGetNumSuccessors(t) : 0;
    for (k = 1; k < ns; k++) {
      LLVMBasicBlockRef to = LLVMGetSuccessor(t, k), edge;
      LLVMValueRef phi, next;
      for (j = 0; j < k && LLVMGetSuccessor(t, j) != to; j++) {}
      if (j == k || !LLVMIsAPHINode(LLVMGetFirstInstruction(to))) continue;
      edge = LLVMAppendBasicBlockInContext(c, f, "");
      LLVMPositionBuilderAtEnd(b, edge);
      LLVMBuildBr(b, to);
      LLVMSetSuccessor(t, k, edge);
      /* each phi of `to`: its second entry from bb now comes from edge */
      for (phi = LLVMGetFirstInstruction(to); phi && LLVMIsAPHINode(phi); phi = next) {
        unsigned n = LLVMCountIncoming(phi), e, seen = 0;
        LLVMValueRef nphi;
        next = LLVMGetNextInstruction(phi);
        LLVMPositionBuilderBefore(b, phi);
        nphi = LLVMBuildPhi(b, LLVMTypeOf(phi), "");
        for (e = 0; e < n; e++) {
          LLVMValueRef v = LLVMGetIncomingValue(phi, e);
          LLVMBasicBlockRef from = LLVMGetIncomingBlock(phi, e);
          if (from == bb && seen++ == 1) from = edge;
          LLVMAddIncoming(nphi, &v, &from, 1);
        }
        LLVMReplaceAllUsesWith(phi, nphi);
        LLVMInstructionEraseFromParent(phi);
      }
    }
  }
}

static int prepare(LLVMModuleRef m, gj_err *err)
{
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  unsigned loop_md = LLVMGetMDKindIDInContext(c, "llvm.loop", 9);
  LLVMValueRef f;
  int rc = 0;
  for (f = LLVMGetFirstFunction(m); f && rc == 0; f = LLVMGetNextFunction(f)) {
    LLVMBasicBlockRef bb;
    for (bb = LLVMGetFirstBasicBlock(f); bb && rc == 0;
         bb = LLVMGetNextBasicBlock(bb)) {
      LLVMValueRef i = LLVMGetFirstInstruction(bb), next;
      for (; i && rc == 0; i = next) {
        char name[48];
        next = LLVMGetNextInstruction(i);
        if (LLVMIsATerminatorInst(i))
          LLVMSetMetadata(i, loop_md, NULL);
        if (LLVMIsACallInst(i) && sat_builtin(i, name, sizeof(name))) {
          call_builtin(m, i, name);
        } else if (LLVMGetInstructionOpcode(i) == LLVMFreeze) {
          LLVMReplaceAllUsesWith(i, LLVMGetOperand(i, 0));
          LLVMInstructionEraseFromParent(i);
        } else if (LLVMGetInstructionOpcode(i) == LLVMAtomicRMW &&
                   LLVMGetAtomicRMWBinOp(i) == LLVMAtomicRMWBinOpFAdd) {
          LLVMValueRef a[2] = { LLVMGetOperand(i, 0), LLVMGetOperand(i, 1) };
          LLVMValueRef fn = fadd_fn(m, LLVMTypeOf(a[1]),
                                    LLVMGetPointerAddressSpace(
                                      LLVMTypeOf(a[0])), err);
          if (!fn) {
            rc = -1;
            break;
          }
          LLVMPositionBuilderBefore(b, i);
          LLVMReplaceAllUsesWith(i, LLVMBuildCall2(b,
                                 LLVMGlobalGetValueType(fn), fn, a, 2, ""));
          LLVMInstructionEraseFromParent(i);
        }
      }
    }
  }
  LLVMDisposeBuilder(b);
  if (rc == 0) {
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    /* the CAS loops inlined where they were called */
    LLVMErrorRef e = LLVMRunPasses(m, "always-inline,globaldce,"
                                   "function(sroa,instcombine)", NULL, po);
    LLVMDisposePassBuilderOptions(po);
    if (e) {
      char *msg = LLVMGetErrorMessage(e);
      rc = gj_err_set(err, "internal error: opencl: SPIR-V: %s", msg);
      LLVMDisposeErrorMessage(msg);
    }
  }
  /* after instcombine, which would shrink them again */
  for (f = LLVMGetFirstFunction(m); f && rc == 0; f = LLVMGetNextFunction(f)) {
    LLVMBasicBlockRef bb;
    LLVMBuilderRef wb = LLVMCreateBuilderInContext(c);
    for (bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
      LLVMValueRef t = LLVMGetBasicBlockTerminator(bb), i, next;
      if (t && LLVMGetInstructionOpcode(t) == LLVMSwitch) widen_switch(wb, t);
      for (i = LLVMGetFirstInstruction(bb); i; i = next) {
        next = LLVMGetNextInstruction(i);
        if (LLVMGetInstructionOpcode(i) == LLVMSelect) fix_ptr_select(wb, i);
      }
    }
    if (!LLVMIsDeclaration(f)) {
      hoist_allocas(wb, f);
      split_dup_edges(c, wb, f);
    }
    LLVMDisposeBuilder(wb);
  }
  for (f = LLVMGetFirstFunction(m); f && rc == 0; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && order_blocks(f) != 0)
      rc = gj_err_set(err, "opencl: SPIR-V: out of memory");
  /* after order_blocks: "earlier" is the layout the translator reads */
  for (f = LLVMGetFirstFunction(m); f && rc == 0; f = LLVMGetNextFunction(f)) {
    LLVMBasicBlockRef bb;
    LLVMBuilderRef pb = LLVMCreateBuilderInContext(c);
    for (bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
      LLVMValueRef i = LLVMGetFirstInstruction(bb), next;
      for (; i && LLVMIsAPHINode(i); i = next) {
        next = LLVMGetNextInstruction(i);
        if (LLVMGetTypeKind(LLVMTypeOf(i)) == LLVMPointerTypeKind) order_ptr_phi(pb, f, i);
      }
    }
    LLVMDisposeBuilder(pb);
  }
  return rc;
}

/* -- The translator -------------------------------------------------------- */

/* opts (space-separated translator options, the job's features) into
** args[first..], NULL-terminated; each must be a --spirv-* option. */
static int split_opts(const char *opts, char *buf, size_t n,
                      const char **args, int first, gj_err *err)
{
  char *p, *save = NULL;
  int k = first;
  if (strlen(opts) >= n)
    return gj_err_set(err, "opencl: SPIR-V: the job's features are too long");
  strcpy(buf, opts);
  for (p = strtok_r(buf, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
    if (strncmp(p, "--spirv-", 8) != 0)
      return gj_err_set(err, "opencl: SPIR-V: job.features holds the "
                        "translator's options, each a --spirv-* option; "
                        "not '%s'", p);
    if (k == SPIRV_MAXOPTS)
      return gj_err_set(err, "opencl: SPIR-V: more than %d translator "
                        "options in job.features", SPIRV_MAXOPTS - first);
    args[k++] = p;
  }
  args[k] = NULL;
  return 0;
}

/* spirv-val (spirv-tools), where installed, on every module before a
** driver sees it: the translator's opaque-pointer support is young (15.0),
** and a driver given invalid SPIR-V may crash rather than refuse it.  The
** rules are the universal ones of the module's SPIR-V version: the OpenCL
** environments of spirv-val refuse capabilities an extension allows
** (Int64Atomics with cl_khr_int64_base_atomics), which it cannot ask the
** device about. */
static int validate(const char *spv, size_t len, gj_err *err)
{
  static const char *const names[] = { "spirv-val", NULL };
  const unsigned char *b = (const unsigned char *)spv;
  const char *args[3];
  char val[512], env[16];
  gj_err e;
  if (gj_tool_find(NULL, names, val, sizeof(val), &e) != 0) return 0;
  if (len < 20 || len % 4 != 0)
    return gj_err_set(err, "opencl: the translator's SPIR-V is %zu bytes, "
                      "not a module", len);
  /* word 1 is the version, 0x00MMmm00, in the magic's byte order */
  snprintf(env, sizeof(env), "spv1.%d", (int)(b[0] == 0x03 ? b[5] : b[6]));
  args[0] = "--target-env";
  args[1] = env;
  args[2] = NULL;
  if (gj_tool_run(val, args, spv, len, NULL, NULL, err) != 0)
    return gj_err_prefix(err, "opencl: the translator made invalid SPIR-V "
                         "(a translator bug; job.passes may avoid it): ");
  return 0;
}

/* The readable form of SPIR-V: spirv-dis's (spirv-tools), else the
** translator's own text form of the same module. */
static int disassemble(const ocl_spirv_tool *t, const char *spv, size_t len,
                       const char *bc, size_t bclen, const char **args,
                       char **out, size_t *outlen, gj_err *err)
{
  static const char *const names[] = { "spirv-dis", NULL };
  static const char *const dis_args[] = { "--raw-id", NULL };
  char dis[512];
  gj_err e;
  int k;
  if (gj_tool_find(NULL, names, dis, sizeof(dis), &e) == 0)
    return gj_tool_run(dis, dis_args, spv, len, out, outlen, err);
  for (k = 0; args[k]; k++) {}
  args[k] = "--spirv-text";
  args[k + 1] = NULL;
  return gj_tool_run(t->path, args, bc, bclen, out, outlen, err);
}

static int spirv_finish_ir(void *ts, const gj_job *job, LLVMModuleRef m,
                           gj_err *err)
{
  (void)ts;
  (void)job;
  return prepare(m, err);
}

/* The SPIR module, optimized and prepared, into SPIR-V (asm: its
** disassembly).  The job's features: translator options separated by
** spaces. */
static int spirv_emit(void *ts, const gj_job *job,
                      LLVMTargetMachineRef tm, LLVMModuleRef m, int asm,
                      char **out, size_t *len, gj_err *err)
{
  ocl_spirv_tool *t = ts;
  const char *opts = job->features;
  const char *args[SPIRV_MAXOPTS + 2];
  char optbuf[1024], *spv = NULL;
  size_t spvlen = 0;
  LLVMMemoryBufferRef bc;
  int rc;
  *out = NULL;
  *len = 0;
  (void)tm;
  if (ocl_spirv_find(t, err) != 0 ||
      split_opts(opts, optbuf, sizeof(optbuf), args, 0, err) != 0)
    return -1;
  bc = LLVMWriteBitcodeToMemoryBuffer(m);
  if (!bc) return gj_err_set(err, "opencl: cannot write the bitcode");
  rc = gj_tool_run(t->path, args, LLVMGetBufferStart(bc),
                   LLVMGetBufferSize(bc), &spv, &spvlen, err);
  if (rc != 0) {
    gj_err_prefix(err, "opencl: translating to SPIR-V: ");
  } else if ((rc = validate(spv, spvlen, err)) != 0) {
    free(spv);
  } else if (asm) {
    rc = disassemble(t, spv, spvlen, LLVMGetBufferStart(bc),
                     LLVMGetBufferSize(bc), args, out, len, err);
    free(spv);
  } else {
    *out = spv;
    *len = spvlen;
  }
  LLVMDisposeMemoryBuffer(bc);
  return rc;
}

const gj_codegen gj_codegen_spirv = {
  .name = "spirv", .wrap = ocl_wrap, .finish_ir = spirv_finish_ir,
  .emit = spirv_emit,
};

int ocl_spirv_to_spir(ocl_spirv_tool *t, const char *spv, size_t len,
                      char **bc, size_t *bclen, gj_err *err)
{
  static const char *const args[] = { "-r", "--spirv-target-env=CL1.2", "--opaque-pointers",
                                      NULL };
  if (ocl_spirv_find(t, err) != 0) return -1;
  if (gj_tool_run(t->path, args, spv, len, bc, bclen, err) != 0)
    return gj_err_prefix(err, "opencl: translating SPIR-V back to SPIR: ");
  return 0;
}
