/*
** The disk cache: keys, entries, eviction and bundles (gj_cache.h).
**
** Nothing here trusts a file: every entry read, whether from the cache
** directory or from a bundle, goes through entry_check, which accepts it
** only when its header, length and checksum agree.  Writers never modify
** a file in place: they write a temporary file and rename it over the
** entry, which POSIX makes atomic for readers in other processes.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* st_mtim */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gj_cache.h"
#include "gpujit.h"

#define ENTRY_EXT ".gjc"
#define TMP_PREFIX ".tmp-"
#define LOCK_PREFIX ".lock-"
#define LOCK_TRIES 64             /* files removed under a waiter, in a row */
#define TMP_STALE_S 3600          /* a temporary file older than this was
                                  ** left by a writer that died */
static const char entry_magic[8] = "GJCACHE";    /* with its NUL */
static const char bundle_magic[8] = "GJBUNDL";

typedef struct entry_head {
  char magic[8];
  uint32_t format;        /* GJ_CACHE_FORMAT */
  uint32_t head_size;     /* sizeof(entry_head) */
  uint8_t key[GJ_CACHE_KEYLEN];
  uint64_t len;           /* payload bytes that follow the header */
  uint8_t sum[32];        /* BLAKE3 of the payload */
} entry_head;

/* -- keys ---------------------------------------------------------------- */

void gj_cache_key_begin(gj_cache_hasher *h)
{
  uint32_t fmt = GJ_CACHE_FORMAT;
  llvm_blake3_hasher_init(&h->b);
  gj_cache_key_add(h, &fmt, sizeof(fmt));
  gj_cache_key_str(h, gj_build_id);
}

void gj_cache_key_add(gj_cache_hasher *h, const void *p, size_t n)
{
  uint64_t len = n;
  llvm_blake3_hasher_update(&h->b, &len, sizeof(len));
  if (n) llvm_blake3_hasher_update(&h->b, p, n);
}

void gj_cache_key_str(gj_cache_hasher *h, const char *s)
{
  gj_cache_key_add(h, s ? s : "", s ? strlen(s) : 0);
}

void gj_cache_key_end(gj_cache_hasher *h, gj_cache_key *key)
{
  llvm_blake3_hasher_finalize(&h->b, key->b, GJ_CACHE_KEYLEN);
}

int gj_cache_key_file(gj_cache_hasher *h, const char *path)
{
  char buf[65536];
  size_t n;
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) gj_cache_key_add(h, buf, n);
  fclose(f);
  return 0;
}

int gj_cache_file_hex(const char *path, char *hex)
{
  gj_cache_hasher h;
  gj_cache_key key;
  gj_cache_key_begin(&h);
  if (gj_cache_key_file(&h, path)) return -1;
  gj_cache_key_end(&h, &key);
  gj_cache_key_hex(&key, hex);
  return 0;
}

void gj_cache_key_hex(const gj_cache_key *key, char *buf)
{
  static const char hex[] = "0123456789abcdef";
  int i;
  for (i = 0; i < GJ_CACHE_KEYLEN; i++) {
    buf[2 * i] = hex[key->b[i] >> 4];
    buf[2 * i + 1] = hex[key->b[i] & 15];
  }
  buf[2 * GJ_CACHE_KEYLEN] = '\0';
}

static void checksum(const void *p, size_t n, uint8_t out[32])
{
  llvm_blake3_hasher h;
  llvm_blake3_hasher_init(&h);
  llvm_blake3_hasher_update(&h, p, n);
  llvm_blake3_hasher_finalize(&h, out, 32);
}

/* -- files --------------------------------------------------------------- */

/* A sound entry?  Then its key and payload (pointing into buf). */
static int entry_check(const uint8_t *buf, size_t n, gj_cache_key *key,
                       const uint8_t **payload, size_t *plen)
{
  entry_head h;
  uint8_t sum[32];
  if (n < sizeof(h)) return 0;
  memcpy(&h, buf, sizeof(h));
  if (memcmp(h.magic, entry_magic, sizeof(h.magic)) != 0 ||
      h.format != GJ_CACHE_FORMAT || h.head_size != sizeof(h) ||
      h.len != n - sizeof(h))
    return 0;
  checksum(buf + sizeof(h), (size_t)h.len, sum);
  if (memcmp(sum, h.sum, sizeof(sum)) != 0) return 0;
  memcpy(key->b, h.key, GJ_CACHE_KEYLEN);
  *payload = buf + sizeof(h);
  *plen = (size_t)h.len;
  return 1;
}

