/* test_config_keys.c - daemon/config_keys.h, the table of config keys:
 * every row is well-formed, every row's range, type and default hold
 * through the reader with the usual messages, the list type the coming
 * keys need, `jrpcd -T`'s printout (which reads back to the same settings)
 * `jrpcd --list-keys`, and the fuzz dictionary naming every key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "config_keys.h"
#include "config_print.h"

static char err[1024];

static int load(jrpcd_config_t *c, const char *text) {
  err[0] = '\0';
  return jrpcd_config_load_string(c, text, "t.conf", err, sizeof err);
}

static void load_ok(jrpcd_config_t *c, const char *text) {
  if (load(c, text) != 0)
    fail_msg("unexpected error: %s\nfor:\n%s", err, text);
}

/* A config that sets KEY = VALUE on its line 2, in a section of K's kind,
 * with a unix listener to make it whole. */
static void text_with(char *out, size_t cap, const jrpcd_key_t *k,
                      const char *value) {
  switch (k->section) {
  case JRPCD_SEC_SERVER:
    snprintf(out, cap, "[server]\n%s = %s\n[listen a]\nunix = /a\n", k->name,
             value);
    break;
  case JRPCD_SEC_LISTEN:
    if (k->makes_kind)
      snprintf(out, cap, "[listen a]\n%s = %s\n", k->name, value);
    else
      snprintf(out, cap, "[listen a]\n%s = %s\n%s\n", k->name, value,
               k->kinds && !(k->kinds & JRPCD_KIND_BIT(JRPCD_LISTEN_UNIX))
                   ? "tcp = 127.0.0.1:1"
                   : "unix = /a");
    break;
  case JRPCD_SEC_CLUSTER:
    /* [cluster] needs nats: after the key, which stays on line 4. */
    snprintf(out, cap, "[listen a]\nunix = /a\n[cluster]\n%s = %s\n%s", k->name,
             value,
             strcmp(k->name, "nats") != 0 ? "nats = nats://127.0.0.1:4222\n"
                                          : "");
    break;
  case JRPCD_SEC_PLUGIN:
    /* Every plugin needs a path: after the key, which stays on line 4. */
    snprintf(out, cap, "[listen a]\nunix = /a\n[plugin p]\n%s = %s\n%s",
             k->name, value,
             strcmp(k->name, "path") != 0 ? "path = /dev/null\n" : "");
    break;
  }
}

/* The struct K's field is in, in C. */
static const void *base_of(const jrpcd_config_t *c, const jrpcd_key_t *k) {
  return k->section == JRPCD_SEC_SERVER || k->section == JRPCD_SEC_CLUSTER
             ? (const void *)c
         : k->section == JRPCD_SEC_LISTEN ? (const void *)&c->listens[0]
                                          : (const void *)&c->plugins[0];
}

static void expect_message(const jrpcd_key_t *k, const char *value,
                           const char *why) {
  char text[512], want[512];
  text_with(text, sizeof text, k, value);
  jrpcd_config_t c;
  int line =
      k->section == JRPCD_SEC_PLUGIN || k->section == JRPCD_SEC_CLUSTER ? 4 : 2;
  const char *label = k->section == JRPCD_SEC_SERVER    ? "[server]"
                      : k->section == JRPCD_SEC_LISTEN  ? "[listen a]"
                      : k->section == JRPCD_SEC_CLUSTER ? "[cluster]"
                                                        : "[plugin p]";
  snprintf(want, sizeof want, "t.conf:%d: %s %s: %s", line, label, k->name,
           why);
  if (load(&c, text) != -1 || strcmp(err, want) != 0)
    fail_msg("%s = %s: got \"%s\", want \"%s\"", k->name, value, err, want);
}

/* ------------------------------------------------------------------ */

