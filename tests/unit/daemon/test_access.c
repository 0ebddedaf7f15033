/* test_access.c - principals (addresses and CIDR ranges, uids and gids,
 * user and group names, certificate names), method globs, and the
 * [access] rules' first-match decision, including every refusal with its
 * message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "access.h"

static jrpcd_identity_t tcp_peer(const char *text) {
  jrpcd_identity_t id;
  memset(&id, 0, sizeof(id));
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, text, &s4->sin_addr) == 1)
    s4->sin_family = AF_INET;
  else if (inet_pton(AF_INET6, text, &s6->sin6_addr) == 1)
    s6->sin6_family = AF_INET6;
  else
    fail_msg("bad test address %s", text);
  jrpcd_identity_set_addr(&id, (struct sockaddr *)&ss);
  return id;
}

static jrpcd_identity_t unix_peer(uint32_t uid, uint32_t gid,
                                  const uint32_t *groups, size_t n) {
  jrpcd_identity_t id;
  memset(&id, 0, sizeof(id));
  id.family = AF_UNIX;
  id.has_cred = 1;
  id.uid = uid;
  id.gid = gid;
  id.groups = groups;
  id.ngroups = n;
  return id;
}

/* 1 if the principal `word` names the peer; fails the test if it does
 * not parse. */
static int names(const char *word, const jrpcd_identity_t *id) {
  jrpcd_principal_t p;
  char err[256];
  if (jrpcd_principal_parse(word, 1, &p, err, sizeof(err)) != 0)
    fail_msg("%s: %s", word, err);
  int m = jrpcd_principal_match(&p, id);
  jrpcd_principal_free(&p);
  return m;
}

static void refused(const char *word, int any_ok, const char *want) {
  jrpcd_principal_t p;
  char err[256] = "";
  if (jrpcd_principal_parse(word, any_ok, &p, err, sizeof(err)) == 0)
    fail_msg("\"%s\" was accepted", word);
  if (!strstr(err, want))
    fail_msg("\"%s\": message \"%s\" lacks \"%s\"", word, err, want);
}

static void test_cidr(void **state) {
  (void)state;
  jrpcd_identity_t a = tcp_peer("10.1.2.3"), b = tcp_peer("192.168.1.7"),
                   c = tcp_peer("::1"), d = tcp_peer("fd00::5"),
                   m = tcp_peer("::ffff:10.9.9.9");
  assert_true(names("10.0.0.0/8", &a));
  assert_false(names("10.0.0.0/8", &b));
  assert_true(names("192.168.1.7", &b));
  assert_false(names("192.168.1.8", &b));
  assert_true(names("192.168.1.0/25", &b));
  assert_false(names("192.168.1.128/25", &b));
  assert_true(names("192.168.0.0/23", &b)); /* a prefix not on a byte */
  assert_false(names("192.168.2.0/23", &b));
  assert_true(names("0.0.0.0/0", &a));
  assert_false(names("0.0.0.0/0", &c)); /* families never mix */
  assert_true(names("::1", &c));
  assert_true(names("::/0", &d));
  assert_true(names("fd00::/8", &d));
  assert_false(names("fc00::/8", &d));
  assert_false(names("::1", &a));
  /* A dual-stack listener's IPv4 client is an IPv4 peer. */
  assert_int_equal(m.family, AF_INET);
  assert_true(names("10.0.0.0/8", &m));
  assert_true(names("::ffff:0:0/96", &m)); /* all of IPv4 (see below) */
  /* Unix peers have no address. */
  jrpcd_identity_t u = unix_peer(0, 0, NULL, 0);
  assert_false(names("0.0.0.0/0", &u));

  refused("10.0.0.1/8", 0, "did you mean 10.0.0.0/8?");
  refused("fd00::1/8", 0, "did you mean fd00::/8?");
  refused("10.0.0.0/33", 0, "prefix length must be 0 to 32");
  refused("::/129", 0, "0 to 128");
  refused("10.0.0.0/", 0, "prefix length");
  refused("10.0.0.0/x", 0, "prefix length");
  refused("10.0.0", 0, "not a principal");
  refused("300.1.1.1", 0, "not a principal");
  refused("localhost", 0, "not a principal");
  refused("/8", 0, "not a principal");
}

