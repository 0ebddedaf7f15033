/* callopts.c - the options that shape one call (-n, --id, --params,
 * output, -v, --dry-run, --no-check): read from jrpc's command line and
 * again from each line at the prompt, by the same table. */
#include "args.h"
#include "jrpc.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

const struct option jc_call_longs[] = {
    {"notify", no_argument, NULL, 'n'},
    {"id", required_argument, NULL, JC_OPT_ID},
    {"params", required_argument, NULL, JC_OPT_PARAMS},
    {"compact", no_argument, NULL, JC_OPT_COMPACT},
    {"raw", no_argument, NULL, JC_OPT_RAW},
    {"raw-output", no_argument, NULL, 'r'},
    {"verbose", no_argument, NULL, 'v'},
    {"dry-run", no_argument, NULL, JC_OPT_DRY_RUN},
    {"no-check", no_argument, NULL, JC_OPT_NO_CHECK},
    {NULL, 0, NULL, 0},
};

/* The value of --id or --params, checked; NULL after saying why. */
static json_t *option_json(int c, const char *arg) {
  if (c == JC_OPT_ID) {
    json_t *id = jc_word_value(arg);
    if (json_is_string(id) || json_is_number(id) || json_is_null(id))
      return id;
    json_decref(id);
    jc_warn("--id: \"%s\" is not a string, number or null", arg);
    return NULL;
  }
  json_error_t e;
  json_t *params = json_loads(arg, JSON_DECODE_ANY, &e);
  if (json_is_array(params) || json_is_object(params))
    return params;
  json_decref(params);
  if (params)
    jc_warn("--params: %s is neither an array nor an object", arg);
  else
    jc_warn("--params: not JSON (%s at column %d)", e.text, e.column);
  return NULL;
}

int jc_call_option(jc_opts *o, int c, const char *arg) {
  json_t *v;
  switch (c) {
  case 'n':
    o->notify = true;
    return 0;
  case JC_OPT_ID:
  case JC_OPT_PARAMS:
    if (!(v = option_json(c, arg)))
      return -1;
    json_t **slot = c == JC_OPT_ID ? &o->id : &o->params;
    json_decref(*slot);
    *slot = v;
    return 0;
  case JC_OPT_COMPACT:
    o->out.compact = true;
    return 0;
  case JC_OPT_RAW:
    o->out.raw = true;
    return 0;
  case 'r':
    o->out.raw_output = true;
    return 0;
  case 'v':
    o->verbose = true;
    return 0;
  case JC_OPT_DRY_RUN:
    o->dry_run = true;
    return 0;
  case JC_OPT_NO_CHECK:
    o->check = false;
    return 0;
  default:
    return 1;
  }
}

int jc_line_options(jc_opts *o, int argc, char **argv) {
  /* getopt takes argv[0] as the program's name: the words go after one,
   * which its messages then start with. */
  char **args = calloc((size_t)argc + 2, sizeof *args);
  int c, rc = 0;
  if (!args) {
    jc_warn("out of memory");
    return -1;
  }
  args[0] = "jrpc";
  memcpy(args + 1, argv, (size_t)argc * sizeof *args);
  optind = 0; /* a new argv: getopt starts over */
  while (rc == 0 && (c = getopt_long(argc + 1, args, "+" JC_CALL_SHORTS,
                                     jc_call_longs, NULL)) != -1)
    rc = c == '?' || jc_call_option(o, c, optarg) != 0 ? -1 : 0;
  free(args);
  return rc < 0 ? -1 : optind - 1;
}