/* The whole file at path, malloc'ed; NULL when it cannot be read.  Only a
** regular file is read: the open is non-blocking, so that a FIFO (or a
** device) placed where an entry would be cannot block the process, and
** anything else sets *notreg (when given) and gives NULL. */
static uint8_t *read_all(const char *path, size_t *n, int touch, int *notreg)
{
  struct stat sb;
  uint8_t *buf = NULL;
  size_t got = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (notreg) *notreg = 0;
  if (fd < 0) return NULL;
  if (fstat(fd, &sb) != 0) goto out;
  if (!S_ISREG(sb.st_mode)) {
    if (notreg) *notreg = 1;
    errno = EINVAL;
    goto out;
  }
  /* a regular file: reads block as usual (O_NONBLOCK is for the open) */
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) goto out;
  buf = malloc(sb.st_size > 0 ? (size_t)sb.st_size : 1);
  if (!buf) goto out;
  while (got < (size_t)sb.st_size) {
    ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  if (got != (size_t)sb.st_size) {
    free(buf);
    buf = NULL;
    goto out;
  }
  *n = got;
  if (touch) futimens(fd, NULL);   /* "recently used"; best effort */
out:
  close(fd);
  return buf;
}

static int write_all(int fd, const void *p, size_t n)
{
  const uint8_t *b = p;
  while (n > 0) {
    ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

/* mkdir -p */
static int make_dir(const char *dir)
{
  char path[4096];
  size_t i, n = strlen(dir);
  if (n == 0 || n >= sizeof(path)) return -1;
  memcpy(path, dir, n + 1);
  for (i = 1; i <= n; i++) {
    if (path[i] == '/' || path[i] == '\0') {
      char c = path[i];
      path[i] = '\0';
      if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
      path[i] = c;
    }
  }
  return 0;
}

static void entry_path(char *buf, size_t size, const char *dir,
                       const gj_cache_key *key)
{
  char hex[2 * GJ_CACHE_KEYLEN + 1];
  gj_cache_key_hex(key, hex);
  snprintf(buf, size, "%s/%s" ENTRY_EXT, dir, hex);
}

/* Write the parts to path through a temporary file and a rename. */
static int write_atomic(const char *dir, const char *path, const void *a,
                        size_t alen, const void *b, size_t blen, gj_err *err)
{
  static unsigned counter;    /* with the pid, makes the name unique */
  char tmp[4200];
  int fd, e;
  if (make_dir(dir) != 0)
    return gj_err_set(err, "cache: cannot create directory %s: %s", dir,
                      strerror(errno));
  snprintf(tmp, sizeof(tmp), "%s/" TMP_PREFIX "%ld-%u", dir, (long)getpid(),
           __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
  fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return gj_err_set(err, "cache: cannot create %s: %s", tmp, strerror(errno));
  if (write_all(fd, a, alen) != 0 || write_all(fd, b, blen) != 0) {
    e = errno;
    close(fd);
    unlink(tmp);
    return gj_err_set(err, "cache: cannot write %s: %s", tmp, strerror(e));
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    e = errno;
    unlink(tmp);
    return gj_err_set(err, "cache: cannot write %s: %s", path, strerror(e));
  }
  return 0;
}

/* -- entries ------------------------------------------------------------- */

int gj_cache_get(const char *dir, const gj_cache_key *key, char **payload,
                 size_t *len, int *bad)
{
  char path[4200];
  gj_cache_key found;
  const uint8_t *p;
  size_t n = 0, plen;
  uint8_t *buf;
  *bad = 0;
  entry_path(path, sizeof(path), dir, key);
  buf = read_all(path, &n, 1, bad);   /* not a regular file: bad */
  if (!buf) return 0;
  if (!entry_check(buf, n, &found, &p, &plen) ||
      memcmp(found.b, key->b, GJ_CACHE_KEYLEN) != 0) {
    *bad = 1;
    free(buf);
    return 0;
  }
  memmove(buf, p, plen);       /* the payload, at the start of its block */
  *payload = (char *)buf;
  *len = plen;
  return 1;
}

/* -- the compile lock ---------------------------------------------------- */

static void lock_path(char *buf, size_t size, const char *dir,
                      const gj_cache_key *key)
{
  char hex[2 * GJ_CACHE_KEYLEN + 1];
  gj_cache_key_hex(key, hex);
  snprintf(buf, size, "%s/" LOCK_PREFIX "%s", dir, hex);
}

int gj_cache_lock(const char *dir, const gj_cache_key *key)
{
  char path[4200];
  int i;
  if (make_dir(dir) != 0) return -1;
  lock_path(path, sizeof(path), dir, key);
  for (i = 0; i < LOCK_TRIES; i++) {
    struct stat held, there;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
                  0644);
    if (fd < 0) return -1;
    if (fstat(fd, &held) != 0 || !S_ISREG(held.st_mode)) {
      close(fd);
      return -1;
    }
    while (flock(fd, LOCK_EX) != 0) {
      if (errno != EINTR) {
        close(fd);
        return -1;
      }
    }
    /* the file that holder removed is not the lock any more */
    if (stat(path, &there) == 0 && there.st_ino == held.st_ino &&
        there.st_dev == held.st_dev)
      return fd;
    close(fd);
  }
  return -1;
}

void gj_cache_unlock(const char *dir, const gj_cache_key *key, int fd)
{
  char path[4200];
  if (fd < 0) return;
  lock_path(path, sizeof(path), dir, key);
  unlink(path);     /* while held: a waiter on it sees it gone, and retries */
  close(fd);        /* releases the flock */
}

static void evict(const char *dir);

static int put_entry(const char *dir, const gj_cache_key *key,
                     const void *payload, size_t len, gj_err *err)
{
  char path[4200];
  entry_head h;
  memset(&h, 0, sizeof(h));
  memcpy(h.magic, entry_magic, sizeof(h.magic));
  h.format = GJ_CACHE_FORMAT;
  h.head_size = sizeof(h);
  memcpy(h.key, key->b, GJ_CACHE_KEYLEN);
  h.len = len;
  checksum(payload, len, h.sum);
  entry_path(path, sizeof(path), dir, key);
  return write_atomic(dir, path, &h, sizeof(h), payload, len, err);
}

int gj_cache_put(const char *dir, const gj_cache_key *key,
                 const void *payload, size_t len, gj_err *err)
{
  if (put_entry(dir, key, payload, len, err)) return -1;
  evict(dir);
  return 0;
}

/* -- the directory ------------------------------------------------------- */

typedef struct dirent_info {
  char name[80];
  uint64_t size;
  struct timespec mtime;
} dirent_info;

static int is_entry_name(const char *nm)
{
  size_t n = strlen(nm);
  return n == 2 * GJ_CACHE_KEYLEN + strlen(ENTRY_EXT) &&
         strcmp(nm + 2 * GJ_CACHE_KEYLEN, ENTRY_EXT) == 0;
}

/* Every entry of dir (malloc'ed array; *n of them).  Removes temporary
** files older than TMP_STALE_S on the way, or all of them when
** all_tmp is set. */
static dirent_info *list_entries(const char *dir, size_t *n, int all_tmp)
{
  DIR *d = opendir(dir);
  struct dirent *de;
  dirent_info *v = NULL;
  size_t cap = 0;
  time_t now = time(NULL);
  *n = 0;
  if (!d) return NULL;
  while ((de = readdir(d)) != NULL) {
    char path[4200];
    struct stat sb;
    int tmp = strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0;
    if (!tmp && !is_entry_name(de->d_name)) continue;
    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
    if (stat(path, &sb) != 0) continue;
    if (tmp) {
      if (all_tmp || now - sb.st_mtime > TMP_STALE_S) unlink(path);
      continue;
    }
    if (*n == cap) {
      dirent_info *nv;
      cap = cap ? 2 * cap : 64;
      nv = realloc(v, cap * sizeof(*v));
      if (!nv) break;
      v = nv;
    }
    snprintf(v[*n].name, sizeof(v[*n].name), "%s", de->d_name);
    v[*n].size = (uint64_t)sb.st_size;
    v[*n].mtime = sb.st_mtim;
    (*n)++;
  }
  closedir(d);
  return v;
}

static int older_first(const void *a, const void *b)
{
  const dirent_info *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec)
    return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec)
    return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return 0;
}