static void test_ids_and_names(void **state) {
  (void)state;
  uint32_t groups[] = {27, 100};
  jrpcd_identity_t u = unix_peer(1000, 1000, groups, 2);
  assert_true(names("uid:1000", &u));
  assert_false(names("uid:0", &u));
  assert_true(names("gid:1000", &u));
  assert_true(names("gid:100", &u)); /* supplementary groups count */
  assert_false(names("gid:4", &u));
  /* Credentials unknown (or TCP): no uid or gid matches. */
  jrpcd_identity_t nocred = u;
  nocred.has_cred = 0;
  assert_false(names("uid:1000", &nocred));
  jrpcd_identity_t t = tcp_peer("127.0.0.1");
  assert_false(names("uid:0", &t));
  assert_false(names("gid:0", &t));

  /* Names resolve when parsed: root is uid 0 and group root gid 0
   * everywhere; the current user by its own name. */
  jrpcd_identity_t r = unix_peer(0, 0, NULL, 0);
  assert_true(names("user:root", &r));
  assert_true(names("group:root", &r));
  struct passwd *pw = getpwuid(getuid());
  assert_non_null(pw);
  char word[300];
  snprintf(word, sizeof(word), "user:%s", pw->pw_name);
  jrpcd_identity_t me = unix_peer((uint32_t)getuid(), 12345, NULL, 0);
  assert_true(names(word, &me));

  refused("user:no-such-user-jrpcd", 0, "no such user");
  refused("group:no-such-group-jrpcd", 0, "no such group");
  refused("uid:", 0, "nothing after \"uid:\"");
  refused("uid:-1", 0, "a number from 0 to 4294967294");
  refused("uid:4294967295", 0, "a number");
  refused("gid:1x", 0, "a number");
  refused("cert:", 0, "nothing after");
}

static void test_certificates(void **state) {
  (void)state;
  const char *sans[] = {"api.example.org", "Backup.Example.ORG"};
  jrpcd_identity_t id = tcp_peer("127.0.0.1");
  id.cert_cn = "billing";
  id.sans = sans;
  id.nsans = 2;
  assert_true(names("cert:billing", &id));
  assert_false(names("cert:Billing", &id)); /* a CN is compared exactly */
  assert_true(names("san:api.example.org", &id));
  assert_true(names("san:backup.example.org", &id)); /* DNS: any case */
  assert_false(names("san:billing", &id));
  jrpcd_identity_t none = tcp_peer("127.0.0.1");
  assert_false(names("cert:billing", &none));
  assert_false(names("san:api.example.org", &none));
}

static void test_lists(void **state) {
  (void)state;
  jrpcd_plist_t l;
  char err[256];
  assert_int_equal(jrpcd_plist_parse(" 10.0.0.0/8\t::1  192.168.1.7 ", 0, &l,
                                     err, sizeof(err)),
                   0);
  assert_int_equal(l.n, 3);
  jrpcd_identity_t a = tcp_peer("10.200.0.1"), b = tcp_peer("::1"),
                   c = tcp_peer("192.168.1.6");
  assert_true(jrpcd_plist_match(&l, &a));
  assert_true(jrpcd_plist_match(&l, &b));
  assert_false(jrpcd_plist_match(&l, &c));
  jrpcd_plist_free(&l);
  assert_int_equal(l.n, 0);

  /* "*" only where the caller allows it; empty lists and bad words are
   * refused with the word. */
  assert_int_equal(jrpcd_plist_parse("uid:0 *", 0, &l, err, sizeof(err)), -1);
  assert_non_null(strstr(err, "[access] rules"));
  assert_int_equal(jrpcd_plist_parse("uid:0 *", 1, &l, err, sizeof(err)), 0);
  assert_true(jrpcd_plist_match(&l, &c));
  jrpcd_plist_free(&l);
  assert_int_equal(jrpcd_plist_parse("   ", 1, &l, err, sizeof(err)), -1);
  assert_non_null(strstr(err, "empty"));
  assert_int_equal(
      jrpcd_plist_parse("uid:0 10.0.0.1/8", 0, &l, err, sizeof(err)), -1);
  assert_non_null(strstr(err, "10.0.0.1/8"));
  assert_null(l.v);
  char longw[400];
  memset(longw, 'a', sizeof(longw) - 1);
  longw[sizeof(longw) - 1] = '\0';
  assert_int_equal(jrpcd_plist_parse(longw, 0, &l, err, sizeof(err)), -1);
  assert_non_null(strstr(err, "longer than"));
}

