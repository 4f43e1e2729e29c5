/*
** The `count` plugin (docs/plugins.md): counts what each work item
** executes, per category, and reports it after each launch.
**
** Stage ir.  Device functions are inlined into @gj_body first, so that one
** call of @gj_body is one work item (or, on the cpu backend, one stretch of
** it between barriers).  Each basic block's static counts are added to five
** i64 counters (allocas in the entry block; mem2reg makes them registers),
** and before every `ret` the counters are added into the work item's slots
** of the `counts` buffer with monotonic atomics: a resumable kernel (cpu,
** barriers) returns at each barrier and is called again with fresh
** counters, so a work item may flush several times.
**
** Invariant: counts[w*NCAT + c] after a launch is the number of category-c
** events of work item w (linear id) in the module as this hook saw it after
** inlining, the instrumentation excluded.
*/
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../plugin_ir.h"

/* The categories, in buffer order (documented in docs/plugins.md). */
enum { CAT_INSTR, CAT_LOAD, CAT_STORE, CAT_FLOP, CAT_BRANCH, NCAT };
static const char *const cat_name[NCAT] = {
  "instructions", "loads", "stores", "flops", "branches"
};

static int is_flop(LLVMValueRef i)
{
  switch (LLVMGetInstructionOpcode(i)) {
  case LLVMFAdd: case LLVMFSub: case LLVMFMul: case LLVMFDiv: case LLVMFRem:
  case LLVMFNeg:
    return 1;
  case LLVMCall: {
    LLVMValueRef f = LLVMGetCalledValue(i);
    size_t len;
    const char *n = f && LLVMIsAFunction(f) ? LLVMGetValueName2(f, &len) : "";
    return strncmp(n, "gj.math.", 8) == 0;
  }
  default:
    return 0;
  }
}

/* The static counts of one block. */
static void block_counts(LLVMValueRef body, const gpujit_kernel_desc *k,
                         LLVMBasicBlockRef bb, int64_t c[NCAT])
{
  memset(c, 0, NCAT * sizeof(c[0]));
  for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i;
       i = LLVMGetNextInstruction(i)) {
    LLVMOpcode op = LLVMGetInstructionOpcode(i);
    c[CAT_INSTR]++;
    if (op == LLVMLoad && gj_pir_global_arg(body, k, LLVMGetOperand(i, 0)))
      c[CAT_LOAD]++;
    else if (op == LLVMStore &&
             gj_pir_global_arg(body, k, LLVMGetOperand(i, 1)))
      c[CAT_STORE]++;
    else if (is_flop(i))
      c[CAT_FLOP]++;
    else if ((op == LLVMBr && LLVMIsConditional(i)) || op == LLVMSwitch)
      c[CAT_BRANCH]++;
  }
}

/* Before every ret: counts[w*NCAT + c] += counter c (monotonic). */
static void flush(LLVMBuilderRef b, LLVMModuleRef m, LLVMValueRef body,
                  LLVMValueRef buf, LLVMValueRef ctr[NCAT])
{
  LLVMTypeRef i64 = LLVMInt64TypeInContext(LLVMGetModuleContext(m));
  LLVMValueRef base = LLVMBuildMul(b, gj_pir_linear_id(b, m, body),
                                   LLVMConstInt(i64, NCAT, 0), "count.base");
  for (int c = 0; c < NCAT; c++) {
    LLVMValueRef idx = LLVMBuildAdd(b, base, LLVMConstInt(i64, c, 0), "");
    LLVMValueRef p = LLVMBuildGEP2(b, i64, buf, &idx, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(b, i64, ctr[c], "");
    LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpAdd, p, v,
                       LLVMAtomicOrderingMonotonic, 0);
  }
}

static int count_ir(void *ud, const gpujit_kernel_desc *k, LLVMModuleRef m,
                    char *err, size_t errlen)
{
  LLVMValueRef buf, ctr[NCAT], body = gj_pir_inline(m, k, &buf, err, errlen);
  LLVMBuilderRef b;
  LLVMTypeRef i64 = LLVMInt64TypeInContext(LLVMGetModuleContext(m));
  LLVMBasicBlockRef *bbs;
  int64_t (*cnt)[NCAT];
  unsigned nbb;
  (void)ud;
  if (!body) return -1;
  nbb = LLVMCountBasicBlocks(body);
  bbs = malloc(nbb * sizeof(*bbs));
  cnt = malloc(nbb * sizeof(*cnt));
  if (!bbs || !cnt) {
    free(bbs);
    free(cnt);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  /* all static counts first: none may see the instrumentation */
  LLVMGetBasicBlocks(body, bbs);
  for (unsigned i = 0; i < nbb; i++) {
    if (!LLVMGetBasicBlockTerminator(bbs[i])) {
      snprintf(err, errlen, "@gj_body has a block without terminator");
      free(bbs);
      free(cnt);
      return -1;
    }
    block_counts(body, k, bbs[i], cnt[i]);
  }

  b = LLVMCreateBuilderInContext(LLVMGetModuleContext(m));
  LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(bbs[0]));
  for (int c = 0; c < NCAT; c++) {
    ctr[c] = LLVMBuildAlloca(b, i64, cat_name[c]);
    LLVMBuildStore(b, LLVMConstInt(i64, 0, 0), ctr[c]);
  }
  for (unsigned i = 0; i < nbb; i++) {
    LLVMValueRef term = LLVMGetBasicBlockTerminator(bbs[i]);
    LLVMPositionBuilderBefore(b, term);
    for (int c = 0; c < NCAT; c++) {
      if (!cnt[i][c]) continue;
      LLVMBuildStore(b, LLVMBuildAdd(b, LLVMBuildLoad2(b, i64, ctr[c], ""),
                                     LLVMConstInt(i64, (unsigned long long)cnt[i][c], 0), ""),
                     ctr[c]);
    }
    if (LLVMGetInstructionOpcode(term) == LLVMRet) flush(b, m, body, buf, ctr);
  }
  LLVMDisposeBuilder(b);
  free(bbs);
  free(cnt);
  return 0;
}

