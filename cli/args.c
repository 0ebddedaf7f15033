/* args.c - command-line words to params. Without a description every word
 * is taken as the user wrote it; with one (from rpc.discover), the words
 * the user did not type as explicit JSON are converted to what the schema
 * asks for, and required params are checked before anything is sent. */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *jc_word_value(const char *word) {
  json_t *v = json_loads(word, JSON_DECODE_ANY, NULL);
  return v ? v : json_string(word);
}

/* Whether WORD reads as meant to be JSON: an object, an array, a quoted
 * string or a number. Such a word that does not parse is a mistake to
 * report, not a string to send. */
static bool looks_like_json(const char *word) {
  const char *p = word + (word[0] == '-' || word[0] == '+');
  if (word[0] == '{' || word[0] == '[' || word[0] == '"')
    return true;
  return isdigit((unsigned char)p[0]) ||
         (p[0] == '.' && isdigit((unsigned char)p[1]));
}

/* A positional word as a JSON value: the JSON it is, a string when it
 * does not look like JSON, else NULL with the reason in err. */
static json_t *positional_value(const char *word, int argno, char *err,
                                size_t errlen) {
  json_error_t e;
  json_t *v = json_loads(word, JSON_DECODE_ANY, &e);
  if (v || !looks_like_json(word))
    return v ? v : json_string(word);
  snprintf(err, errlen,
           "argument %d, %s, looks like JSON but is not (%s at column %d): "
           "fix it, or send it as a string with NAME=TEXT or as a JSON "
           "string ('\"...\"')",
           argno, word, e.text, e.column);
  return NULL;
}

/* @FILE's contents, for NAME=@FILE and NAME:=@FILE; NULL with the reason
 * in err. A file larger than a reply jrpc would read is refused. */
static char *read_param_file(const char *name, const char *file, char *err,
                             size_t errlen) {
  FILE *f = fopen(file, "rb");
  char *text = NULL;
  size_t len = 0, cap = 0;
  if (!f) {
    snprintf(err, errlen, "%s=@%s: %s", name, file, strerror(errno));
    return NULL;
  }
  for (;;) {
    if (cap - len < 4096) {
      char *more = cap > JC_PARAM_FILE_MAX ? NULL : realloc(text, cap + 65536);
      if (!more) {
        snprintf(err, errlen, "%s=@%s: larger than %u bytes", name, file,
                 JC_PARAM_FILE_MAX);
        break;
      }
      text = more;
      cap += 65536;
    }
    size_t got = fread(text + len, 1, cap - len - 1, f);
    len += got;
    if (got == 0) {
      if (ferror(f))
        snprintf(err, errlen, "%s=@%s: %s", name, file, strerror(errno));
      else if (memchr(text, '\0', len))
        snprintf(err, errlen, "%s=@%s: a NUL byte: not text", name, file);
      else {
        text[len] = '\0';
        fclose(f);
        return text;
      }
      break;
    }
  }
  fclose(f);
  free(text);
  return NULL;
}

/* "name=" or "name:=" at the start of WORD: the name's length, and in
 * *json whether the value is JSON. 0 when WORD is positional. */
static size_t named_prefix(const char *word, bool *json) {
  size_t i = 0;
  if (!isalpha((unsigned char)word[0]) && word[0] != '_')
    return 0;
  while (isalnum((unsigned char)word[i]) || word[i] == '_' || word[i] == '-' ||
         word[i] == '.')
    i++;
  if (word[i] == '=') {
    *json = false;
    return i;
  }
  if (word[i] == ':' && word[i + 1] == '=') {
    *json = true;
    return i;
  }
  return 0;
}

/* The OpenRPC param object named NAME, or at position POS when NAME is
 * NULL. */
static const json_t *param_desc(const json_t *desc, const char *name,
                                size_t pos) {
  const json_t *params = json_object_get(desc, "params"), *p;
  size_t i;
  if (!name)
    return json_array_get(params, pos);
  json_array_foreach(params, i, p) {
    const char *n = json_string_value(json_object_get(p, "name"));
    if (n && !strcmp(n, name))
      return p;
  }
  return NULL;
}

static bool type_matches(const char *type, const json_t *v) {
  if (!strcmp(type, "string"))
    return json_is_string(v);
  if (!strcmp(type, "number"))
    return json_is_number(v);
  if (!strcmp(type, "integer"))
    return json_is_integer(v);
  if (!strcmp(type, "boolean"))
    return json_is_boolean(v);
  if (!strcmp(type, "null"))
    return json_is_null(v);
  if (!strcmp(type, "array"))
    return json_is_array(v);
  if (!strcmp(type, "object"))
    return json_is_object(v);
  return true; /* a type we do not know: the server will judge */
}