static void test_globs(void **state) {
  (void)state;
  static const char m[] = "math.add";
  assert_true(jrpcd_glob_match("*", m, 8));
  assert_true(jrpcd_glob_match("math.*", m, 8));
  assert_true(jrpcd_glob_match("*.add", m, 8));
  assert_true(jrpcd_glob_match("math.ad?", m, 8));
  assert_true(jrpcd_glob_match("math.[a-c]dd", m, 8));
  assert_false(jrpcd_glob_match("math.", m, 8));
  assert_false(jrpcd_glob_match("math", m, 8));
  assert_false(jrpcd_glob_match("echo*", m, 8));
  /* The name is a slice: only its n bytes count. */
  assert_true(jrpcd_glob_match("math", m, 4));
  assert_false(jrpcd_glob_match("math.add", m, 4));
  assert_true(jrpcd_glob_match("rpc.stats", "rpc.stats", 9));

  jrpcd_globs_t g;
  char err[256];
  assert_int_equal(jrpcd_globs_parse("math.* rpc.stats", &g, err, sizeof(err)),
                   0);
  assert_int_equal(g.n, 2);
  assert_true(jrpcd_globs_match(&g, "math.divide", 11));
  assert_true(jrpcd_globs_match(&g, "rpc.stats", 9));
  assert_false(jrpcd_globs_match(&g, "echo", 4));
  assert_false(jrpcd_globs_match(&g, "rpc.statsx", 10));
  jrpcd_globs_free(&g);
  assert_int_equal(jrpcd_globs_parse("", &g, err, sizeof(err)), -1);
}

static void test_rules(void **state) {
  (void)state;
  jrpcd_access_t a;
  memset(&a, 0, sizeof(a));
  char err[256];
  /* First match decides: admin.* for root only, then math.* for anyone
   * on 10/8 or in group 100, then echo for anyone. */
  assert_int_equal(
      jrpcd_access_add(&a, "admin.*", "uid:0", 3, err, sizeof(err)), 0);
  assert_int_equal(
      jrpcd_access_add(&a, "math.*", "10.0.0.0/8 gid:100", 4, err, sizeof(err)),
      0);
  assert_int_equal(jrpcd_access_add(&a, "echo", "*", 5, err, sizeof(err)), 0);
  assert_int_equal(jrpcd_access_add(&a, "math.add", "*", 6, err, sizeof(err)),
                   0); /* shadowed by line 4 */
  uint32_t g100[] = {100};
  jrpcd_identity_t root = unix_peer(0, 0, NULL, 0),
                   user = unix_peer(1000, 1000, g100, 1),
                   lan = tcp_peer("10.1.1.1"), wan = tcp_peer("203.0.113.9");
  assert_true(jrpcd_access_allows(&a, "admin.reset", 11, &root));
  assert_false(jrpcd_access_allows(&a, "admin.reset", 11, &user));
  assert_true(jrpcd_access_allows(&a, "math.add", 8, &user));
  assert_true(jrpcd_access_allows(&a, "math.add", 8, &lan));
  assert_false(jrpcd_access_allows(&a, "math.add", 8, &wan));
  assert_false(jrpcd_access_allows(&a, "math.add", 8, &root));
  assert_true(jrpcd_access_allows(&a, "echo", 4, &wan));
  /* No rule matches: the default, allow unless `default = deny`. */
  assert_true(jrpcd_access_allows(&a, "sleep.ms", 8, &wan));
  a.default_deny = 1;
  assert_false(jrpcd_access_allows(&a, "sleep.ms", 8, &wan));
  assert_true(jrpcd_access_allows(&a, "echo", 4, &wan));
  assert_int_equal(a.rules[1].line, 4);

  assert_int_equal(
      jrpcd_access_add(&a, "x.*", "nobody-at-all", 7, err, sizeof(err)), -1);
  assert_non_null(strstr(err, "\"nobody-at-all\": not a principal"));
  assert_int_equal(a.n, 4);
  assert_int_equal(jrpcd_access_add(&a, "", "*", 8, err, sizeof(err)), -1);
  jrpcd_access_free(&a);
  assert_int_equal(a.n, 0);
}

