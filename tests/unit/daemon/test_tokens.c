/* test_tokens.c - daemon/tokens.c: the tokens file (lines, comments, every
 * refusal with its line, the file's mode), the lookup of a presented
 * token's hash among all entries, the Authorization value's bearer token,
 * jrpcd --hash-token's token and line, the token:NAME principal of
 * [access] rules (access.c), and sha256.c against FIPS 180-4's examples
 * and the lengths around a block's edges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"
#include "tokens.h"

static char dir[64];
static char path[128];

/* SHA-256 of "alpha", "beta" and "gamma" (sha256sum). */
#define H_ALPHA                                                                \
  "8ed3f6ad685b959ead7022518e1af76cd816f8e8ec7ccdda1ed4018e8f2223f8"
#define H_BETA                                                                 \
  "f44e64e75f3948e9f73f8dfa94721c4ce8cbb4f265c4790c702b2d41cfbf2753"
#define H_GAMMA                                                                \
  "be9d587defa1f0c09ef49eb17e206983a5f8f8289e4281860bd0ee5a19592c67"

static void write_file(const char *text, mode_t mode) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof(dir), "/tmp/test_tokens.XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(path, sizeof(path), "%s/tokens", dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(path);
  rmdir(dir);
  return 0;
}

static void digest_of(const char *tok, uint8_t d[JRPCD_TOKEN_DIGEST]) {
  jrpcd_token_digest(tok, strlen(tok), d);
}

