/*
** Several lua_States in one process, each on its own thread, compiling and
** launching at once (issue 7).  Every thread opens its own state, requires
** gpujit, compiles kernels that differ per thread and per round (so no two
** threads share a compile), launches them on its backend (large enough
** launches to use the cpu thread pool), launches on two streams (one
** waiting for the other's event), compiles a kernel in the background
** meanwhile (and leaves one in flight for lua_close), and checks every
** result.
**
**   multistate [threads [rounds [backends]]]     defaults: 4 3 cpu,opencl
**
** The backends are given to the threads in turn.  Exit status 0 when every
** thread's results were right; the failures are printed.  Run from the
** repository root with LUA_PATH/LUA_CPATH as for the specs (make test,
** make tsan).
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

/* One thread's work, in Lua: tid, backend, rounds are its arguments. */
static const char chunk[] =
  "local tid, bk, rounds = ...\n"
  "local gpu = require('gpujit')\n"
  "local ffi = require('ffi')\n"
  "gpu.use(bk)\n"
  "local n = 20000\n"
  "for r = 1, rounds do\n"
  "  local c = tid * 100 + r\n"
  "  local saxpy = gpu.kernel(function(a, b, s)\n"
  "    local i = gpu.global_id()\n"
  "    b[i] = a[i] * s + c\n"
  "  end, { cache = false, name = 'saxpy' .. tid })\n"
  "  local rev = gpu.kernel(function(o)\n"
  "    local sh = gpu.shared('int32_t', 64)\n"
  "    local l = gpu.local_id()\n"
  "    sh[l] = l * c\n"
  "    gpu.barrier()\n"
  "    o[gpu.global_id()] = sh[63 - l]\n"
  "  end, { cache = false, name = 'rev' .. tid })\n"
  "  local count = gpu.kernel(function(cnt, k)\n"
  "    for _ = 1, k do gpu.atomic_add(cnt, 0, c) end\n"
  "  end, { cache = false, name = 'count' .. tid, boundscheck = r % 2 == 0 })\n"
  /* a compile in the background (issue 22) while the round goes on */
  "  local bgk = gpu.kernel(function(x, m)\n"
  "    local i = gpu.global_id()\n"
  "    x[i] = x[i] * m + c\n"
  "  end, { cache = false, name = 'bg' .. tid })\n"
  "  local h = bgk:compile({ 'double[]', 'double' }, { async = true })\n"
  "  local a, b = ffi.new('double[?]', n), ffi.new('double[?]', n)\n"
  "  for i = 0, n - 1 do a[i] = i end\n"
  "  saxpy:launch(n, a, b, 0.5)\n"
  "  for i = 0, n - 1 do\n"
  "    if b[i] ~= i * 0.5 + c then\n"
  "      error(('saxpy: b[%d] = %s, expected %s'):format(i, b[i], i * 0.5 + c))\n"
  "    end\n"
  "  end\n"
  "  local o = ffi.new('int32_t[?]', 64 * 64)\n"
  "  rev:launch({ global = 64 * 64, group = 64 }, o)\n"
  "  for i = 0, 64 * 64 - 1 do\n"
  "    if o[i] ~= (63 - i % 64) * c then error(('rev: o[%d] = %d'):format(i, o[i])) end\n"
  "  end\n"
  "  local cnt = ffi.new('int64_t[1]')\n"
  "  count:launch(8192, cnt, 3)\n"
  "  if cnt[0] ~= 8192 * 3 * c then error('count: ' .. tostring(cnt[0])) end\n"
  /* streams (issue 22): a worker thread (cpu) or queue (opencl) each, one
  ** waiting for the other's event */
  "  local s1, s2 = gpu.stream(), gpu.stream()\n"
  "  local a2, b2 = ffi.new('double[?]', n), ffi.new('double[?]', n)\n"
  "  saxpy:launch({ global = n, stream = s1 }, a, a2, 2)\n"
  "  local e = s1:record()\n"
  "  s2:wait(e)\n"
  "  saxpy:launch({ global = n, stream = s2 }, a2, b2, 1)\n"
  "  s2:synchronize(); s1:synchronize()\n"
  "  for i = 0, n - 1 do\n"
  "    if b2[i] ~= i * 2 + 2 * c then\n"
  "      error(('streams: b2[%d] = %s, expected %s'):format(i, b2[i], i * 2 + 2 * c))\n"
  "    end\n"
  "  end\n"
  "  h:wait()\n"
  "  local xb = ffi.new('double[?]', 64)\n"
  "  for i = 0, 63 do xb[i] = i end\n"
  "  bgk:launch(64, xb, 0.5)\n"
  "  for i = 0, 63 do\n"
  "    if xb[i] ~= i * 0.5 + c then error(('bg: xb[%d] = %s'):format(i, xb[i])) end\n"
  "  end\n"
  "  if bgk.ncompiles ~= 1 then error('bg: compiled ' .. bgk.ncompiles .. ' times') end\n"
  "end\n"
  /* left in flight: lua_close joins it */
  "gpu.kernel(function(x) x[gpu.global_id()] = tid end, { cache = false })\n"
  "  :compile({ 'double[]' }, { async = true })\n"
  "return 'ok'\n";

