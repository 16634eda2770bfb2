/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The record library's one public header (plugin/core/core.am): every
 * document format gpumem writes and reads back.  Record builds on policy
 * and base.  Each file's own header says what it owns; outside record,
 * include this one.
 */
#ifndef GPUMEM_CORE_RECORD_H
#define GPUMEM_CORE_RECORD_H
#include "report.h"     /* the report file: caps, reading, head line */
#include "acct.h"       /* the accounting record and its AdminComment codec */
#include "profile.h"    /* the GPU memory profile */
#include "profile_row.h" /* the profile row: named, versioned, read back compatibly */
#include "advsrc.h"     /* the advised source (job, rule, policy, standing) as fields */
#endif
