/*
** A C program that embeds LuaJIT the way a game engine does: several
** worlds, each with its own lua_State that has gpujit opened through
** luaopen_gpujit (linked from libgpujit.so), a particle system whose
** positions and velocities are C arrays owned by this host, and a frame
** loop that calls each world's script to launch a kernel on them.  A
** script error is caught and reported; the host and that world go on (a
** world whose script fails MAX_ERRORS times is stopped, as an engine would).
**
**   build/examples/embed-host SCRIPT [LUA_DIR [BACKEND]]   (make examples)
**
** SCRIPT is examples/embed/particles.lua, LUA_DIR the folder holding
** gpujit/init.lua (default "lua", the checkout's).  World 1 gets an error
** injected at frame FAIL_FRAME.  At the end every world's particles are
** compared with a C reference that runs the same steps (world 1 misses the
** step of the failed frame); the exit status is 0 when all agree and the
** error was reported, 1 otherwise.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "gpujit.h"

#define NWORLDS 3
#define NFRAMES 100
#define NPART 5000
#define FAIL_WORLD 1
#define FAIL_FRAME 50
#define MAX_ERRORS 3
#define DT (1.0 / 60.0)

typedef struct world {
  lua_State *L;
  double gravity;
  double pos[3 * NPART], vel[3 * NPART];     /* the host's data */
  double rpos[3 * NPART], rvel[3 * NPART];   /* the C reference */
  int errors;
} world;

static void world_fill(world *w, int id)
{
  int i;
  w->gravity = 9.81 * (1.0 + 0.25 * id);
  for (i = 0; i < NPART; i++) {
    double *p = w->pos + 3 * i, *v = w->vel + 3 * i;
    p[0] = 0.1 * (i % 71);
    p[1] = 10.0 + id;
    p[2] = 0.1 * (i / 71);
    v[0] = 0.05 * ((i * 7) % 13 - 6);
    v[1] = 0.5 * (i % 5) + id;
    v[2] = 0.05 * ((i * 3) % 11 - 5);
  }
  memcpy(w->rpos, w->pos, sizeof(w->pos));
  memcpy(w->rvel, w->vel, sizeof(w->vel));
}

/* The kernel's step in C, the same operations in the same order. */
static void world_reference_step(world *w)
{
  int i;
  for (i = 0; i < NPART; i++) {
    double *p = w->rpos + 3 * i, *v = w->rvel + 3 * i;
    v[1] = v[1] - w->gravity * DT;
    p[0] = p[0] + v[0] * DT;
    p[1] = p[1] + v[1] * DT;
    p[2] = p[2] + v[2] * DT;
  }
}

/* A new state with the standard libraries, gpujit as the global `gpu`, the
** world's globals and the script loaded.  NULL after reporting why. */
static lua_State *world_open(int id, double gravity, const char *script,
                             const char *luadir, const char *backend)
{
  lua_State *L = luaL_newstate();
  if (!L) {
    fprintf(stderr, "host: world %d: out of memory\n", id);
    return NULL;
  }
  luaL_openlibs(L);
  lua_getglobal(L, "package");
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", luadir, luadir);
  lua_getfield(L, -2, "path");
  lua_concat(L, 2);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
  lua_pushcfunction(L, luaopen_gpujit);
  if (lua_pcall(L, 0, 1, 0) != 0) goto fail;
  lua_setglobal(L, "gpu");
  lua_pushnumber(L, gravity);
  lua_setglobal(L, "gravity");
  lua_pushinteger(L, id == FAIL_WORLD ? FAIL_FRAME : -1);
  lua_setglobal(L, "fail_at_frame");
  if (backend) {
    lua_pushstring(L, backend);
    lua_setglobal(L, "backend");
  }
  if (luaL_loadfile(L, script) != 0 || lua_pcall(L, 0, 0, 0) != 0) goto fail;
  return L;
fail:
  fprintf(stderr, "host: world %d: cannot start: %s\n", id, lua_tostring(L, -1));
  lua_close(L);
  return NULL;
}

/* One frame of one world: its script's update(frame, dt, pos, vel, n).  A
** script error is reported and counted; the world stays usable. */
static void world_frame(world *w, int id, int frame)
{
  lua_State *L = w->L;
  lua_getglobal(L, "update");
  lua_pushinteger(L, frame);
  lua_pushnumber(L, DT);
  lua_pushlightuserdata(L, w->pos);
  lua_pushlightuserdata(L, w->vel);
  lua_pushinteger(L, NPART);
  if (lua_pcall(L, 5, 0, 0) != 0) {
    w->errors++;
    fprintf(stderr, "host: world %d, frame %d: script error, %s: %s\n", id, frame,
            w->errors < MAX_ERRORS ? "world goes on" : "world stopped", lua_tostring(L, -1));
    lua_pop(L, 1);
  }
}

/* The largest difference between the world's particles and the reference,
** relative to the coordinate's size. */
static double world_error(const world *w)
{
  double worst = 0;
  int i;
  for (i = 0; i < 3 * NPART; i++) {
    double dp = fabs(w->pos[i] - w->rpos[i]) / (1.0 + fabs(w->rpos[i]));
    double dv = fabs(w->vel[i] - w->rvel[i]) / (1.0 + fabs(w->rvel[i]));
    if (!(dp <= worst)) worst = dp;   /* a NaN makes it NaN */
    if (!(dv <= worst)) worst = dv;
  }
  return worst;
}

int main(int argc, char **argv)
{
  static world worlds[NWORLDS];
  const char *script = argc > 1 ? argv[1] : "examples/embed/particles.lua";
  const char *luadir = argc > 2 ? argv[2] : "lua";
  const char *backend = argc > 3 && argv[3][0] ? argv[3] : NULL;
  int id, frame, bad = 0;

  for (id = 0; id < NWORLDS; id++) {
    world *w = &worlds[id];
    world_fill(w, id);
    w->L = world_open(id, w->gravity, script, luadir, backend);
    if (!w->L) return 1;
  }
  for (frame = 0; frame < NFRAMES; frame++) {
    for (id = 0; id < NWORLDS; id++) {
      world *w = &worlds[id];
      int before = w->errors;
      if (w->errors >= MAX_ERRORS) continue;
      world_frame(w, id, frame);
      if (w->errors == before) world_reference_step(w);
    }
  }
  for (id = 0; id < NWORLDS; id++) {
    world *w = &worlds[id];
    int want_errors = id == FAIL_WORLD ? 1 : 0;
    double err = world_error(w);
    int ok = err <= 1e-12 && w->errors == want_errors;
    printf("host: world %d: %d frames, %d script error(s) (expected %d), "
           "particle 0 at (%.6f, %.6f, %.6f), max difference from C %.3g: %s\n",
           id, NFRAMES, w->errors, want_errors, w->pos[0], w->pos[1], w->pos[2],
           err, ok ? "ok" : "WRONG");
    bad += !ok;
    lua_close(w->L);
  }
  return bad ? 1 : 0;
}