/* TEXT read as TYPE, or NULL when it cannot be. */
static json_t *convert_text(const char *type, const char *text) {
  if (!strcmp(type, "string"))
    return json_string(text);
  json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
  if (v && type_matches(type, v))
    return v;
  json_decref(v);
  return NULL;
}

/* The schema's "type" as a list of names. */
static size_t schema_types(const json_t *schema, const char **types,
                           size_t max) {
  const json_t *t = json_object_get(schema, "type"), *item;
  size_t n = 0, i;
  if (json_is_string(t))
    types[n++] = json_string_value(t);
  json_array_foreach(t, i, item) {
    if (n < max && json_is_string(item))
      types[n++] = json_string_value(item);
  }
  return n;
}

/* VALUE (taken) checked against param P's schema; TEXT, when not NULL, is
 * the word it came from and may be read again as the schema's type. */
static json_t *fit(const json_t *p, const char *pname, json_t *value,
                   const char *text, char *err, size_t errlen) {
  const char *types[8];
  size_t n = schema_types(json_object_get(p, "schema"), types, 8);
  if (n == 0)
    return value;
  for (size_t i = 0; i < n; i++)
    if (type_matches(types[i], value))
      return value;
  for (size_t i = 0; text && i < n; i++) {
    json_t *v = convert_text(types[i], text);
    if (v) {
      json_decref(value);
      return v;
    }
  }
  char *shown = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);
  char want[96] = "";
  for (size_t i = 0; i < n; i++)
    snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s",
             i ? " or " : "", types[i]);
  snprintf(err, errlen, "param %s: expects %s, got %s", pname, want,
           shown ? shown : "?");
  free(shown);
  json_decref(value);
  return NULL;
}

/* The required params of DESC that PARAMS (array or object or NULL)
 * lacks: the first one's name into err. */
static int check_required(const char *method, const json_t *desc,
                          const json_t *params, char *err, size_t errlen) {
  const json_t *list = json_object_get(desc, "params"), *p;
  size_t i;
  json_array_foreach(list, i, p) {
    if (!json_is_true(json_object_get(p, "required")))
      continue;
    const char *name = json_string_value(json_object_get(p, "name"));
    bool present = json_is_object(params)
                       ? json_object_get(params, name ? name : "") != NULL
                       : i < json_array_size(params);
    if (!present) {
      snprintf(err, errlen, "%s: missing required param %s", method,
               name ? name : "?");
      return -1;
    }
  }
  return 0;
}

/* The names of DESC's params, for messages. */
static void param_names(const json_t *desc, char *out, size_t cap) {
  const json_t *p;
  size_t i;
  out[0] = '\0';
  json_array_foreach(json_object_get(desc, "params"), i, p) {
    const char *n = json_string_value(json_object_get(p, "name"));
    snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? ", " : "",
             n ? n : "?");
  }
}

/* One word added to params (an array or object, created on first use). */
static int add_word(const char *method, const char *word, int argno, bool files,
                    const json_t *desc, json_t **params, char *err,
                    size_t errlen) {
  bool json = false;
  size_t nlen = named_prefix(word, &json);
  if ((nlen && json_is_array(*params)) || (!nlen && json_is_object(*params))) {
    snprintf(err, errlen,
             "params are either all positional or all name=value, not both "
             "(at \"%s\")",
             word);
    return -1;
  }
  if (!*params)
    *params = nlen ? json_object() : json_array();
  char *name = nlen ? strndup(word, nlen) : NULL;
  const char *text = nlen ? word + nlen + (json ? 2 : 1) : word;
  char *file_text = NULL;
  json_t *value = NULL;
  if (nlen && text[0] == '@' && !files) {
    snprintf(err, errlen,
             "%s: NAME=@FILE is for the command line and the prompt: a "
             "batch line may not read local files into a request",
             name);
    goto out;
  }
  if (nlen && text[0] == '@') {
    file_text = read_param_file(name, text + 1, err, errlen);
    if (!file_text)
      goto out;
    text = file_text;
  }
  if (json) {
    json_error_t e;
    value = json_loads(text, JSON_DECODE_ANY, &e);
    if (!value)
      snprintf(err, errlen, "%s: the value after := is not JSON: %s", name,
               e.text);
  } else {
    value =
        nlen ? json_string(text) : positional_value(text, argno, err, errlen);
    if (!value && !*err)
      snprintf(err, errlen, "\"%s\" is not valid UTF-8", word);
  }
  size_t pos = json_array_size(*params);
  const json_t *p = desc && value ? param_desc(desc, name, pos) : NULL;
  if (desc && value && !p) {
    char names[256];
    param_names(desc, names, sizeof names);
    if (name)
      snprintf(err, errlen, "%s has no param %s (its params: %s)", method, name,
               *names ? names : "none");
    else
      snprintf(err, errlen, "%s takes at most %zu params (%s)", method, pos,
               names);
    json_decref(value);
    value = NULL;
  }
  if (p) {
    char pname[64];
    const char *n = json_string_value(json_object_get(p, "name"));
    snprintf(pname, sizeof pname, "%s", n ? n : "?");
    value = fit(p, pname, value, json ? NULL : text, err, errlen);
  }
out:;
  int rc = value ? 0 : -1;
  if (value && name)
    json_object_set_new(*params, name, value);
  else if (value)
    json_array_append_new(*params, value);
  free(name);
  free(file_text);
  return rc;
}