/* A listener's policy from its words, and a generation's copy of the
 * rules deciding as the original does. */
static void test_policy_and_copy(void **state) {
  (void)state;
  char *peers[] = {"127.0.0.1", "gid:100", NULL};
  char *methods[] = {"math.*", "rpc.stats", NULL};
  jrpcd_policy_t pol;
  char err[256];
  assert_int_equal(
      jrpcd_policy_init(&pol, "net", peers, methods, err, sizeof(err)), 0);
  assert_string_equal(pol.listener, "net");
  assert_int_equal(pol.peers.n, 2);
  assert_true(pol.want_groups);
  assert_true(jrpcd_globs_match(&pol.methods, "math.add", 8));
  assert_false(jrpcd_globs_match(&pol.methods, "echo", 4));
  jrpcd_policy_free(&pol);
  assert_int_equal(jrpcd_policy_init(&pol, "any", NULL, NULL, err, sizeof(err)),
                   0);
  assert_int_equal(pol.peers.n + pol.methods.n, 0);
  assert_false(pol.want_groups);
  jrpcd_policy_free(&pol);

  jrpcd_access_t a, b;
  memset(&a, 0, sizeof(a));
  assert_int_equal(jrpcd_access_add(&a, "admin.*", "uid:0 san:ops.example", 1,
                                    err, sizeof(err)),
                   0);
  a.default_deny = 1;
  assert_int_equal(jrpcd_access_copy(&b, &a), 0);
  jrpcd_access_free(&a); /* the copy owns its own */
  jrpcd_identity_t root = unix_peer(0, 0, NULL, 0),
                   user = unix_peer(5, 5, NULL, 0);
  assert_true(jrpcd_access_allows(&b, "admin.x", 7, &root));
  assert_false(jrpcd_access_allows(&b, "admin.x", 7, &user));
  assert_false(jrpcd_access_allows(&b, "other", 5, &root)); /* default deny */
  assert_string_equal(b.rules[0].who.v[1].name, "ops.example");
  jrpcd_access_free(&b);
}

/* ::ffff:a.b.c.d principals: IPv4 peers (a dual-stack listener's too) are
 * matched as IPv4, so these stand for the IPv4 range, prefix less 96. */
static void test_v4mapped_principals(void **state) {
  (void)state;
  jrpcd_identity_t a = tcp_peer("10.1.2.3"), b = tcp_peer("11.0.0.1"),
                   m = tcp_peer("::ffff:10.9.9.9"), six = tcp_peer("fd00::5");
  assert_true(names("::ffff:10.0.0.0/104", &a)); /* == 10.0.0.0/8 */
  assert_false(names("::ffff:10.0.0.0/104", &b));
  assert_true(names("::ffff:10.0.0.0/104", &m));
  assert_true(names("::ffff:10.1.2.3", &a));
  assert_false(names("::ffff:10.1.2.4", &a));
  assert_true(names("::ffff:10.1.2.0/120", &a));
  assert_true(names("::ffff:0:0/96", &b)); /* == 0.0.0.0/0 */
  assert_false(names("::ffff:0:0/96", &six));
  /* A shorter IPv6 prefix names IPv6 peers only, as documented. */
  assert_false(names("::/0", &a));
  assert_true(names("::/0", &six));
  jrpcd_principal_t p;
  char err[256];
  assert_int_equal(
      jrpcd_principal_parse("::ffff:192.168.0.0/112", 0, &p, err, sizeof(err)),
      0);
  assert_int_equal(p.family, AF_INET);
  assert_int_equal(p.prefix, 16);
  refused("::ffff:10.0.0.1/104", 0, "did you mean ::ffff:10.0.0.0/104?");
}

/* "admin." and then `pad` x's, NUL-terminated; freed by the caller. */
static char *long_name(size_t pad) {
  char *s = malloc(6 + pad + 1);
  assert_non_null(s);
  memcpy(s, "admin.", 6);
  memset(s + 6, 'x', pad);
  s[6 + pad] = '\0';
  return s;
}

/* Names of any length match: at and past the 255 bytes fnmatch's copy
 * held, an `admin.*` rule still decides for `admin.` + 300 bytes. */
