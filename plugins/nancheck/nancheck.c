/*
** The `nancheck` plugin (docs/plugins.md): reports the first NaN a kernel
** stores into a float or double array argument, with the Lua line.
**
** Stage ir.  Device functions are inlined into @gj_body first (their
** stores are checked too, with their own lines).  After each store of a
** float or double value into a kernel array argument (gj_pir_global_arg):
**
**     fcmp uno v, v  ->  count it (atomicrmw add on record[COUNT]);
**     the first NaN claims the record (cmpxchg record[CLAIM] 0 -> 1) and
**     writes its line, argument, work item, index, file hash and width.
**
** The line, the argument and the file come from the store's !gj.loc
** (src/gpujit_plugin.h).  The file is a 64-bit FNV-1a hash in the record,
** so that the module (and the compile cache key) is the same in every
** process; the hash -> name table is in the plugin's state, filled by this
** hook, which runs on cache hits too.  Argument names are kept per kernel
** name, for the report's message.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../plugin_ir.h"

/* The record buffer (int64_t, fixed NREC): field order is the contract
** between the ir hook and report. */
enum { R_COUNT, R_CLAIM, R_LINE, R_ARG, R_ITEM, R_INDEX, R_FILE, R_BITS, NREC };

typedef struct name_ent {
  uint64_t key;            /* fnv1a(name) ^ kind (0: file, 1: kernel) */
  char *name;              /* the file name, or the kernel's name */
  int nargs;               /* kernel: argnames[0 .. nargs-1], entries may */
  char **argnames;         /* be NULL; a file: NULL */
} name_ent;

typedef struct nc_state {
  pthread_mutex_t mu;
  int n, cap;
  name_ent *v;             /* files and kernels, filled by the ir hook */
} nc_state;

static uint64_t fnv1a(const char *s)
{
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

static char *dupstr(const char *s)
{
  char *d = s ? malloc(strlen(s) + 1) : NULL;
  return d ? strcpy(d, s) : NULL;
}

static void ent_free(name_ent *e)
{
  for (int i = 0; i < e->nargs; i++) free(e->argnames[i]);
  free(e->argnames);
  free(e->name);
}

/* The entry for (kind, name), made when missing; NULL when out of memory.
** Kernels and files are told apart by kind (0: file, 1: kernel). */
static name_ent *lookup(nc_state *st, int kind, const char *name, int make)
{
  uint64_t key = fnv1a(name) ^ (uint64_t)kind;
  for (int i = 0; i < st->n; i++)
    if (st->v[i].key == key && strcmp(st->v[i].name, name) == 0)
      return &st->v[i];
  if (!make) return NULL;
  if (st->n == st->cap) {
    int cap = st->cap ? 2 * st->cap : 16;
    name_ent *v = realloc(st->v, (size_t)cap * sizeof(*v));
    if (!v) return NULL;
    st->v = v;
    st->cap = cap;
  }
  memset(&st->v[st->n], 0, sizeof(st->v[0]));
  st->v[st->n].key = key;
  st->v[st->n].name = dupstr(name);
  if (!st->v[st->n].name) return NULL;
  return &st->v[st->n++];
}

typedef struct loc {
  int line, arg;
  char file[256];          /* from the metadata, or k->source */
} loc;

/* A store to check. */
typedef struct site {
  LLVMValueRef st;
  loc l;
  int bits;                /* 32: float, 64: double */
} site;

/* Remember a file name (for report) and a kernel's argument names. */
static int remember(nc_state *st, const gpujit_kernel_desc *k,
                    const site *sites, int n)
{
  name_ent *e;
  int ok = 1;
  pthread_mutex_lock(&st->mu);
  for (int i = 0; i < n && ok; i++) ok = lookup(st, 0, sites[i].l.file, 1) != NULL;
  e = ok ? lookup(st, 1, k->name, 1) : NULL;
  if (e) {
    for (int i = 0; i < e->nargs; i++) free(e->argnames[i]);
    free(e->argnames);
    e->nargs = 0;
    e->argnames = calloc((size_t)k->nparams + 1, sizeof(char *));
    if (e->argnames) {
      e->nargs = k->nparams;
      for (int i = 0; i < k->nparams; i++)
        e->argnames[i] = k->argnames ? dupstr(k->argnames[i]) : NULL;
    }
  }
  pthread_mutex_unlock(&st->mu);
  return e && e->argnames ? 0 : -1;
}

/* The store's !gj.loc, or line 0 and the kernel's file. */
static loc store_loc(LLVMValueRef st, unsigned kind, const char *source)
{
  loc l = { 0, 0, "" };
  LLVMValueRef md = LLVMGetMetadata(st, kind), ops[3];
  const char *file = NULL;
  unsigned len = 0;
  if (md && LLVMGetMDNodeNumOperands(md) == 3) {
    LLVMGetMDNodeOperands(md, ops);
    if (LLVMIsAConstantInt(ops[0])) l.line = (int)LLVMConstIntGetSExtValue(ops[0]);
    if (LLVMIsAConstantInt(ops[1])) l.arg = (int)LLVMConstIntGetSExtValue(ops[1]);
    file = LLVMGetMDString(ops[2], &len);
  }
  if (!file) {
    file = source ? source : "?";
    len = (unsigned)strlen(file);
  }
  /* an MDString need not end with a NUL */
  if (len >= sizeof(l.file)) len = sizeof(l.file) - 1;
  memcpy(l.file, file, len);
  l.file[len] = 0;
  return l;
}

/* Split st's block after st: the instructions up to st move to a new
** block `head`, which takes over the block's predecessors; the block keeps
** the rest (so phis of its successors stay right).  Returns head, with b
** at its end. */
static LLVMBasicBlockRef split_after(LLVMBuilderRef b, LLVMValueRef st)
{
  LLVMBasicBlockRef bb = LLVMGetInstructionParent(st);
  LLVMContextRef C = LLVMGetTypeContext(LLVMTypeOf(st));
  LLVMBasicBlockRef head = LLVMInsertBasicBlockInContext(C, bb, "nancheck.store");
  LLVMValueRef i = LLVMGetFirstInstruction(bb), next;
  LLVMReplaceAllUsesWith(LLVMBasicBlockAsValue(bb), LLVMBasicBlockAsValue(head));
  LLVMPositionBuilderAtEnd(b, head);
  for (;; i = next) {
    next = LLVMGetNextInstruction(i);
    LLVMInstructionRemoveFromParent(i);
    LLVMInsertIntoBuilder(b, i);
    if (i == st) break;
  }
  return head;
}

static LLVMValueRef rec_field(LLVMBuilderRef b, LLVMValueRef rec, int f)
{
  LLVMTypeRef i64 = LLVMInt64TypeInContext(LLVMGetTypeContext(LLVMTypeOf(rec)));
  LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)f, 0);
  return LLVMBuildGEP2(b, i64, rec, &idx, 1, "");
}

