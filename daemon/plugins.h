/* plugins.h - the generation's old name, kept only because daemon/worker.h
 * (the connection layer, restructured on another branch) still includes
 * it. Once worker.h includes "generation.h", this file goes. */
#ifndef JRPCD_PLUGINS_H
#define JRPCD_PLUGINS_H

#include "generation.h"

#endif