static void test_rows(void **state) {
  (void)state;
  int kind_keys[JRPCD_LISTEN_KINDS] = {0};
  assert_true(jrpcd_nkeys > 0);
  /* A listener keeps the line of each of its keys in an array this big. */
  assert_true(jrpcd_nkeys <= JRPCD_KEY_ROWS_MAX);
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    assert_non_null(k->name);
    assert_true(k->doc && k->doc[0]);
    if (jrpcd_key_find(k->section, k->name) != k)
      fail_msg("%s: twice in [%s]", k->name, jrpcd_section_name(k->section));
    size_t struct_size =
        k->section == JRPCD_SEC_SERVER || k->section == JRPCD_SEC_CLUSTER
            ? sizeof(jrpcd_config_t)
        : k->section == JRPCD_SEC_LISTEN ? sizeof(jrpcd_listen_conf_t)
                                         : sizeof(jrpcd_plugin_conf_t);
    if (k->offset + k->size > struct_size)
      fail_msg("%s: field past its struct", k->name);
    switch (k->type) {
    case JRPCD_KEY_UINT:
      if (k->size != 1 && k->size != 2 && k->size != 4 && k->size != 8)
        fail_msg("%s: a number in a field of %zu bytes", k->name, k->size);
      if (k->min > k->max || (k->size < 8 && k->max >> (8 * k->size) != 0))
        fail_msg("%s: range %llu .. %llu in %zu bytes", k->name,
                 (unsigned long long)k->min, (unsigned long long)k->max,
                 k->size);
      for (const jrpcd_key_word_t *w = k->words; w && w->word; w++)
        if (k->size < 8 && w->value >> (8 * k->size) != 0)
          fail_msg("%s: %s does not fit", k->name, w->word);
      break;
    case JRPCD_KEY_BOOL:
    case JRPCD_KEY_MODE:
    case JRPCD_KEY_ENUM:
      assert_int_equal(k->size, sizeof(int));
      if (k->type == JRPCD_KEY_ENUM && !(k->words && k->what))
        fail_msg("%s: an enum needs words and what", k->name);
      break;
    case JRPCD_KEY_WORD:
    case JRPCD_KEY_STRING:
    case JRPCD_KEY_LIST:
    case JRPCD_KEY_HOST_PORT:
      assert_int_equal(k->size, sizeof(char *));
      if (k->type == JRPCD_KEY_WORD && !(k->words && k->what))
        fail_msg("%s: a word needs words and what", k->name);
      if (k->type != JRPCD_KEY_HOST_PORT && k->min && !k->what)
        fail_msg("%s: \"is empty (...)\" needs what", k->name);
      if (k->type == JRPCD_KEY_HOST_PORT && !k->offset2)
        fail_msg("%s: host:port needs the port field", k->name);
      break;
    }
    if (k->section != JRPCD_SEC_LISTEN) {
      if (k->kinds || k->makes_kind)
        fail_msg("%s: listener kinds outside [listen]", k->name);
      for (int kind = 0; kind < JRPCD_LISTEN_KINDS; kind++)
        if (k->kind_def[kind])
          fail_msg("%s: a per-kind default outside [listen]", k->name);
    }
    if (k->makes_kind) {
      assert_true(k->makes_kind >= 1 && k->makes_kind <= JRPCD_LISTEN_KINDS);
      kind_keys[k->makes_kind - 1]++;
    }
  }
  for (int kind = 0; kind < JRPCD_LISTEN_KINDS; kind++)
    if (kind_keys[kind] != 1)
      fail_msg("%d keys make a listener %s", kind_keys[kind],
               jrpcd_kind_names[kind]);
}