static void test_long_names(void **state) {
  (void)state;
  static const size_t pads[] = {248, 249, 250, 251, 300, 5000, 1u << 20};
  for (size_t k = 0; k < sizeof(pads) / sizeof(pads[0]); k++) {
    char *n = long_name(pads[k]);
    size_t len = strlen(n);
    assert_int_equal(jrpcd_glob_match("admin.*", n, len), 1);
    assert_int_equal(jrpcd_glob_match("*x", n, len), 1);
    assert_int_equal(jrpcd_glob_match("*.x*", n, len), 1);
    assert_int_equal(jrpcd_glob_match("admin.?", n, len), 0);
    assert_int_equal(jrpcd_glob_match("*y", n, len), 0);
    assert_int_equal(jrpcd_glob_match("admin.*", n, len - 1), 1);
    free(n);
  }
  char *n = long_name(300);
  size_t len = strlen(n);
  assert_int_equal(jrpcd_glob_match(n, n, len), 1); /* a glob that long */
  assert_int_equal(jrpcd_glob_match(n, n, len - 1), 0);

  jrpcd_access_t a;
  memset(&a, 0, sizeof(a));
  char err[256];
  assert_int_equal(
      jrpcd_access_add(&a, "admin.*", "uid:0", 1, err, sizeof(err)), 0);
  jrpcd_identity_t root = unix_peer(0, 0, NULL, 0),
                   user = unix_peer(1000, 1000, NULL, 0);
  assert_false(jrpcd_access_allows(&a, n, len, &user));
  assert_true(jrpcd_access_allows(&a, n, len, &root));
  jrpcd_globs_t g;
  assert_int_equal(jrpcd_globs_parse("admin.*", &g, err, sizeof(err)), 0);
  assert_true(jrpcd_globs_match(&g, n, len));
  jrpcd_globs_free(&g);
  jrpcd_access_free(&a);
  free(n);
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Globs that make a backtracking matcher exponential take at most
 * (name + 1) x (glob + 1) steps here: "*a*a...*a*b" against a's. */
static void test_pathological_globs(void **state) {
  (void)state;
  char glob[128];
  size_t k = 0;
  for (int i = 0; i < 30; i++) {
    glob[k++] = '*';
    glob[k++] = 'a';
  }
  memcpy(glob + k, "*b", 3);
  static const size_t sizes[] = {60, 200, 100000};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    char *name = malloc(sizes[i]);
    assert_non_null(name);
    memset(name, 'a', sizes[i]);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(jrpcd_glob_match(glob, name, sizes[i]), 0);
    name[sizes[i] - 1] = 'b';
    assert_int_equal(jrpcd_glob_match(glob, name, sizes[i]), 1);
    /* 100000 x 64 steps is milliseconds; exponential would be years. */
    double took = seconds_since(&t0);
    if (took > 2.0)
      fail_msg("%zu bytes: %.2f s", sizes[i], took);
    free(name);
  }
}

/* The matcher agrees with fnmatch(3) (no flags) on every glob both read
 * the same way, over random globs and names from a small alphabet (so that
 * matches are frequent): named classes and backslashes are left out, and
 * globs this matcher refuses (fnmatch takes an unclosed '[' as a '['). */
static void test_agrees_with_fnmatch(void **state) {
  (void)state;
  static const char galpha[] = "ab.*?[]!-^";
  static const char nalpha[] = "ab.-]!^";
  unsigned seed = 12345;
  int compared = 0, matched = 0;
  char glob[12], name[12], err[256];
  for (int round = 0; round < 200000; round++) {
    seed = seed * 1103515245u + 12345u;
    size_t gl = 1 + (seed >> 16) % 8, nl = (seed >> 8) % 9;
    for (size_t i = 0; i < gl; i++) {
      seed = seed * 1103515245u + 12345u;
      glob[i] = galpha[(seed >> 16) % (sizeof(galpha) - 1)];
    }
    glob[gl] = '\0';
    for (size_t i = 0; i < nl; i++) {
      seed = seed * 1103515245u + 12345u;
      name[i] = nalpha[(seed >> 16) % (sizeof(nalpha) - 1)];
    }
    name[nl] = '\0';
    if (jrpcd_glob_check(glob, err, sizeof(err)) != 0)
      continue;
    int want = fnmatch(glob, name, 0) == 0;
    int got = jrpcd_glob_match(glob, name, nl);
    if (got != want)
      fail_msg("glob \"%s\" name \"%s\": %d, fnmatch %d", glob, name, got,
               want);
    compared++;
    matched += want;
  }
  assert_true(compared > 50000);
  assert_true(matched > 1000);
}