static void hex_of(const uint8_t *d, char *out) {
  for (int i = 0; i < JRPCD_TOKEN_DIGEST; i++)
    sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_digest_is_sha256(void **state) {
  (void)state;
  uint8_t d[JRPCD_TOKEN_DIGEST];
  char hex[2 * JRPCD_TOKEN_DIGEST + 1];
  digest_of("alpha", d);
  hex_of(d, hex);
  assert_string_equal(hex, H_ALPHA);
  digest_of("", d);
  hex_of(d, hex);
  assert_string_equal(
      hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  /* FIPS 180-4's examples: one block, two blocks (the length does not fit
   * after the data), and a million bytes. */
  digest_of("abc", d);
  hex_of(d, hex);
  assert_string_equal(
      hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  digest_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", d);
  hex_of(d, hex);
  assert_string_equal(
      hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  char *million = malloc(1000001);
  assert_non_null(million);
  memset(million, 'a', 1000000);
  million[1000000] = '\0';
  digest_of(million, d);
  free(million);
  hex_of(d, hex);
  assert_string_equal(
      hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  /* The lengths at a block's edges, as sha256sum hashes them: 55 bytes of
   * "a" leave room for the padding and length in one block, 56 do not,
   * 64 fill a block. */
  static const char *const edges[][2] = {
      {"55",
       "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {"56",
       "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {"64",
       "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
  };
  for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
    char a[65];
    size_t n = (size_t)atoi(edges[i][0]);
    memset(a, 'a', n);
    a[n] = '\0';
    digest_of(a, d);
    hex_of(d, hex);
    assert_string_equal(hex, edges[i][1]);
  }
}

/* Comments, blank lines, blanks around the fields, CRLF endings. */
static void test_load_and_find(void **state) {
  (void)state;
  uint8_t d[JRPCD_TOKEN_DIGEST];
  char hex[2][2 * JRPCD_TOKEN_DIGEST + 1];
  digest_of("beta", d);
  hex_of(d, hex[0]);
  digest_of("gamma", d);
  hex_of(d, hex[1]);
  char text[1024];
  snprintf(text, sizeof(text),
           "# who may call\n"
           "\n"
           "alpha sha256:" H_ALPHA "\n"
           "   \t\n"
           "  beta\tsha256:%s  \r\n"
           "# gamma is the ops one\n"
           "ops@host.x-1_2 sha256:%s",
           hex[0], hex[1]);
  write_file(text, 0600);
  jrpcd_tokens_t t;
  char err[256] = "";
  assert_int_equal(jrpcd_tokens_load(&t, path, err, sizeof(err)), 0);
  assert_int_equal(t.n, 3);
  static const char *const tok[] = {"alpha", "beta", "gamma"};
  static const char *const name[] = {"alpha", "beta", "ops@host.x-1_2"};
  for (int i = 0; i < 3; i++) {
    digest_of(tok[i], d);
    const jrpcd_token_t *e = jrpcd_tokens_find(&t, d);
    assert_non_null(e);
    assert_string_equal(e->name, name[i]);
  }
  /* The hash itself, another token, one byte more: none. */
  digest_of(H_ALPHA, d);
  assert_null(jrpcd_tokens_find(&t, d));
  digest_of("alphA", d);
  assert_null(jrpcd_tokens_find(&t, d));
  digest_of("alpha ", d);
  assert_null(jrpcd_tokens_find(&t, d));
  jrpcd_tokens_free(&t);
  /* Group-readable is allowed (root:jrpcd 0640). */
  write_file("a sha256:" H_ALPHA "\n", 0640);
  assert_int_equal(jrpcd_tokens_load(&t, path, err, sizeof(err)), 0);
  jrpcd_tokens_free(&t);
}

static void expect_refused(const char *text, mode_t mode, const char *want) {
  write_file(text, mode);
  jrpcd_tokens_t t;
  char err[512] = "";
  assert_int_equal(jrpcd_tokens_load(&t, path, err, sizeof(err)), -1);
  assert_null(t.v);
  assert_int_equal(t.n, 0);
  char full[512];
  snprintf(full, sizeof(full), "%s: %s", path, want);
  if (strncmp(err, full, strlen(full)) != 0)
    fail_msg("for %s wanted \"%s...\", got \"%s\"", text, full, err);
}

static void test_refusals(void **state) {
  (void)state;
  static const struct {
    const char *text;
    mode_t mode;
    const char *want; /* the start of the message after the path */
  } cases[] = {
      {"a sha256:" H_ALPHA "\n", 0644,
       "mode 0644 lets others read or write it"},
      {"a sha256:" H_ALPHA "\n", 0602,
       "mode 0602 lets others read or write it"},
      {"a sha256:" H_ALPHA "\n", 0660, "mode 0660 lets its group write it"},
      {"# nothing\n\n", 0600, "no token"},
      {"", 0600, "no token"},
      {"# one\nalpha\n", 0600, "line 2: expected NAME sha256:HEX"},
      {"alpha " H_ALPHA "\n", 0600, "line 1: the hash must be sha256:HEX"},
      {"alpha sha512:" H_ALPHA "\n", 0600,
       "line 1: the hash must be sha256:HEX"},
      {"alpha sha256:" H_ALPHA "0\n", 0600,
       "line 1: sha256:HEX takes 64 lowercase hex digits and"},
      {"alpha sha256:" H_ALPHA " extra\n", 0600,
       "line 1: sha256:HEX takes 64 lowercase hex digits and"},
      {"alpha "
       "sha256:8ED3F6AD685B959EAD7022518E1AF76CD816F8E8EC7CCDDA1ED4018E8F2"
       "223F8\n",
       0600, "line 1: sha256:HEX takes 64 lowercase hex digits"},
      {"al/pha sha256:" H_ALPHA "\n", 0600, "line 1: a NAME is 1 to 64"},
      {"a sha256:" H_ALPHA "\n\na sha256:" H_BETA "\n", 0600,
       "line 3: the name is on line 1 already"},
      {"a sha256:" H_ALPHA "\nb sha256:" H_ALPHA "\n", 0600,
       "line 2: the hash is on line 1 already"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    expect_refused(cases[i].text, cases[i].mode, cases[i].want);
  char name[80];
  memset(name, 'n', 65);
  name[65] = '\0';
  char text[256];
  snprintf(text, sizeof(text), "%s sha256:" H_GAMMA "\n", name);
  expect_refused(text, 0600, "line 1: a NAME is 1 to 64");
  /* Not a file: a directory, and none at all. */
  jrpcd_tokens_t t;
  char err[256];
  assert_int_equal(jrpcd_tokens_load(&t, dir, err, sizeof(err)), -1);
  assert_non_null(strstr(err, "not a regular file"));
  unlink(path);
  assert_int_equal(jrpcd_tokens_load(&t, path, err, sizeof(err)), -1);
  assert_non_null(strstr(err, "No such file"));
}

static void test_bearer(void **state) {
  (void)state;
  const char *tok;
  size_t n;
  static const struct {
    const char *cred, *want; /* want NULL: refused */
  } cases[] = {
      {"Bearer abc", "abc"},
      {"bearer abc", "abc"},
      {"BEARER \t abc.-_~+/=  ", "abc.-_~+/="},
      {"Bearer", NULL},
      {"Bearer ", NULL},
      {"Bearerabc", NULL},
      {"Basic YTpi", NULL},
      {"Bearer a b", NULL},
      {"", NULL},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    int rc = jrpcd_bearer_token(cases[i].cred, strlen(cases[i].cred), &tok, &n);
    if (!cases[i].want) {
      if (rc != -1)
        fail_msg("\"%s\" taken as a bearer token", cases[i].cred);
      continue;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(n, strlen(cases[i].want));
    assert_memory_equal(tok, cases[i].want, n);
  }
  assert_int_equal(jrpcd_bearer_token(NULL, 0, &tok, &n), -1);
  /* Longer than any token looked at. */
  char big[JRPCD_TOKEN_MAX + 16] = "Bearer ";
  memset(big + 7, 'x', JRPCD_TOKEN_MAX + 1);
  big[7 + JRPCD_TOKEN_MAX + 1] = '\0';
  assert_int_equal(jrpcd_bearer_token(big, strlen(big), &tok, &n), -1);
  big[7 + JRPCD_TOKEN_MAX] = '\0';
  assert_int_equal(jrpcd_bearer_token(big, strlen(big), &tok, &n), 0);
}

/* --hash-token: 43 base64url characters, a new one each time, and a line
 * that the file reader takes and finds the token by. */
static void test_new_token(void **state) {
  (void)state;
  char tok[2][64], line[2][160], err[128];
  for (int i = 0; i < 2; i++)
    assert_int_equal(jrpcd_token_new("web-1", tok[i], sizeof(tok[i]), line[i],
                                     sizeof(line[i]), err, sizeof(err)),
                     0);
  assert_int_equal(strlen(tok[0]), 43);
  assert_int_equal(strspn(tok[0], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq"
                                  "rstuvwxyz0123456789-_"),
                   43);
  assert_string_not_equal(tok[0], tok[1]);
  assert_int_equal(strncmp(line[0], "web-1 sha256:", 13), 0);
  assert_int_equal(strlen(line[0]), 13 + 64);
  char text[400];
  snprintf(text, sizeof(text), "%s\n%s\n", line[0], "other sha256:" H_BETA);
  write_file(text, 0600);
  jrpcd_tokens_t t;
  assert_int_equal(jrpcd_tokens_load(&t, path, err, sizeof(err)), 0);
  uint8_t d[JRPCD_TOKEN_DIGEST];
  digest_of(tok[0], d);
  const jrpcd_token_t *e = jrpcd_tokens_find(&t, d);
  assert_non_null(e);
  assert_string_equal(e->name, "web-1");
  digest_of(tok[1], d);
  assert_null(jrpcd_tokens_find(&t, d));
  jrpcd_tokens_free(&t);
  assert_int_equal(jrpcd_token_new("a b", tok[0], sizeof(tok[0]), line[0],
                                   sizeof(line[0]), err, sizeof(err)),
                   -1);
  assert_non_null(strstr(err, "a NAME is 1 to 64"));
}

/* token:NAME in an [access] rule names the token's caller only. */
static void test_token_principal(void **state) {
  (void)state;
  jrpcd_access_t a = {0};
  char err[256];
  assert_int_equal(
      jrpcd_access_add(&a, "admin.*", "token:ops", 1, err, sizeof(err)), 0);
  assert_int_equal(
      jrpcd_access_add(&a, "*", "token:app token:ops", 2, err, sizeof(err)), 0);
  jrpcd_identity_t id = {.family = AF_INET};
  assert_int_equal(jrpcd_access_allows(&a, "admin.x", 7, &id), 0);
  assert_int_equal(jrpcd_access_allows(&a, "math.add", 8, &id), 0);
  id.token = "app";
  assert_int_equal(jrpcd_access_allows(&a, "admin.x", 7, &id), 0);
  assert_int_equal(jrpcd_access_allows(&a, "math.add", 8, &id), 1);
  id.token = "ops";
  assert_int_equal(jrpcd_access_allows(&a, "admin.x", 7, &id), 1);
  id.token = "op";
  assert_int_equal(jrpcd_access_allows(&a, "admin.x", 7, &id), 0);
  jrpcd_access_free(&a);
  jrpcd_principal_t p;
  assert_int_equal(jrpcd_principal_parse("token:", 1, &p, err, sizeof(err)),
                   -1);
  assert_non_null(strstr(err, "nothing after \"token:\""));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_digest_is_sha256),
      cmocka_unit_test_setup_teardown(test_load_and_find, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
      cmocka_unit_test(test_bearer),
      cmocka_unit_test_setup_teardown(test_new_token, setup, teardown),
      cmocka_unit_test(test_token_principal),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
