/* fuzz_glob.c - the method glob matcher and the shadowing test
 * (daemon/access.c).
 *
 * The input is two globs and a name, separated by the first two NUL bytes:
 * EARLIER \0 LATER \0 NAME (the name may hold NUL bytes; a missing part is
 * empty). Checked:
 *  - a glob jrpcd_glob_check refuses never matches (the matcher answers -1
 *    or 0 for it, so a rule holding one allows nothing); one it accepts is
 *    always answered 0 or 1;
 *  - the match reads only the name's bytes (an exact-size heap copy, for
 *    ASan) and answers the same on the copy;
 *  - where fnmatch(3) reads the glob the same way (no backslash, a name
 *    under 256 bytes without NUL), the two agree;
 *  - jrpcd_glob_covers is sound: when it says EARLIER covers LATER and
 *    LATER matches the name, EARLIER matches it too;
 *  - time: libFuzzer's -timeout (the matcher's bound is name x glob
 *    steps). */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "fuzz.h"

/* Part k (0, 1) of the input as a NUL-terminated copy; *rest past it. */
static char *part(const uint8_t **p, size_t *left) {
  const uint8_t *nul = memchr(*p, 0, *left);
  size_t n = nul ? (size_t)(nul - *p) : *left;
  char *s = malloc(n + 1);
  FZ_CHECK(s, "out of memory");
  memcpy(s, *p, n);
  s[n] = '\0';
  *p += nul ? n + 1 : n;
  *left -= nul ? n + 1 : n;
  return s;
}

/* The matcher's answer for glob over name, checked against what the
 * checker says of glob; -1, 0 or 1. */
static int checked_match(const char *glob, const char *name, size_t n) {
  size_t errlen = strlen(glob) + 256; /* room for the glob quoted whole */
  char *err = malloc(errlen);
  FZ_CHECK(err, "out of memory");
  int valid = jrpcd_glob_check(glob, err, errlen) == 0;
  int m = jrpcd_glob_match(glob, name, n);
  if (valid)
    FZ_CHECK(m == 0 || m == 1, "valid glob \"%s\": answer %d", glob, m);
  else
    FZ_CHECK(m != 1, "refused glob \"%s\" (%s) matched", glob, err);
  FZ_CHECK(valid || strstr(err, "glob") || strstr(err, glob),
           "refusal of \"%s\" does not quote it: %s", glob, err);
  free(err);
  return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *p = data;
  size_t left = size;
  char *earlier = part(&p, &left);
  char *later = part(&p, &left);
  char *name = malloc(left ? left : 1);
  FZ_CHECK(name, "out of memory");
  memcpy(name, p, left);

  int me = checked_match(earlier, name, left);
  int ml = checked_match(later, name, left);
  FZ_CHECK(jrpcd_glob_match(earlier, name, left) == me, "not repeatable");

  if (left < 256 && !memchr(name, 0, left) && !strchr(earlier, '\\') &&
      me >= 0) {
    char z[256];
    memcpy(z, name, left);
    z[left] = '\0';
    int want = fnmatch(earlier, z, 0) == 0;
    FZ_CHECK(me == want, "glob \"%s\" name \"%s\": %d, fnmatch %d", earlier, z,
             me, want);
  }

  if (jrpcd_glob_covers(earlier, later)) {
    char err[256];
    FZ_CHECK(jrpcd_glob_check(later, err, sizeof(err)) != 0 || ml != 1 ||
                 me == 1,
             "\"%s\" said to cover \"%s\", but only the latter matches a "
             "name of %zu bytes",
             earlier, later, left);
  }
  free(earlier);
  free(later);
  free(name);
  return 0;
}