/* What the table says of each key is what the reader does. */
static void test_ranges_and_types(void **state) {
  (void)state;
  char v[64], why[256], text[512];
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    jrpcd_config_t c;
#ifndef JRPC_HAVE_NATS
    if (k->section == JRPCD_SEC_CLUSTER)
      continue; /* [cluster] is refused whole (test_config: no_nats) */
#endif
    switch (k->type) {
    case JRPCD_KEY_UINT:
      snprintf(v, sizeof v, "%llu", (unsigned long long)k->max);
      text_with(text, sizeof text, k, v);
      load_ok(&c, text);
      char got[64];
      jrpcd_key_format(k, base_of(&c, k), got, sizeof got);
      if (strcmp(got, v) != 0)
        fail_msg("%s = %s reads as %s", k->name, v, got);
      jrpcd_config_free(&c);
      snprintf(v, sizeof v, "%llu", (unsigned long long)k->min);
      text_with(text, sizeof text, k, v);
      load_ok(&c, text);
      jrpcd_config_free(&c);
      if (k->max < UINT64_MAX) {
        snprintf(v, sizeof v, "%llu", (unsigned long long)k->max + 1);
        snprintf(why, sizeof why, "\"%s\" is out of range (%llu .. %llu)", v,
                 (unsigned long long)k->min, (unsigned long long)k->max);
        expect_message(k, v, why);
      }
      if (k->min > 0) {
        snprintf(v, sizeof v, "%llu", (unsigned long long)k->min - 1);
        snprintf(why, sizeof why, "\"%s\" is out of range (%llu .. %llu)", v,
                 (unsigned long long)k->min, (unsigned long long)k->max);
        expect_message(k, v, why);
      }
      snprintf(why, sizeof why, "\"12k\" is not a number (%llu .. %llu)",
               (unsigned long long)k->min, (unsigned long long)k->max);
      expect_message(k, "12k", why);
      break;
    case JRPCD_KEY_BOOL:
      expect_message(k, "maybe",
                     "\"maybe\" is not yes or no (yes/no, "
                     "true/false, on/off, 1/0)");
      break;
    case JRPCD_KEY_ENUM:
    case JRPCD_KEY_WORD:
      snprintf(why, sizeof why, "\"not-one\" is not %s (", k->what);
      text_with(text, sizeof text, k, "not-one");
      assert_int_equal(load(&c, text), -1);
      if (!strstr(err, why) || !strstr(err, k->words[0].word))
        fail_msg("%s: \"%s\" lacks \"%s\"", k->name, err, why);
      break;
    case JRPCD_KEY_STRING:
      if (k->min) {
        snprintf(why, sizeof why, "is empty (%s)", k->what);
        expect_message(k, "", why);
      }
      break;
    default:
      break;
    }
  }
}

/* Every default of the table is what a config without the key gets. */
static void test_defaults_from_table(void **state) {
  (void)state;
  jrpcd_config_t c;
  load_ok(&c, "[listen u]\nunix = /u\n[listen t]\ntcp = 127.0.0.1:1\n");
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    /* [plugin] and [cluster] keys are not set without their section. */
    if (k->section == JRPCD_SEC_PLUGIN || k->section == JRPCD_SEC_CLUSTER)
      continue;
    /* workers = 0 is resolved to the number of CPUs once read. */
    if (k->section == JRPCD_SEC_SERVER && strcmp(k->name, "workers") == 0)
      continue;
    /* thread_pool = 0 likewise, to a figure derived from workers. */
    if (k->section == JRPCD_SEC_SERVER && strcmp(k->name, "thread_pool") == 0)
      continue;
    for (size_t l = 0; l < (k->section == JRPCD_SEC_LISTEN ? 2u : 1u); l++) {
      const void *base = k->section == JRPCD_SEC_SERVER
                             ? (const void *)&c
                             : (const void *)&c.listens[l];
      const char *def =
          jrpcd_key_default(k, k->section == JRPCD_SEC_LISTEN
                                   ? c.listens[l].kind
                                   : (jrpcd_listen_kind_t)JRPCD_LISTEN_KINDS);
      char got[512], want[512];
      int set = jrpcd_key_format(k, base, got, sizeof got);
      if (!def || k->makes_kind) {
        if (set && !k->makes_kind)
          fail_msg("%s: no default, yet %s", k->name, got);
        continue;
      }
      jrpcd_config_t blank;
      memset(&blank, 0, sizeof blank);
      assert_int_equal(jrpcd_key_parse(k, def, &blank, err, sizeof err), 0);
      jrpcd_key_format(k, &blank, want, sizeof want);
      jrpcd_key_free(k, &blank);
      if (!set || strcmp(got, want) != 0)
        fail_msg("%s on listener %zu: %s, default %s", k->name, l,
                 set ? got : "(unset)", want);
    }
  }
  jrpcd_config_free(&c);
}

/* The list type, for the keys to come (methods, peers): a row of this test
 * over a struct of its own. */
struct with_list {
  int other;
  char **words;
};

static int no_x(const char *word, char *why, size_t n) {
  if (strcmp(word, "x") != 0)
    return 0;
  snprintf(why, n, "\"%s\" is not allowed", word);
  return -1;
}