/* The check after one store (see the top of this file). */
static void check_store(LLVMBuilderRef b, LLVMModuleRef m, LLVMValueRef body,
                        LLVMValueRef rec, const site *s)
{
  LLVMValueRef st = s->st;
  LLVMContextRef C = LLVMGetModuleContext(m);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(C);
  LLVMValueRef v = LLVMGetOperand(st, 0), ptr = LLVMGetOperand(st, 1);
  LLVMBasicBlockRef rest = LLVMGetInstructionParent(st), nan, fill;
  LLVMValueRef won, idx;
  int64_t fields[NREC] = { 0 };
  split_after(b, st);
  nan = LLVMInsertBasicBlockInContext(C, rest, "nancheck.nan");
  fill = LLVMInsertBasicBlockInContext(C, rest, "nancheck.first");
  LLVMBuildCondBr(b, LLVMBuildFCmp(b, LLVMRealUNO, v, v, "nancheck.isnan"),
                  nan, rest);

  LLVMPositionBuilderAtEnd(b, nan);
  LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpAdd, rec_field(b, rec, R_COUNT),
                     LLVMConstInt(i64, 1, 0), LLVMAtomicOrderingMonotonic, 0);
  won = LLVMBuildAtomicCmpXchg(b, rec_field(b, rec, R_CLAIM),
                               LLVMConstInt(i64, 0, 0), LLVMConstInt(i64, 1, 0),
                               LLVMAtomicOrderingMonotonic,
                               LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildCondBr(b, LLVMBuildExtractValue(b, won, 1, ""), fill, rest);

  LLVMPositionBuilderAtEnd(b, fill);
  fields[R_LINE] = s->l.line;
  fields[R_ARG] = s->l.arg;
  fields[R_FILE] = (int64_t)fnv1a(s->l.file);
  fields[R_BITS] = s->bits;
  for (int f = R_LINE; f < NREC; f++)
    if (f != R_ITEM && f != R_INDEX)
      LLVMBuildStore(b, LLVMConstInt(i64, (unsigned long long)fields[f], 1),
                     rec_field(b, rec, f));
  LLVMBuildStore(b, gj_pir_linear_id(b, m, body), rec_field(b, rec, R_ITEM));
  /* a[i] is a GEP with one index */
  idx = LLVMIsAGetElementPtrInst(ptr) && LLVMGetNumOperands(ptr) == 2
            ? LLVMBuildIntCast2(b, LLVMGetOperand(ptr, 1), i64, 1, "")
            : LLVMConstInt(i64, (unsigned long long)-1, 1);
  LLVMBuildStore(b, idx, rec_field(b, rec, R_INDEX));
  LLVMBuildBr(b, rest);
}