/* Remove least recently used entries until the directory fits the limit.
** Processes evicting at once may both remove an entry: unlink's ENOENT is
** harmless, and the survivors are still whole files. */
static void evict(const char *dir)
{
  uint64_t max = gj_cache_max(), total = 0;
  size_t n, i;
  dirent_info *v = list_entries(dir, &n, 0);
  for (i = 0; i < n; i++) total += v[i].size;
  if (total > max) {
    qsort(v, n, sizeof(*v), older_first);
    for (i = 0; i < n && total > max; i++) {
      char path[4200];
      snprintf(path, sizeof(path), "%s/%s", dir, v[i].name);
      if (unlink(path) == 0 || errno == ENOENT) total -= v[i].size;
    }
  }
  free(v);
}

void gj_cache_usage(const char *dir, uint64_t *bytes, uint64_t *entries)
{
  size_t n, i;
  dirent_info *v = list_entries(dir, &n, 0);
  *bytes = 0;
  for (i = 0; i < n; i++) *bytes += v[i].size;
  *entries = n;
  free(v);
}

int gj_cache_clear(const char *dir)
{
  size_t n, i;
  int removed = 0;
  dirent_info *v = list_entries(dir, &n, 1);
  for (i = 0; i < n; i++) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, v[i].name);
    if (unlink(path) == 0) removed++;
  }
  free(v);
  return removed;
}