typedef struct job {
  int tid, rounds;
  const char *backend;
  char msg[512];       /* empty: success */
} job;

static void *run(void *arg)
{
  job *j = arg;
  lua_State *L = luaL_newstate();
  if (!L) {
    snprintf(j->msg, sizeof(j->msg), "luaL_newstate failed");
    return NULL;
  }
  luaL_openlibs(L);
  if (luaL_loadbuffer(L, chunk, sizeof(chunk) - 1, "=multistate") != 0) {
    snprintf(j->msg, sizeof(j->msg), "load: %s", lua_tostring(L, -1));
  } else {
    lua_pushinteger(L, j->tid);
    lua_pushstring(L, j->backend);
    lua_pushinteger(L, j->rounds);
    if (lua_pcall(L, 3, 1, 0) != 0)
      snprintf(j->msg, sizeof(j->msg), "%s", lua_tostring(L, -1));
    else if (!lua_isstring(L, -1) || strcmp(lua_tostring(L, -1), "ok") != 0)
      snprintf(j->msg, sizeof(j->msg), "the chunk did not return 'ok'");
  }
  lua_close(L);   /* closes the state's gpujit context, its pool included */
  return NULL;
}

int main(int argc, char **argv)
{
  int nthreads = argc > 1 ? atoi(argv[1]) : 4;
  int rounds = argc > 2 ? atoi(argv[2]) : 3;
  char list[256], *names[16], *save = NULL, *t;
  int nnames = 0, i, failed = 0;
  pthread_t *th;
  job *jobs;
  snprintf(list, sizeof(list), "%s", argc > 3 ? argv[3] : "cpu,opencl");
  for (t = strtok_r(list, ",", &save); t && nnames < 16; t = strtok_r(NULL, ",", &save))
    names[nnames++] = t;
  if (nthreads < 1 || rounds < 1 || nnames == 0) {
    fprintf(stderr, "usage: multistate [threads [rounds [backends]]]\n");
    return 2;
  }
  th = calloc((size_t)nthreads, sizeof(*th));
  jobs = calloc((size_t)nthreads, sizeof(*jobs));
  if (!th || !jobs) return 2;
  for (i = 0; i < nthreads; i++) {
    jobs[i].tid = i;
    jobs[i].rounds = rounds;
    jobs[i].backend = names[i % nnames];
    if (pthread_create(&th[i], NULL, run, &jobs[i]) != 0) {
      snprintf(jobs[i].msg, sizeof(jobs[i].msg), "pthread_create failed");
      th[i] = 0;
    }
  }
  for (i = 0; i < nthreads; i++)
    if (th[i]) pthread_join(th[i], NULL);
  for (i = 0; i < nthreads; i++) {
    if (jobs[i].msg[0]) {
      fprintf(stderr, "multistate: thread %d (%s): %s\n", i, jobs[i].backend,
              jobs[i].msg);
      failed++;
    }
  }
  printf("multistate: %d threads x %d rounds (%s): %d failed\n", nthreads,
         rounds, argc > 3 ? argv[3] : "cpu,opencl", failed);
  free(th);
  free(jobs);
  return failed ? 1 : 0;
}
