/* validate.h - params checked before the handler (validate_params).
 *
 * When a module loads, each method it described (jrpc_describe) has its
 * OpenRPC params compiled into a plan: the params' names, which are
 * required, the JSON types each schema allows, and the paramStructure.
 * The method's handler is then replaced in the registry by
 * jrpc__validated_call, which runs the plan's checks over the request's
 * params and calls the module's handler only when they pass; otherwise
 * the call is answered -32602 with data naming the param and the reason.
 * A description with "x-jrpcd-params": "any" (a method that takes
 * anything, as echo) gets no plan. Methods without a plan keep their own
 * handler in the registry, so they
 * run exactly the instructions they ran before.
 *
 * What is checked (nothing else of a schema is):
 *  - structure: paramStructure "by-name" wants an object, "by-position"
 *    an array, "either" (the default) takes both; absent params count as
 *    an empty one of either;
 *  - by position: at most as many elements as params are described, and
 *    at least up to the last required one;
 *  - by name: every required param present, and no name that is not
 *    described (OpenRPC lists a method's params completely, so an unknown
 *    name is most likely a typo of an optional one), unless the method
 *    object says "x-jrpcd-extra-params": true;
 *  - types: a param's schema "type", a name or an array of names of
 *    null, boolean, integer, number, string, array, object. An integer is
 *    a number without a fractional part ("2.0" and "1e3" are integers, as
 *    JSON Schema counts them). A schema without "type" takes anything. */
#ifndef JRPC_VALIDATE_H
#define JRPC_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "registry.h"

/* The JSON Schema types a param allows, as bits (0: any). */
enum {
  JRPC__VT_NULL = 1u << 0,
  JRPC__VT_BOOLEAN = 1u << 1,
  JRPC__VT_INTEGER = 1u << 2,
  JRPC__VT_NUMBER = 1u << 3,
  JRPC__VT_STRING = 1u << 4,
  JRPC__VT_ARRAY = 1u << 5,
  JRPC__VT_OBJECT = 1u << 6,
};

enum { JRPC__PS_EITHER = 0, JRPC__PS_BY_NAME, JRPC__PS_BY_POSITION };

#define JRPC__VPLAN_MAX_PARAMS 64 /* one bit each for "seen" */

typedef struct jrpc__vparam {
  const char *name; /* in the plan's own block, NUL-terminated */
  uint32_t name_n;
  uint8_t types; /* JRPC__VT_* bits; 0 = any */
  uint8_t required;
} jrpc__vparam_t;

typedef struct jrpc__vplan {
  jrpc_handler_fn fn; /* the module's own handler and its udata */
  void *udata;
  uint8_t structure;   /* JRPC__PS_* */
  uint8_t extra_names; /* unknown names pass */
  uint32_t n;          /* params described */
  uint32_t min_pos;    /* by position: the last required one's index + 1 */
  uint64_t required;   /* bit k: p[k] is required */
  jrpc__vparam_t p[];  /* then the names */
} jrpc__vplan_t;

/* Why params failed. */
typedef enum jrpc__vreason {
  JRPC__VR_OK = 0,
  JRPC__VR_STRUCTURE, /* an array where by-name is wanted, or the reverse */
  JRPC__VR_TOO_MANY,  /* more positional params than described */
  JRPC__VR_MISSING,   /* a required param is not there */
  JRPC__VR_UNKNOWN,   /* a name that is not described */
  JRPC__VR_TYPE,      /* a value of a type its schema does not allow */
} jrpc__vreason_t;

typedef struct jrpc__vfail {
  jrpc__vreason_t reason;
  const jrpc__vparam_t *param; /* MISSING, TYPE: the param */
  const char *name;            /* UNKNOWN: the raw key (not unescaped) */
  uint32_t name_n;
  uint32_t got_n;    /* TOO_MANY: how many elements came */
  uint8_t got_type;  /* TYPE, STRUCTURE: the value's JRPC__VT_* bit */
  uint8_t want_type; /* STRUCTURE: the JRPC__VT_* bit wanted */
} jrpc__vfail_t;

/* Compiles the description `desc` (checked JSON, an object with
 * "params") into *out. 0 with a plan; 0 with *out NULL when there is
 * nothing to check ("x-jrpcd-params": "any"; err empty) or the params
 * cannot be checked (a "$ref" descriptor: err says why); JRPC_EINVAL with
 * err set when the description is wrong for checking (a param without a
 * name, a name twice, an unknown type, a bad paramStructure, more than
 * JRPC__VPLAN_MAX_PARAMS params); JRPC_ENOMEM. fn and udata are left for
 * the caller. */
int jrpc__vplan_compile(const char *desc, jrpc__vplan_t **out, char *err,
                        size_t errlen);

/* The checks: 1 when params pass, else 0 with *why filled. */
int jrpc__vplan_check(const jrpc__vplan_t *plan, jrpc_val_t params,
                      jrpc__vfail_t *why);
/* The same through the views only, whatever the backend (for tests: both
 * paths give the same answers). */
int jrpc__vplan_check_views(const jrpc__vplan_t *plan, jrpc_val_t params,
                            jrpc__vfail_t *why);

/* The handler that stands in for a checked method; udata is its plan. */
int jrpc__validated_call(jrpc_call_t *c, jrpc_val_t params, void *udata);

/* Compiles a plan for every described method of `owner` in r and puts
 * jrpc__validated_call in front of its handler. 0, or JRPC_EINVAL /
 * JRPC_ENOMEM with "description of "NAME": why" in err. Methods whose
 * params cannot be checked are left alone; `skipped`, if given, is called
 * for each with the reason. */
int jrpc__validate_owner(
    jrpc__registry_t *r, const void *owner, char *err, size_t errlen,
    void (*skipped)(void *arg, const char *method, const char *why), void *arg);

void jrpc__vplan_free(jrpc__vplan_t *plan);

/* A JRPC__VT_* bit's JSON Schema name ("integer", ...). */
const char *jrpc__vtype_name(unsigned bit);

#endif
