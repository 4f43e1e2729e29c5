/*
** External programs run on an artifact (tool.h).
**
** A tool is spawned with posix_spawn (no shell, so no quoting; safe in a
** multi-threaded host, where fork would copy every thread's locks), its
** input and output are files in a directory of its own made by mkdtemp,
** and its standard error goes to a file there, so a failure can say what
** the tool said.  The directory is removed before the call returns,
** whatever happened.
*/
#define _POSIX_C_SOURCE 200809L
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define TOOL_MAXARGS 16

static int is_exec(const char *path)
{
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
         access(path, X_OK) == 0;
}

/* name looked up like execvp does: as it is with a '/', else in PATH. */
static int lookup(const char *name, char *path, size_t n)
{
  const char *dirs = getenv("PATH"), *p, *end;
  if (strchr(name, '/'))
    return is_exec(name) && (size_t)snprintf(path, n, "%s", name) < n ? 0 : -1;
  if (!dirs) dirs = "/usr/local/bin:/usr/bin:/bin";
  for (p = dirs; *p; p = *end ? end + 1 : end) {
    size_t len;
    end = strchr(p, ':');
    if (!end) end = p + strlen(p);
    len = (size_t)(end - p);
    if ((size_t)snprintf(path, n, "%.*s%s%s", (int)len, p, len ? "/" : "",
                         name) < n && is_exec(path))
      return 0;
  }
  return -1;
}

int gj_tool_find(const char *env, const char *const *names, char *path,
                 size_t n, gj_err *err)
{
  const char *v = env ? getenv(env) : NULL;
  int i;
  if (v && *v) {
    if (lookup(v, path, n) == 0) return 0;
    return gj_err_set(err, "%s=%s is not an executable file", env, v);
  }
  for (i = 0; names[i]; i++)
    if (lookup(names[i], path, n) == 0) return 0;
  return gj_err_set(err, "%s is not installed (not found in PATH%s%s)",
                    names[0], env ? "; set " : "", env ? env : "");
}

/* The whole of file `path` into *out (malloc'd, NUL-terminated). */
static int read_all(const char *path, char **out, size_t *len)
{
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t cap = 0, n = 0;
  *out = NULL;
  *len = 0;
  if (!f) return -1;
  for (;;) {
    if (cap - n < 4096) {
      char *nb = realloc(buf, cap ? 2 * cap : 65536);
      if (!nb) {
        free(buf);
        fclose(f);
        return -1;
      }
      buf = nb;
      cap = cap ? 2 * cap : 65536;
    }
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) break;
  }
  fclose(f);
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return 0;
}

static int write_all(const char *path, const void *data, size_t len)
{
  FILE *f = fopen(path, "wb");
  int ok;
  if (!f) return -1;
  ok = fwrite(data, 1, len, f) == len;
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* What the tool wrote on standard error, as the rest of err's message. */
static void add_stderr(const char *path, gj_err *err)
{
  char *text;
  size_t len, used = strlen(err->msg);
  if (read_all(path, &text, &len) != 0) return;
  while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
    text[--len] = '\0';
  if (len > 0)
    snprintf(err->msg + used, sizeof(err->msg) - used, ":\n%.1500s", text);
  free(text);
}

static int spawn_wait(const char *path, char *const *argv, const char *errf,
                      const char *name, gj_err *err)
{
  posix_spawn_file_actions_t fa;
  pid_t pid;
  int rc, status = 0;
  if (posix_spawn_file_actions_init(&fa) != 0)
    return gj_err_set(err, "cannot run %s: out of memory", name);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, errf, O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  rc = posix_spawn(&pid, path, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return gj_err_set(err, "cannot run %s (%s): %s", name, path, strerror(rc));
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return gj_err_set(err, "cannot wait for %s: %s (does the host ignore "
                        "SIGCHLD?)", name, strerror(errno));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  if (WIFSIGNALED(status))
    gj_err_set(err, "%s was killed by signal %d", name, WTERMSIG(status));
  else
    gj_err_set(err, "%s failed (exit status %d)", name, WEXITSTATUS(status));
  add_stderr(errf, err);
  return -1;
}

int gj_tool_run(const char *path, const char *const *args, const void *in,
                size_t inlen, char **out, size_t *outlen, gj_err *err)
{
  const char *tmp = getenv("TMPDIR"), *name = strrchr(path, '/');
  char dir[512], inf[576], outf[576], errf[576];
  char *argv[TOOL_MAXARGS + 5];
  int n = 0, i, rc = -1;
  if (out) {
    *out = NULL;
    *outlen = 0;
  }
  name = name ? name + 1 : path;
  if (!tmp || !*tmp) tmp = "/tmp";
  if ((size_t)snprintf(dir, sizeof(dir), "%s/gpujit-tool-XXXXXX", tmp) >=
      sizeof(dir))
    return gj_err_set(err, "cannot run %s: TMPDIR is too long", name);
  if (!mkdtemp(dir))
    return gj_err_set(err, "cannot run %s: mkdtemp in %s: %s", name, tmp,
                      strerror(errno));
  snprintf(inf, sizeof(inf), "%s/in", dir);
  snprintf(outf, sizeof(outf), "%s/out", dir);
  snprintf(errf, sizeof(errf), "%s/err", dir);
  argv[n++] = (char *)path;
  for (i = 0; args && args[i]; i++) {
    if (i == TOOL_MAXARGS) {
      gj_err_set(err, "internal error: %s with more than %d arguments", name,
                 TOOL_MAXARGS);
      goto done;
    }
    argv[n++] = (char *)args[i];
  }
  argv[n++] = inf;
  if (out) {
    argv[n++] = "-o";
    argv[n++] = outf;
  }
  argv[n] = NULL;
  if (write_all(inf, in, inlen) != 0) {
    gj_err_set(err, "cannot run %s: writing %s: %s", name, inf,
               strerror(errno));
    goto done;
  }
  if (spawn_wait(path, argv, errf, name, err) != 0) goto done;
  if (out && (read_all(outf, out, outlen) != 0 || *outlen == 0)) {
    free(*out);
    *out = NULL;
    *outlen = 0;
    gj_err_set(err, "%s wrote no output", name);
    add_stderr(errf, err);
    goto done;
  }
  rc = 0;
done:
  unlink(inf);
  unlink(outf);
  unlink(errf);
  rmdir(dir);
  return rc;
}
