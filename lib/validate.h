/* validate.h - params checked before the handler (validate_params).
 *
 * When a module loads, each method it described (jrpc_describe) has its
 * OpenRPC params compiled into a plan: the params' names, which are
 * required, the JSON types each schema allows, and the paramStructure.
 * The plan is hung on the method's registry entry (vplan), and dispatch
 * runs its checks over the request's params before it calls the module's
 * handler, which it calls only when they pass; otherwise the call is
 * answered -32602 with data naming the param and the reason. The checks
 * run in two steps: jrpc__vplan_fast for the shapes clients send, and,
 * when that cannot say yes, jrpc__validated_method: the full check, which
 * gives the answer and the reason.
 * A description with "x-jrpcd-params": "any" (a method that takes
 * anything, as echo) gets no plan. Methods without a plan cost dispatch
 * one test of their vplan field.
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
  /* For the fast path: the types as bits with 0 ("any") spelled out, and
   * the raw key's first eight bytes as a word with a mask of the bytes
   * that count. A name of up to seven bytes without '"' or '\\' is
   * followed in the word by the key's closing quote, so that the word
   * alone says the length too; a longer one matches when its length, its
   * masked word and the rest past eight bytes are equal. */
  uint8_t accept;
  uint64_t word, mask;
} jrpc__vparam_t;

/* A plan holds checks only, never a handler: what runs when params pass
 * is the fn of the registry slot the call was looked up in, so that a
 * per-connection view that denies the method (registry.h) is obeyed on
 * the full check's path as on the fast one. */
typedef struct jrpc__vplan {
  uint8_t structure;   /* JRPC__PS_* */
  uint8_t extra_names; /* unknown names pass */
  uint32_t n;          /* params described */
  uint32_t min_pos;    /* by position: the last required one's index + 1 */
  uint64_t required;   /* bit k: p[k] is required */
  /* The fast path's counts: an array of `size` elements, or an object
   * whose `size` keys name p[0], p[1], ... in order, has its structure and
   * count right when (uint32_t)(size - lo) <= span (lo = min_pos, span =
   * n - min_pos; lo = UINT32_MAX, span = 0 where the structure is
   * refused, which no size meets). */
  uint32_t pos_lo, pos_span, name_lo, name_span;
  /* Every name's word includes its closing quote and no param takes
   * integers but not all numbers: the fast path's usual loops. */
  uint8_t simple;
  jrpc__vparam_t p[]; /* then the names */
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
 * JRPC__VPLAN_MAX_PARAMS params); JRPC_ENOMEM. */
int jrpc__vplan_compile(const char *desc, jrpc__vplan_t **out, char *err,
                        size_t errlen);

/* The fast path: 1 when params are certain to pass (a token backend's
 * array or object whose keys follow the described order, every count and
 * type allowed), 0 when the full check must decide. Never 1 where
 * jrpc__vplan_check says 0. */
int jrpc__vplan_fast(const jrpc__vplan_t *plan, jrpc_val_t params);

/* The checks: 1 when params pass, else 0 with *why filled. */
int jrpc__vplan_check(const jrpc__vplan_t *plan, jrpc_val_t params,
                      jrpc__vfail_t *why);
/* The same through the views only, whatever the backend (for tests: both
 * paths give the same answers). */
int jrpc__vplan_check_views(const jrpc__vplan_t *plan, jrpc_val_t params,
                            jrpc__vfail_t *why);

/* The full check of m's plan, for a call the fast path did not pass:
 * calls m's own fn and udata (the slot as looked up, a view's included)
 * when params pass, else answers -32602. What dispatch calls, taking m so
 * that it need not keep the plan in a register past the fast path. */
int jrpc__validated_method(jrpc_call_t *c, jrpc_val_t params,
                           const jrpc__method_t *m);

/* Compiles a plan for every described method of `owner` in r and hangs
 * it on the method's entry (vplan; fn and udata stay as they are). 0, or
 * JRPC_EINVAL / JRPC_ENOMEM with "description of "NAME": why" in err. Methods
 * whose params cannot be checked are left alone; `skipped`, if given, is called
 * for each with the reason. */
int jrpc__validate_owner(
    jrpc__registry_t *r, const void *owner, char *err, size_t errlen,
    void (*skipped)(void *arg, const char *method, const char *why), void *arg);

void jrpc__vplan_free(jrpc__vplan_t *plan);

/* A JRPC__VT_* bit's JSON Schema name ("integer", ...). */
const char *jrpc__vtype_name(unsigned bit);

#endif
