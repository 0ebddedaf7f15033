/* math.c - sample handler module: math.add, math.subtract, math.multiply,
 * math.divide on two numbers, given as [a, b] or {"a": a, "b": b}.
 *
 * Integers stay integers while the result fits in int64 (and, for divide,
 * is exact); anything else is computed in double. Bad params get -32602
 * with data naming the parameter. */
#include <jrpc/jrpc.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV } op_t;

static int bad_param(jrpc_call_t *c, const char *name, const char *why) {
  jrpc_error_begin(c, JRPC_INVALID_PARAMS, "Invalid params");
  jrpc_w_obj(c);
  jrpc_w_key(c, "param", 5);
  jrpc_w_str(c, name, strlen(name));
  jrpc_w_key(c, "reason", 6);
  jrpc_w_str(c, why, strlen(why));
  jrpc_w_obj_end(c);
  return JRPC_EFAIL;
}

/* Both operands in one call through the API (jrpc_params_num). */
static int operands(jrpc_call_t *c, jrpc_val_t params, jrpc_num_t ab[2]) {
  static const char *const names[2] = {"a", "b"};
  int rc = jrpc_params_num(c, params, names, 2, ab);
  if (rc == JRPC_EINVAL)
    return bad_param(c, "params", "expected exactly two numbers");
  if (rc)
    return bad_param(c, "params", "expected [a, b] or {\"a\": a, \"b\": b}");
  for (int k = 0; k < 2; k++) {
    switch (ab[k].status) {
    case 0:
      break;
    case JRPC_ENOENT:
      return bad_param(c, names[k], "missing");
    case JRPC_ETYPE:
      return bad_param(c, names[k], "not a number");
    default:
      return bad_param(c, names[k], "out of range");
    }
  }
  return 0;
}

static int calc(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  op_t op = (op_t)(intptr_t)udata;
  jrpc_num_t ab[2];
  if (operands(c, params, ab))
    return JRPC_EFAIL;
  const jrpc_num_t a = ab[0], b = ab[1];
  if (op == OP_DIV && b.d == 0)
    return bad_param(c, "b", "division by zero");
  if (a.is_int && b.is_int) {
    int64_t r;
    int overflow = 0;
    switch (op) {
    case OP_ADD:
      overflow = __builtin_add_overflow(a.i, b.i, &r);
      break;
    case OP_SUB:
      overflow = __builtin_sub_overflow(a.i, b.i, &r);
      break;
    case OP_MUL:
      overflow = __builtin_mul_overflow(a.i, b.i, &r);
      break;
    default:
      /* INT64_MIN / -1 overflows; inexact quotients go to double. */
      overflow = (a.i == INT64_MIN && b.i == -1) || a.i % b.i != 0;
      if (!overflow)
        r = a.i / b.i;
    }
    if (!overflow)
      return jrpc_w_i64(c, r);
  }
  double r;
  switch (op) {
  case OP_ADD:
    r = a.d + b.d;
    break;
  case OP_SUB:
    r = a.d - b.d;
    break;
  case OP_MUL:
    r = a.d * b.d;
    break;
  default:
    r = a.d / b.d;
  }
  if (!isfinite(r))
    return jrpc_error(c, JRPC_HANDLER_FAILED, "result out of range");
  return jrpc_w_f64(c, r);
}

/* What rpc.discover says of each (an OpenRPC Method Object without its
 * name): two numbers, by position or by name, give a number; B_SCHEMA is
 * b's (divide's refuses 0, which has no finite quotient). A result past a
 * double's range is error -32000. */
#define NUMBER "{\"type\":\"number\"}"
#define NONZERO "{\"type\":\"number\",\"not\":{\"const\":0}}"
#define AB_PARAMS(b_schema)                                                    \
  "\"paramStructure\":\"either\",\"params\":["                                 \
  "{\"name\":\"a\",\"required\":true,\"schema\":" NUMBER "},"                  \
  "{\"name\":\"b\",\"required\":true,\"schema\":" b_schema "}],"
#define EXAMPLE(a, b, r)                                                       \
  "\"examples\":[{\"name\":\"" #a ", " #b "\",\"params\":[{\"name\":\"a\","    \
  "\"value\":" #a "},{\"name\":\"b\",\"value\":" #b "}],\"result\":{\"name\":" \
  "\"result\",\"value\":" #r "}}]"
#define DESCRIBE_B(summary, b_schema, result, example)                         \
  "{\"summary\":\"" summary                                                    \
  "\"," AB_PARAMS(b_schema) "\"result\":{\"name\":\"" result                   \
                            "\",\"schema\":" NUMBER                            \
                            "},\"errors\":[{\"code\":-32602,"                  \
                            "\"message\":\"Invalid "                           \
                            "params\"},{\"code\":-32000,\"message\":\"result " \
                            "out of range\"}]," example "}"
#define DESCRIBE(summary, result, example)                                     \
  DESCRIBE_B(summary, NUMBER, result, example)

static int init(jrpc_reg_t *r, void **mod_data) {
  static const char *const no_keys[] = {NULL}; /* it reads none */
  if (jrpc_conf_keys(r, no_keys))
    return JRPC_EINVAL;
  static const struct {
    const char *name;
    op_t op;
    const char *desc;
  } ops[] = {
      {"math.add", OP_ADD, DESCRIBE("a + b", "sum", EXAMPLE(1, 2, 3))},
      {"math.subtract", OP_SUB,
       DESCRIBE("a - b", "difference", EXAMPLE(5, 2, 3))},
      {"math.multiply", OP_MUL,
       DESCRIBE("a * b", "product", EXAMPLE(3, 4, 12))},
      {"math.divide", OP_DIV,
       DESCRIBE_B("a / b (b = 0 is an error)", NONZERO, "quotient",
                  EXAMPLE(1, 4, 0.25))},
  };
  for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
    int rc = jrpc_register(r, ops[i].name, calc, (void *)(intptr_t)ops[i].op);
    if (!rc)
      rc = jrpc_describe(r, ops[i].name, ops[i].desc);
    if (rc)
      return rc;
  }
  return 0;
}

JRPC_MODULE("math", "1.0", init, NULL)
