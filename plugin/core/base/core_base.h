/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The base library's one public header (plugin/core/core.am): what the
 * other libraries and every program include of base.  Base is the bottom:
 * it includes no other library.  Each file's own header says what it owns;
 * outside base, include this one.
 */
#ifndef GPUMEM_CORE_BASE_H
#define GPUMEM_CORE_BASE_H
#include "json.h"       /* the JSON module on json-c: capped parse, build, write */
#include "diag.h"       /* diagnostics with file, line and column */
#include "fileio.h"     /* capped reads of a file nobody vouches for */
#include "units.h"      /* sizes with units, numbers and UTF-8 as text */
#include "trust.h"      /* what root does with what a user could touch */
#include "proc.h"       /* the one process runner; process facts */
#include "hash.h"       /* a small hash for names kept hidden */
#include "callerfile.h" /* files opened on the caller's word */
#include "cudadl.h"     /* libcuda loaded at run time */
#include "nvmldl.h"     /* libnvidia-ml loaded at run time */
#endif
