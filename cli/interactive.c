/* interactive.c - the prompt: "METHOD ARG..." lines with libedit's line
 * editing and history, Tab completing method names (and NAME= for the
 * named params of the method on the line) from rpc.discover. */
#include "args.h"
#include "discover.h"
#include "jrpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <editline/readline.h>

/* The document completion draws from (NULL: nothing to complete). */
static const json_t *completion_doc;

/* Candidates for the word being completed: one strdup'd match per call,
 * NULL when there are no more (readline's generator protocol). */
static const json_t *candidates_method; /* NULL: complete a method name */

static char *generate(const char *text, int state) {
  static size_t next;
  if (state == 0)
    next = 0;
  size_t len = strlen(text);
  const json_t *list = candidates_method
                           ? json_object_get(candidates_method, "params")
                           : json_object_get(completion_doc, "methods");
  while (next < json_array_size(list)) {
    const json_t *item = json_array_get(list, next++);
    const char *name = json_string_value(json_object_get(item, "name"));
    if (!name || strncmp(name, text, len))
      continue;
    if (!candidates_method)
      return strdup(name);
    char *word = malloc(strlen(name) + 2);
    if (word)
      sprintf(word, "%s=", name);
    return word;
  }
  return NULL;
}

static char **complete(const char *text, int start, int end) {
  (void)end;
  candidates_method = NULL;
  rl_attempted_completion_over = 1; /* never fall back to file names */
  if (!completion_doc)
    return NULL;
  /* The first word is the method; later words may be its named params. */
  char *head = strndup(rl_line_buffer, (size_t)start);
  char *method = head ? strtok(head, " \t") : NULL;
  if (method) {
    candidates_method = jc_find_method(completion_doc, method);
    if (!candidates_method) {
      free(head);
      return NULL;
    }
    rl_completion_append_character = '\0';
  } else {
    rl_completion_append_character = ' ';
  }
  char **matches = rl_completion_matches(text, generate);
  free(head);
  return matches;
}

/* $JRPC_HISTORY, else ~/.jrpc_history; NULL without a home. */
static char *history_file(void) {
  const char *env = getenv("JRPC_HISTORY"), *home = getenv("HOME");
  if (env)
    return *env ? strdup(env) : NULL;
  if (!home || !*home)
    return NULL;
  char *path = malloc(strlen(home) + sizeof "/.jrpc_history");
  if (path)
    sprintf(path, "%s/.jrpc_history", home);
  return path;
}

/* "help" and "?": what the prompt takes, instead of a method named so
 * (a method named help can still be called: "-- help" or "--id 1 help"). */
static void prompt_help(void) {
  fputs("[OPTION]... METHOD [ARG]...   call METHOD (ARGs as on the command "
        "line)\n"
        "  options: -n (notify), --id ID, --params JSON, --compact, --raw,\n"
        "           -r (raw output), -v (show the request), --dry-run, "
        "--no-check\n"
        "help, ?                       this list\n"
        "quit, exit, Ctrl-D            leave\n"
        "Tab completes method names, then NAME= for the method's params.\n",
        stdout);
}

/* One line's words: its options over a copy of O, then the call. */
static void run_line(const jc_opts *o, jc_conn *keep, const json_t *doc, int n,
                     char **w) {
  jc_opts line = *o;
  line.id = json_incref(o->id);
  line.params = json_incref(o->params);
  line.at_prompt = true;
  int first = jc_line_options(&line, n, w);
  if (first < 0)
    fputs("(help lists what the prompt takes)\n", stderr);
  else if (first == n)
    jc_warn("no METHOD after the options");
  else
    jc_command(&line, keep, doc, n - first, w + first);
  json_decref(line.id);
  json_decref(line.params);
}

int jc_interactive(const jc_opts *o) {
  /* HTTP keeps one connection alive across the lines; newline and length
   * framing end a notification by closing the writing half, so each line
   * has its own there. */
  jc_conn conn = {.fd = -1}, *keep = o->ep.framing == JC_HTTP ? &conn : NULL;
  json_t *doc = o->check ? jc_fetch_doc(o, keep, true) : NULL;
  completion_doc = doc;
  char *hist = history_file();
  rl_readline_name = "jrpc";
  rl_attempted_completion_function = complete;
  using_history();
  if (hist)
    read_history(hist);
  fprintf(stderr,
          "jrpc: %s, %s; METHOD ARG... per line, help lists "
          "more, Ctrl-D ends\n",
          jc_endpoint_desc(&o->ep),
          doc ? "Tab completes methods" : "no rpc.discover: no completion");
  char *line;
  while ((line = readline("jrpc> "))) {
    char **w, err[512];
    int n = jc_split_words(line, &w, err, sizeof err);
    if (n != 0 && strspn(line, " \t") != strlen(line))
      add_history(line);
    free(line);
    if (n < 0) {
      jc_warn("%s", err);
    } else if (n > 0 && (!strcmp(w[0], "quit") || !strcmp(w[0], "exit"))) {
      jc_free_words(w);
      break;
    } else if (n == 1 && (!strcmp(w[0], "help") || !strcmp(w[0], "?"))) {
      prompt_help();
    } else if (n > 0) {
      /* It said what went wrong, if anything. */
      run_line(o, keep, doc, n, w);
    }
    jc_free_words(w);
    fflush(stdout);
  }
  if (hist) {
    write_history(hist);
    free(hist);
  }
  completion_doc = NULL;
  jc_close(&conn);
  json_decref(doc);
  return JC_EXIT_OK; /* the session ended as asked */
}
