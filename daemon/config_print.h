/* config_print.h - jrpcd's settings and keys as text, from the key table
 * (config_keys.h). */
#ifndef JRPCD_CONFIG_PRINT_H
#define JRPCD_CONFIG_PRINT_H

#include <stdio.h>

#include "config.h"

/* Every setting of C in effect, as a config file that marks the values at
 * their default (jrpcd -T). */
void jrpcd_config_print(const jrpcd_config_t *c, FILE *f);

/* One line per key: section, key, listener kinds, what it takes, default
 * and a description, separated by tabs (jrpcd --list-keys). */
void jrpcd_keys_print(FILE *f);

#endif