static void test_list_type(void **state) {
  (void)state;
  const jrpcd_key_t k = {
      .name = "methods",
      .section = JRPCD_SEC_LISTEN,
      .type = JRPCD_KEY_LIST,
      .min = 1,
      .max = 3,
      .offset = offsetof(struct with_list, words),
      .size = sizeof(char **),
      .what = "method names",
      .check = no_x,
  };
  struct with_list s = {0};
  char why[128], out[128];
  assert_int_equal(jrpcd_key_parse(&k, "  a.b   c.* d ", &s, why, sizeof why),
                   0);
  assert_string_equal(s.words[0], "a.b");
  assert_string_equal(s.words[1], "c.*");
  assert_string_equal(s.words[2], "d");
  assert_null(s.words[3]);
  assert_int_equal(jrpcd_key_format(&k, &s, out, sizeof out), 1);
  assert_string_equal(out, "a.b c.* d");
  /* A second value replaces the first. */
  assert_int_equal(jrpcd_key_parse(&k, "e", &s, why, sizeof why), 0);
  assert_string_equal(s.words[0], "e");
  assert_null(s.words[1]);

  assert_int_equal(jrpcd_key_parse(&k, "  ", &s, why, sizeof why), -1);
  assert_string_equal(why, "is empty (method names)");
  assert_int_equal(jrpcd_key_parse(&k, "a b c d", &s, why, sizeof why), -1);
  assert_string_equal(why, "\"a b c d\" has 4 words (1 .. 3)");
  assert_int_equal(jrpcd_key_parse(&k, "a x", &s, why, sizeof why), -1);
  assert_string_equal(why, "\"x\" is not allowed");
  /* A refused value leaves the field as it was. */
  assert_string_equal(s.words[0], "e");
  jrpcd_key_free(&k, &s);
  assert_null(s.words);
  assert_int_equal(jrpcd_key_format(&k, &s, out, sizeof out), 0);
}

static char *print_config(const jrpcd_config_t *c) {
  char *text = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&text, &n);
  assert_non_null(f);
  jrpcd_config_print(c, f);
  assert_int_equal(fclose(f), 0);
  return text;
}

/* jrpcd -T: every setting, defaults marked, only the keys of each
 * listener's kind; and what it prints reads back to the same settings. */
static void test_print(void **state) {
  (void)state;
  static const char text[] = "[server]\n"
                             "workers = 3\n"
                             "parser = JSMN\n"
                             "plugin_dir = /nonexistent\n"
                             "log_level = debug\n"
                             "strict_plugins = off\n"
                             "max_frame_bytes = 65\n"
                             "max_batch = 7\n"
                             "max_response_bytes = 4294967295\n"
                             "max_connections = 9\n"
                             "idle_timeout_ms = 0\n"
                             "shutdown_timeout_ms = 1\n"
                             "output_high_water = 4096\n"
                             "max_pending_calls = 2\n"
                             "max_pending_calls_total = 3\n"
                             "parser_auto_threshold = 300\n"
                             "early_reply_frames = 0\n"
                             "[listen u]\n"
                             "unix = /run/u.sock\n"
                             "mode = 600\n"
                             "owner = www-data\n"
                             "group = 33\n"
                             "framing = length\n"
                             "stats = no\n"
                             "[listen t]\n"
                             "tcp = [::1]:7400\n"
                             "stats = true\n"
                             "[listen d]\n"
                             "tcp = 127.0.0.1:1\n"
                             "[plugin p]\n"
                             "path = /dev/null\n"
                             "k = two words\n";
  jrpcd_config_t c, d;
  load_ok(&c, text);
  char *out = print_config(&c);
  static const char *const want[] = {
      "; the settings of t.conf in effect\n[server]\n",
      "\nworkers = 3\nparser = jsmn\nplugin_dir = /nonexistent\n",
      "\nparser_auto_threshold = 300\nearly_reply_frames = 0\n",
      "\n[listen u]\nunix = /run/u.sock\nmode = 0600\nowner = www-data\n"
      "group = 33\nframing = length\nstats = off\n",
      "\n[listen t]\ntcp = [::1]:7400\nframing = newline  ; default\n"
      "stats = listener\n",
      "\n[listen d]\ntcp = 127.0.0.1:1\nframing = newline  ; default\n"
      "stats = off  ; default\n",
      "\n[plugin p]\npath = /dev/null\ntimeout_ms = server  ; default\n"
      "; validate_params is not set\n"
      "k = two words\n",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!strstr(out, want[i]))
      fail_msg("-T lacks\n%s\nin\n%s", want[i], out);
  /* Every key of [server] is there, set or not. */
  size_t server_keys = 0, lines = 0;
  for (size_t i = 0; i < jrpcd_nkeys; i++)
    server_keys += jrpcd_keys[i].section == JRPCD_SEC_SERVER;
  const char *s = strstr(out, "[server]\n") + 9;
  for (; *s && *s != '\n'; s = strchr(s, '\n') + 1)
    lines++;
  assert_int_equal(lines, server_keys);

  /* It reads back as it was. */
  load_ok(&d, out);
  char *again = print_config(&d);
  const char *o = strchr(out, '\n'), *a = strchr(again, '\n');
  assert_string_equal(o, a); /* but the first line, which names the file */
  free(again);
  jrpcd_config_free(&d);
  free(out);
  jrpcd_config_free(&c);

  /* Defaults are marked, and unset keys are comments. */
  load_ok(&c, "[listen a]\nunix = /a\n");
  out = print_config(&c);
  if (!strstr(out, "\nmax_batch = 1000  ; default\n") ||
      !strstr(out, "\nparser_auto_threshold = measured  ; default\n") ||
      !strstr(out, "\nmode = 0660  ; default\n") ||
      !strstr(out, "\n; owner is not set\n") || strstr(out, "tcp ="))
    fail_msg("-T of a minimal config:\n%s", out);
  free(out);
  jrpcd_config_free(&c);
}