/* What the matcher would not read is refused with the glob quoted, and
 * if one reaches a rule anyway, it allows nothing. */
static void test_invalid_globs(void **state) {
  (void)state;
  static const struct {
    const char *glob, *why;
  } bad[] = {
      {"[abc", "an unclosed '['"},
      {"math.[ab", "an unclosed '['"},
      {"[]", "an unclosed '['"},
      {"[!]", "an unclosed '['"},
      {"[a\\", "an unclosed '['"},
      {"[a-\\", "an unclosed '['"},
      {"a\\", "escapes nothing"},
      {"[z-a]", "the range \"z-a\" is backwards"},
      {"[[:alpha:]]", "named classes"},
      {"[[=a=]]", "named classes"},
      {"", "an empty glob"},
  };
  char err[256];
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    err[0] = '\0';
    if (jrpcd_glob_check(bad[i].glob, err, sizeof(err)) == 0)
      fail_msg("\"%s\" was accepted", bad[i].glob);
    if (!strstr(err, bad[i].why) || (*bad[i].glob && !strstr(err, bad[i].glob)))
      fail_msg("\"%s\": message \"%s\" lacks \"%s\"", bad[i].glob, err,
               bad[i].why);
    /* Matching it anyway: -1, never a match. */
    if (*bad[i].glob)
      assert_int_equal(jrpcd_glob_match(bad[i].glob, "abc", 3) == 1, 0);
  }
  assert_int_equal(jrpcd_glob_match("[abc", "a", 1), -1);
  /* Sets and escapes that are well formed. */
  assert_int_equal(jrpcd_glob_check("[]a]", err, sizeof(err)), 0);
  assert_int_equal(jrpcd_glob_match("[]a]", "]", 1), 1);
  assert_int_equal(jrpcd_glob_match("[!a-c]", "d", 1), 1);
  assert_int_equal(jrpcd_glob_match("[^a-c]", "b", 1), 0);
  assert_int_equal(jrpcd_glob_match("[a-]", "-", 1), 1);
  assert_int_equal(jrpcd_glob_match("\\[x\\]", "[x]", 3), 1);
  assert_int_equal(jrpcd_glob_match("a\\*", "ab", 2), 0);
  assert_int_equal(jrpcd_glob_match("a\\*", "a*", 2), 1);
  assert_int_equal(jrpcd_glob_match("[\\]]", "]", 1), 1);

  jrpcd_globs_t g;
  assert_int_equal(jrpcd_globs_parse("math.* [abc", &g, err, sizeof(err)), -1);
  assert_non_null(strstr(err, "\"[abc\": an unclosed '['"));
  assert_null(g.v);
  char *methods[] = {"math.*", "x[", NULL};
  jrpcd_policy_t pol;
  assert_int_equal(
      jrpcd_policy_init(&pol, "l", NULL, methods, err, sizeof(err)), -1);
  assert_non_null(strstr(err, "\"x[\""));

  jrpcd_access_t a;
  memset(&a, 0, sizeof(a));
  assert_int_equal(jrpcd_access_add(&a, "admin.[x", "*", 4, err, sizeof(err)),
                   -1);
  assert_non_null(strstr(err, "\"admin.[x\": an unclosed '['"));
  assert_int_equal(a.n, 0);

  /* Fail closed: a rule whose glob cannot be read (put there without
   * jrpcd_access_add) denies a name that reaches the unreadable part,
   * rather than fall through to a later rule or the default; a name its
   * readable part rules out ("other") goes on to them. A listener's list
   * that holds one does not serve by it. */
  jrpcd_identity_t root = unix_peer(0, 0, NULL, 0);
  char glob[] = "admin.[x", star[] = "*";
  jrpcd_rule_t rules[2] = {{.glob = glob, .line = 1},
                           {.glob = star, .line = 2}};
  for (size_t i = 0; i < 2; i++)
    assert_int_equal(jrpcd_plist_parse("*", 1, &rules[i].who, err, sizeof(err)),
                     0);
  a.rules = rules;
  a.n = 2;
  assert_false(jrpcd_access_allows(&a, "admin.x", 7, &root));
  assert_true(jrpcd_access_allows(&a, "other", 5, &root));
  for (size_t i = 0; i < 2; i++)
    jrpcd_plist_free(&rules[i].who);
  char *v[] = {glob};
  jrpcd_globs_t raw = {v, 1};
  assert_false(jrpcd_globs_match(&raw, "admin.[x", 8));
}

