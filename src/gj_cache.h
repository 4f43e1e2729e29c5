/*
** The disk cache of compiled artifacts (docs/architecture.md, stage 4;
** docs/caching.md).
**
** An entry is one file, <dir>/<64 hex digits of the key>.gjc: a header
** (magic, format version, key, payload length, BLAKE3 of the payload) and
** the payload, the backend's artifact.  Entries are written whole (a
** temporary file in the same directory, then rename), so a reader sees an
** old entry, a new one or none; a reader that finds a bad header, a wrong
** length or a wrong checksum treats the entry as a miss and the next
** compile replaces it.  Several processes may share a directory.
**
** The directory is kept under a size limit (GPUJIT_CACHE_MAX, default
** 256 MiB) by evicting the least recently used entries after each write;
** a hit refreshes its entry's mtime, which is what "recently used" means.
*/
#ifndef GJ_CACHE_H
#define GJ_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include <llvm-c/blake3.h>

#include "gj_err.h"

#define GJ_CACHE_FORMAT 1
#define GJ_CACHE_KEYLEN 32

typedef struct gj_cache_key {
  uint8_t b[GJ_CACHE_KEYLEN];
} gj_cache_key;

/* What one context did with the cache (gpu.cache.stats). */
typedef struct gj_cache_stats {
  uint64_t hits;        /* compiles answered from disk */
  uint64_t misses;      /* lookups that found no usable entry */
  uint64_t rejected;    /* entries found bad (and to be replaced) */
  uint64_t writes;      /* entries written */
  uint64_t write_errors;
  uint64_t compiles;    /* kernels compiled through the whole pipeline */
} gj_cache_stats;

/* An incremental key: feed it everything that decides the artifact. */
typedef struct gj_cache_hasher {
  llvm_blake3_hasher b;
} gj_cache_hasher;
void gj_cache_key_begin(gj_cache_hasher *h);
/* A field: its bytes, length-prefixed so that fields never run together. */
void gj_cache_key_add(gj_cache_hasher *h, const void *p, size_t n);
void gj_cache_key_str(gj_cache_hasher *h, const char *s);
void gj_cache_key_end(gj_cache_hasher *h, gj_cache_key *key);
/* A file's contents as fields (a library, a plugin): 0, or -1 when it
** cannot be read (nothing added). */
int gj_cache_key_file(gj_cache_hasher *h, const char *path);
/* The hash of a file's contents alone, as hex (at least 65 bytes): what
** names a library or plugin build in a key.  0, or -1 when unreadable. */
int gj_cache_file_hex(const char *path, char *hex);

/* "<64 hex digits>" into buf (at least 65 bytes). */
void gj_cache_key_hex(const gj_cache_key *key, char *buf);

/* The entry for key in dir: 1 and a malloc'ed payload when present and
** sound, 0 when absent or bad (*bad set when an entry was found and
** rejected, or the name is not a regular file: a FIFO, a directory, a
** device; such a name is never opened blocking nor read).  Never fails
** otherwise. */
int gj_cache_get(const char *dir, const gj_cache_key *key, char **payload,
                 size_t *len, int *bad);

/* Store an entry, then evict down to the size limit.  0, or -1 with err
** (the caller counts it; a failed write never fails a compile). */
int gj_cache_put(const char *dir, const gj_cache_key *key,
                 const void *payload, size_t len, gj_err *err);

/* The compile lock of key's entry, across processes: an exclusive flock
** on <dir>/.lock-<hex>, waited for while another process holds it (the
** one compiling that kernel).  Returns the descriptor that holds it, or -1
** when no lock can be had (no directory, a name that is not a regular
** file, ...): the caller compiles without it, since entries are written
** atomically anyway and the lock only saves the duplicate compile.  The
** caller looks the entry up again once it holds the lock.  unlock removes
** the file while holding it and then releases it; a waiter that then gets
** the removed file's lock sees the name gone (or another file there) and
** takes the lock of the name's current file instead. */
int gj_cache_lock(const char *dir, const gj_cache_key *key);
void gj_cache_unlock(const char *dir, const gj_cache_key *key, int fd);

/* Sum of entry sizes and their number. */
void gj_cache_usage(const char *dir, uint64_t *bytes, uint64_t *entries);

/* Remove every entry (and stale temporary file).  Returns how many. */
int gj_cache_clear(const char *dir);

/* A bundle: every sound entry of dir in one file, and back.  Return the
** number of entries written / imported (*rejected: bundle entries that
** were not sound), or -1 with err. */
int gj_cache_export(const char *dir, const char *file, gj_err *err);
int gj_cache_import(const char *dir, const char *file, int *rejected,
                    gj_err *err);

/* GPUJIT_CACHE_MAX in bytes ("512M", "2G", "1000000", "1e9"; default 256
** MiB): a value gj_cache_parse_size refuses gives the default, with one
** warning on stderr per process. */
#define GJ_CACHE_MAX_DEFAULT (UINT64_C(256) << 20)
uint64_t gj_cache_max(void);
int gj_cache_parse_size(const char *s, uint64_t *out);

/* Identifies this build of the core: a hash of its sources and flags,
** generated by the Makefile (build/gen/gj_buildid.c). */
extern const char gj_build_id[];

#endif