/* Positional words for a method that takes its params by name: paired
 * with the described names in order. */
static json_t *by_name(const json_t *desc, json_t *array) {
  json_t *obj = json_object(), *v;
  size_t i;
  json_array_foreach(array, i, v) {
    const json_t *p = json_array_get(json_object_get(desc, "params"), i);
    json_object_set(obj, json_string_value(json_object_get(p, "name")), v);
  }
  json_decref(array);
  return obj;
}

int jc_build_params(const char *method, int argc, char **argv, bool files,
                    const json_t *desc, json_t **params, char *err,
                    size_t errlen) {
  bool words_only = false;
  *params = NULL;
  err[0] = '\0';
  for (int i = 0; i < argc; i++) {
    /* getopt stops at METHOD: a long option after it would otherwise go
     * out as a param. "--" makes the words after it plain words. */
    if (!words_only && !strcmp(argv[i], "--")) {
      words_only = true;
      continue;
    }
    if (!words_only && !strncmp(argv[i], "--", 2) &&
        isalpha((unsigned char)argv[i][2])) {
      snprintf(err, errlen,
               "%s after the method %s: options go before it (or write -- "
               "first to send it as a word)",
               argv[i], method);
      json_decref(*params);
      *params = NULL;
      return -1;
    }
    if (add_word(method, argv[i], i + 1, files, desc, params, err, errlen) <
        0) {
      json_decref(*params);
      *params = NULL;
      return -1;
    }
  }
  if (!desc)
    return 0;
  const char *structure =
      json_string_value(json_object_get(desc, "paramStructure"));
  if (json_is_array(*params) && structure && !strcmp(structure, "by-name"))
    *params = by_name(desc, *params);
  if (check_required(method, desc, *params, err, errlen) < 0) {
    json_decref(*params);
    *params = NULL;
    return -1;
  }
  return 0;
}

void jc_free_words(char **argv) {
  if (!argv)
    return;
  for (char **w = argv; *w; w++)
    free(*w);
  free(argv);
}

int jc_split_words(const char *line, char ***argv, char *err, size_t errlen) {
  size_t cap = 8, n = 0, len = strlen(line);
  char **words = calloc(cap + 1, sizeof *words);
  char *cur = malloc(len + 1);
  const char *s = line;
  if (!words || !cur)
    goto oom;
  for (;;) {
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
      s++;
    if (!*s)
      break;
    size_t o = 0;
    while (*s && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') {
      char q = *s;
      if (q == '\'' || q == '"') {
        const char *start = s++;
        while (*s && *s != q) {
          if (q == '"' && *s == '\\' && (s[1] == '"' || s[1] == '\\'))
            s++;
          cur[o++] = *s++;
        }
        if (!*s) {
          snprintf(err, errlen, "unclosed %c at column %zu", q,
                   (size_t)(start - line) + 1);
          goto fail;
        }
        s++;
      } else if (q == '\\' && s[1]) {
        cur[o++] = s[1];
        s += 2;
      } else {
        cur[o++] = *s++;
      }
    }
    if (n == cap) {
      char **nw = realloc(words, (cap * 2 + 1) * sizeof *words);
      if (!nw)
        goto oom;
      words = nw;
      cap *= 2;
    }
    words[n] = strndup(cur, o);
    if (!words[n])
      goto oom;
    words[++n] = NULL;
  }
  free(cur);
  *argv = words;
  return (int)n;
oom:
  snprintf(err, errlen, "out of memory");
fail:
  free(cur);
  jc_free_words(words);
  *argv = NULL;
  return -1;
}