/* Shadowed rules: only the cases that are certain. */
static void test_shadowing(void **state) {
  (void)state;
  static const struct {
    const char *earlier, *later;
    int covers;
  } cases[] = {
      {"*", "admin.x", 1},
      {"**", "a*b?[cd]", 1},
      {"admin.*", "admin.*", 1},
      {"admin.*", "admin.reboot", 1},
      {"admin.*", "admin.re*", 1},
      {"admin.*", "admin.[ab]*", 1},
      {"admin.**", "admin.?", 1},
      {"*.reboot", "admin.reboot", 1},
      {"adm?n.[a-z]*", "admin.x", 1},
      {"a\\*", "a\\*", 1},
      {"a.*", "\\a.b*", 1}, /* an escaped literal is literal */
      /* Not covered, or not certain: no warning. */
      {"admin.*", "admin", 0},
      {"admin.*", "admin*", 0},
      {"admin.*", "math.*", 0},
      {"admin.re*", "admin.*", 0},
      {"admin.x", "admin.*", 0},
      {"*.reboot", "admin.*", 0},
      {"a?*", "ab*", 0}, /* true, but not a case we know */
      {"a.*b", "a.*", 0},
      {"a.[!x]*", "a.y*", 0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    if (jrpcd_glob_covers(cases[i].earlier, cases[i].later) != cases[i].covers)
      fail_msg("\"%s\" covers \"%s\": said %d, wanted %d", cases[i].earlier,
               cases[i].later, !cases[i].covers, cases[i].covers);

  jrpcd_access_t a;
  memset(&a, 0, sizeof(a));
  char err[256], why[512];
  assert_int_equal(jrpcd_access_add(&a, "math.add", "*", 3, err, sizeof(err)),
                   0);
  assert_int_equal(
      jrpcd_access_add(&a, "admin.*", "uid:0", 4, err, sizeof(err)), 0);
  assert_int_equal(
      jrpcd_access_add(&a, "admin.reboot", "*", 5, err, sizeof(err)), 0);
  assert_int_equal(jrpcd_access_add(&a, "math.*", "*", 6, err, sizeof(err)), 0);
  assert_int_equal(jrpcd_access_add(&a, "*", "uid:0", 7, err, sizeof(err)), 0);
  assert_int_equal(jrpcd_access_add(&a, "echo", "*", 8, err, sizeof(err)), 0);
  assert_false(jrpcd_access_shadowed(&a, 0, why, sizeof(why)));
  assert_false(jrpcd_access_shadowed(&a, 1, why, sizeof(why)));
  assert_true(jrpcd_access_shadowed(&a, 2, why, sizeof(why)));
  assert_string_equal(why, "[access] admin.reboot: never decides: every "
                           "method it matches, \"admin.*\" at line 4 "
                           "matches first");
  assert_false(jrpcd_access_shadowed(&a, 3, why, sizeof(why)));
  assert_false(jrpcd_access_shadowed(&a, 4, why, sizeof(why)));
  assert_true(jrpcd_access_shadowed(&a, 5, why, sizeof(why)));
  assert_non_null(strstr(why, "\"*\" at line 7"));
  assert_false(jrpcd_access_shadowed(&a, 6, why, sizeof(why))); /* no rule */
  jrpcd_access_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cidr),
      cmocka_unit_test(test_ids_and_names),
      cmocka_unit_test(test_certificates),
      cmocka_unit_test(test_lists),
      cmocka_unit_test(test_globs),
      cmocka_unit_test(test_rules),
      cmocka_unit_test(test_policy_and_copy),
      cmocka_unit_test(test_v4mapped_principals),
      cmocka_unit_test(test_long_names),
      cmocka_unit_test(test_pathological_globs),
      cmocka_unit_test(test_agrees_with_fnmatch),
      cmocka_unit_test(test_invalid_globs),
      cmocka_unit_test(test_shadowing),
  };
  return cmocka_run_group_tests_name("test_access", tests, NULL, NULL);
}