/* A size: a decimal number (digits, an optional fraction and exponent:
** "1000000", "1e9", "1.5") with an optional K, M or G suffix (powers of
** 1024), whose value is a whole number of bytes below 2^63.  0, or -1 for
** anything else (a sign, spaces, another suffix, hex, inf, nan). */
/* exported: gpujit.env checks GPUJIT_CACHE_MAX with it */
GJ_API int gj_cache_parse_size(const char *s, uint64_t *out)
{
  char num[64];
  const char *p = s, *end;
  char *e;
  unsigned shift = 0;
  int digits = 0, plain = 1;
  size_t n;
  while (*p >= '0' && *p <= '9') p++, digits++;
  if (*p == '.') {
    plain = 0;
    for (p++; *p >= '0' && *p <= '9'; p++) digits++;
  }
  if (digits == 0) return -1;
  if (*p == 'e' || *p == 'E') {
    plain = 0;
    p++;
    if (*p == '+' || *p == '-') p++;
    if (!(*p >= '0' && *p <= '9')) return -1;
    while (*p >= '0' && *p <= '9') p++;
  }
  end = p;
  switch (*p) {
  case 'k': case 'K': shift = 10; p++; break;
  case 'm': case 'M': shift = 20; p++; break;
  case 'g': case 'G': shift = 30; p++; break;
  default: break;
  }
  n = (size_t)(end - s);
  if (*p != '\0' || n >= sizeof(num)) return -1;
  memcpy(num, s, n);
  num[n] = '\0';
  if (plain) {
    unsigned long long v;
    errno = 0;
    v = strtoull(num, &e, 10);
    if (errno || *e || v > (UINT64_C(1) << (63 - shift)) - 1) return -1;
    *out = (uint64_t)v << shift;
  } else {
    double v = strtod(num, &e);
    if (*e) return -1;
    v *= (double)(UINT64_C(1) << shift);
    if (!(v >= 0 && v < 9223372036854775808.0) || v != (double)(uint64_t)v)
      return -1;
    *out = (uint64_t)v;
  }
  return 0;
}

uint64_t gj_cache_max(void)
{
  static int warned;
  const char *s = getenv("GPUJIT_CACHE_MAX");
  uint64_t v;
  if (!s || !*s) return GJ_CACHE_MAX_DEFAULT;
  if (gj_cache_parse_size(s, &v) == 0) return v;
  /* a bad value never disables nor shrinks the cache: the default, and
  ** one line on stderr per process */
  if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
    fprintf(stderr, "gpujit: GPUJIT_CACHE_MAX='%.64s' is not a size (bytes: a "
            "whole number such as 1000000 or 1e9, optionally with K, M or G: "
            "512M, 1.5G); using the default 256M\n", s);
  return GJ_CACHE_MAX_DEFAULT;
}