/* The per-item counts of one launch, kept by report's `item` closure. */
typedef struct counts {
  int64_t items;
  int64_t v[];      /* items * NCAT */
} counts;

static void push_item(lua_State *L, const int64_t *v)
{
  lua_createtable(L, 0, NCAT);
  for (int c = 0; c < NCAT; c++) {
    lua_pushnumber(L, (lua_Number)v[c]);
    lua_setfield(L, -2, cat_name[c]);
  }
}

/* report.item(i): the counts of 0-based work item i. */
static int item(lua_State *L)
{
  const counts *cs = lua_touserdata(L, lua_upvalueindex(1));
  lua_Number n = luaL_checknumber(L, 1);
  int64_t i = (int64_t)n;
  if ((lua_Number)i != n || i < 0 || i >= cs->items)
    return luaL_error(L, "count: item %f is not a work item of the launch "
                      "(0 .. %d)", n, (int)(cs->items - 1));
  push_item(L, cs->v + i * NCAT);
  return 1;
}

static int count_report(void *ud, lua_State *L, const gpujit_launch_desc *l,
                        char *err, size_t errlen)
{
  const int64_t *v = l->nbuffers > 0 ? l->buffers[0] : NULL;
  int64_t n = l->items;
  counts *cs;
  (void)ud;
  if (!v || l->lengths[0] < n * NCAT) {
    snprintf(err, errlen, "the counts buffer of kernel %s holds %lld "
             "elements, not %lld", l->kernel, (long long)(v ? l->lengths[0] : 0),
             (long long)(n * NCAT));
    return -1;
  }
  int64_t total[NCAT] = { 0 }, lo[NCAT], hi[NCAT];
  for (int c = 0; c < NCAT; c++) lo[c] = hi[c] = n ? v[c] : 0;
  for (int64_t i = 0; i < n; i++)     /* one pass, item by item */
    for (int c = 0; c < NCAT; c++) {
      int64_t x = v[i * NCAT + c];
      total[c] += x;
      lo[c] = x < lo[c] ? x : lo[c];
      hi[c] = x > hi[c] ? x : hi[c];
    }
  lua_createtable(L, 0, NCAT + 2);
  lua_pushnumber(L, (lua_Number)n);
  lua_setfield(L, -2, "items");
  for (int c = 0; c < NCAT; c++) {
    lua_createtable(L, 0, 4);
    lua_pushnumber(L, (lua_Number)total[c]);
    lua_setfield(L, -2, "total");
    lua_pushnumber(L, (lua_Number)lo[c]);
    lua_setfield(L, -2, "min");
    lua_pushnumber(L, (lua_Number)hi[c]);
    lua_setfield(L, -2, "max");
    lua_pushnumber(L, n ? (lua_Number)total[c] / (lua_Number)n : 0);
    lua_setfield(L, -2, "mean");
    lua_setfield(L, -2, cat_name[c]);
  }
  cs = lua_newuserdata(L, sizeof(*cs) + (size_t)n * NCAT * sizeof(int64_t));
  cs->items = n;
  memcpy(cs->v, v, (size_t)n * NCAT * sizeof(int64_t));
  lua_pushcclosure(L, item, 1);
  lua_setfield(L, -2, "item");
  return 0;
}

__attribute__((visibility("default")))
int gpujit_plugin_init(gpujit_plugin *p, char *err, size_t errlen)
{
  (void)err;
  (void)errlen;
  p->name = "count";
  p->version = "1";
  p->nbuffers = 1;
  p->buffers[0].name = "counts";
  p->buffers[0].elem = "int64_t";
  p->buffers[0].per_item = NCAT;
  p->buffers[0].fixed = 0;
  p->ir = count_ir;
  p->report = count_report;
  return 0;
}