static int nc_ir(void *ud, const gpujit_kernel_desc *k, LLVMModuleRef m,
                 char *err, size_t errlen)
{
  LLVMValueRef rec, body = gj_pir_inline(m, k, &rec, err, errlen);
  unsigned kind = LLVMGetMDKindIDInContext(LLVMGetModuleContext(m), "gj.loc", 6);
  site *sites = NULL;
  int n = 0, cap = 0;
  LLVMBuilderRef b;
  if (!body) return -1;
  /* the stores to check, all found before any block is split */
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(body); bb;
       bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i;
         i = LLVMGetNextInstruction(i)) {
      LLVMTypeKind tk;
      int arg;
      if (!LLVMIsAStoreInst(i)) continue;
      tk = LLVMGetTypeKind(LLVMTypeOf(LLVMGetOperand(i, 0)));
      if (tk != LLVMFloatTypeKind && tk != LLVMDoubleTypeKind) continue;
      arg = gj_pir_global_arg(body, k, LLVMGetOperand(i, 1));
      if (!arg) continue;
      if (n == cap) {
        site *v = realloc(sites, (size_t)(cap = cap ? 2 * cap : 16) * sizeof(*v));
        if (!v) goto oom;
        sites = v;
      }
      sites[n].st = i;
      sites[n].l = store_loc(i, kind, k->source);
      if (!sites[n].l.arg) sites[n].l.arg = arg;
      sites[n].bits = tk == LLVMFloatTypeKind ? 32 : 64;
      n++;
    }
  if (remember(ud, k, sites, n)) goto oom;
  b = LLVMCreateBuilderInContext(LLVMGetModuleContext(m));
  for (int i = 0; i < n; i++) check_store(b, m, body, rec, &sites[i]);
  LLVMDisposeBuilder(b);
  free(sites);
  return 0;
oom:
  free(sites);
  snprintf(err, errlen, "out of memory");
  return -1;
}

static int nc_report(void *ud, lua_State *L, const gpujit_launch_desc *l,
                     char *err, size_t errlen)
{
  nc_state *st = ud;
  const int64_t *r = l->nbuffers > 0 ? l->buffers[0] : NULL;
  const char *file = "?", *argname = NULL;
  name_ent *e;
  if (!r || l->lengths[0] < NREC) {
    snprintf(err, errlen, "the record buffer of kernel %s is missing or short",
             l->kernel);
    return -1;
  }
  if (r[R_COUNT] == 0) {
    lua_pushnil(L);
    return 0;
  }
  pthread_mutex_lock(&st->mu);
  for (int i = 0; i < st->n; i++)
    if (!st->v[i].argnames && st->v[i].key == (uint64_t)r[R_FILE])
      file = st->v[i].name;
  e = lookup(st, 1, l->kernel, 0);
  if (e && r[R_ARG] >= 1 && r[R_ARG] <= e->nargs) argname = e->argnames[r[R_ARG] - 1];
  lua_createtable(L, 0, 10);
  lua_pushnumber(L, (lua_Number)r[R_COUNT]);
  lua_setfield(L, -2, "count");
  lua_pushinteger(L, (lua_Integer)r[R_LINE]);
  lua_setfield(L, -2, "line");
  lua_pushstring(L, file);
  lua_setfield(L, -2, "source");
  lua_pushinteger(L, (lua_Integer)r[R_ARG]);
  lua_setfield(L, -2, "arg");
  if (argname) {
    lua_pushstring(L, argname);
    lua_setfield(L, -2, "argname");
  }
  lua_pushnumber(L, (lua_Number)r[R_ITEM]);
  lua_setfield(L, -2, "item");
  lua_pushnumber(L, (lua_Number)r[R_INDEX]);
  lua_setfield(L, -2, "index");
  lua_pushstring(L, r[R_BITS] == 32 ? "float" : "double");
  lua_setfield(L, -2, "type");
  lua_pushfstring(L, "%s:%d: NaN stored into argument %d%s%s%s",
                  file, (int)r[R_LINE], (int)r[R_ARG], argname ? " (" : "",
                  argname ? argname : "", argname ? ")" : "");
  pthread_mutex_unlock(&st->mu);
  if (r[R_INDEX] >= 0)
    lua_pushfstring(L, " at index %f", (lua_Number)r[R_INDEX]);
  else
    lua_pushliteral(L, "");
  lua_pushfstring(L, " by work item %f (%f NaN store%s in this launch)",
                  (lua_Number)r[R_ITEM], (lua_Number)r[R_COUNT],
                  r[R_COUNT] == 1 ? "" : "s");
  lua_concat(L, 3);
  lua_setfield(L, -2, "message");
  return 0;
}

static void nc_close(void *ud)
{
  nc_state *st = ud;
  for (int i = 0; i < st->n; i++) ent_free(&st->v[i]);
  free(st->v);
  pthread_mutex_destroy(&st->mu);
  free(st);
}

__attribute__((visibility("default")))
int gpujit_plugin_init(gpujit_plugin *p, char *err, size_t errlen)
{
  nc_state *st = calloc(1, sizeof(*st));
  if (!st || pthread_mutex_init(&st->mu, NULL)) {
    free(st);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  p->name = "nancheck";
  p->version = "1";
  p->ud = st;
  p->nbuffers = 1;
  p->buffers[0].name = "record";
  p->buffers[0].elem = "int64_t";
  p->buffers[0].per_item = 0;
  p->buffers[0].fixed = NREC;
  p->ir = nc_ir;
  p->report = nc_report;
  p->close = nc_close;
  return 0;
}