/* -- bundles -------------------------------------------------------------
** "GJBUNDL\0", u32 format, u32 count, then per entry a u64 size and the
** entry file's bytes, each of which is checked again on import. */

int gj_cache_export(const char *dir, const char *file, gj_err *err)
{
  size_t n, i;
  dirent_info *v = list_entries(dir, &n, 0);
  FILE *f;
  uint32_t head[2] = { GJ_CACHE_FORMAT, 0 };
  long count_at;
  int count = 0, ok = 1;
  f = fopen(file, "wb");
  if (!f) {
    free(v);
    return gj_err_set(err, "cache.export: cannot create %s: %s", file,
                      strerror(errno));
  }
  ok = fwrite(bundle_magic, sizeof(bundle_magic), 1, f) == 1;
  count_at = ftell(f) + (long)sizeof(uint32_t);
  ok = ok && fwrite(head, sizeof(head), 1, f) == 1;
  for (i = 0; ok && i < n; i++) {
    char path[4200];
    gj_cache_key key;
    const uint8_t *p;
    size_t len = 0, plen;
    uint8_t *buf;
    snprintf(path, sizeof(path), "%s/%s", dir, v[i].name);
    buf = read_all(path, &len, 0, NULL);
    if (buf && entry_check(buf, len, &key, &p, &plen)) {
      uint64_t sz = len;
      ok = fwrite(&sz, sizeof(sz), 1, f) == 1 && fwrite(buf, len, 1, f) == 1;
      count++;
    }
    free(buf);
  }
  head[1] = (uint32_t)count;
  ok = ok && fseek(f, count_at, SEEK_SET) == 0 &&
       fwrite(&head[1], sizeof(head[1]), 1, f) == 1;
  ok = (fclose(f) == 0) && ok;
  free(v);
  if (!ok) {
    remove(file);
    return gj_err_set(err, "cache.export: cannot write %s", file);
  }
  return count;
}

int gj_cache_import(const char *dir, const char *file, int *rejected,
                    gj_err *err)
{
  size_t n = 0, at;
  int notreg;
  uint8_t *buf = read_all(file, &n, 0, &notreg);
  uint32_t head[2];
  uint32_t i;
  int imported = 0;
  *rejected = 0;
  if (!buf)
    return gj_err_set(err, "cache.import: cannot read %s: %s", file,
                      notreg ? "not a regular file" : strerror(errno));
  if (n < sizeof(bundle_magic) + sizeof(head) ||
      memcmp(buf, bundle_magic, sizeof(bundle_magic)) != 0) {
    free(buf);
    return gj_err_set(err, "cache.import: %s is not a gpujit cache bundle",
                      file);
  }
  memcpy(head, buf + sizeof(bundle_magic), sizeof(head));
  if (head[0] != GJ_CACHE_FORMAT) {
    free(buf);
    return gj_err_set(err, "cache.import: %s has format %u, this gpujit "
                      "reads format %d", file, head[0], GJ_CACHE_FORMAT);
  }
  at = sizeof(bundle_magic) + sizeof(head);
  for (i = 0; i < head[1]; i++) {
    uint64_t sz;
    gj_cache_key key;
    const uint8_t *p;
    size_t plen;
    if (n - at < sizeof(sz)) break;
    memcpy(&sz, buf + at, sizeof(sz));
    at += sizeof(sz);
    if (sz > n - at) break;
    if (!entry_check(buf + at, (size_t)sz, &key, &p, &plen)) {
      (*rejected)++;
    } else if (put_entry(dir, &key, p, plen, err) == 0) {
      imported++;
    } else {
      free(buf);
      return gj_err_prefix(err, "cache.import: ");
    }
    at += (size_t)sz;
  }
  *rejected += (int)(head[1] - i);   /* entries cut off by a short file */
  free(buf);
  evict(dir);
  return imported;
}