/* jrpcd --list-keys: a header, then one line of six fields per row. */
static void test_list_keys(void **state) {
  (void)state;
  char *text = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&text, &n);
  assert_non_null(f);
  jrpcd_keys_print(f);
  assert_int_equal(fclose(f), 0);
  assert_true(strncmp(text, "# section\t", 10) == 0);
  size_t rows = 0;
  for (char *line = strchr(text, '\n') + 1; *line;
       line = strchr(line, '\n') + 1) {
    size_t tabs = 0;
    for (char *s = line; *s != '\n'; s++)
      tabs += *s == '\t';
    if (tabs != 5)
      fail_msg("not six fields: %.*s", (int)(strchr(line, '\n') - line), line);
    rows++;
  }
  assert_int_equal(rows, jrpcd_nkeys);
  if (!strstr(text, "\nserver\tmax_batch\t-\t1 .. 1000000\t1000\t") ||
      !strstr(text, "\nlisten\tstats\tunix,tcp\toff|listener|full|no|yes|"
                    "false|true|on|0|1\tunix:listener,tcp:off\t") ||
      !strstr(text, "\nlisten\tmode\tunix\toctal 0 .. 0777\t0660\t") ||
      !strstr(text, "\nlisten\ttcp\ttcp\tADDRESS:PORT\t-\t") ||
      !strstr(text, "\nplugin\tpath\t-\ttext\t-\t"))
    fail_msg("--list-keys:\n%s", text);
  free(text);
}

/* Every key is a word of fuzz_config's dictionary, so that the fuzzer
 * reaches the new keys too. */
static void test_fuzz_dict(void **state) {
  (void)state;
  FILE *f = fopen(JRPC_TESTS_DIR "/fuzz/config.dict", "r");
  assert_non_null(f);
  char dict[8192];
  size_t n = fread(dict, 1, sizeof dict - 1, f);
  fclose(f);
  dict[n] = '\0';
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    char word[128];
    snprintf(word, sizeof word, "\n\"%s\"\n", jrpcd_keys[i].name);
    if (!strstr(dict, word))
      fail_msg("tests/fuzz/config.dict lacks \"%s\"", jrpcd_keys[i].name);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows),
      cmocka_unit_test(test_ranges_and_types),
      cmocka_unit_test(test_defaults_from_table),
      cmocka_unit_test(test_list_type),
      cmocka_unit_test(test_print),
      cmocka_unit_test(test_list_keys),
      cmocka_unit_test(test_fuzz_dict),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
